# Run by `cmake --install` (install(SCRIPT) in CMakeLists.txt): writes wick.pc with the paths of
# the prefix being installed to (CMAKE_INSTALL_PREFIX here is --prefix when one is given), from
# WICK_PC_IN, the file configured at build time with everything else filled in.
set(WICK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(dir INCLUDEDIR LIBDIR)
  if(IS_ABSOLUTE "${WICK_PC_${dir}_REL}")
    set(WICK_PC_${dir} "${WICK_PC_${dir}_REL}")
  else()
    set(WICK_PC_${dir} "\${prefix}/${WICK_PC_${dir}_REL}")
  endif()
endforeach()
set(libdir "${WICK_PC_LIBDIR_REL}")
if(NOT IS_ABSOLUTE "${libdir}")
  set(libdir "${CMAKE_INSTALL_PREFIX}/${libdir}")
endif()
get_filename_component(out "${WICK_PC_IN}" DIRECTORY)
configure_file("${WICK_PC_IN}" "${out}/wick.pc" @ONLY)
file(INSTALL "${out}/wick.pc" DESTINATION "${libdir}/pkgconfig")
