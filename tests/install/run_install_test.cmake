# Run by ctest (install_find_package): installs wick's build (nothing is rebuilt) into a fresh
# prefix, checks the installed tree (versioned library, version.h, wick.pc, CMake package),
# then builds the consumer program in this folder against it the two ways a user would and runs
# it: with find_package(wick) and with pkg-config and a plain compiler call. Last, the package's
# components: asking for one the build lacks must fail and name it.
#   cmake -DWICK_BUILD_DIR=... -DWICK_WORK_DIR=... -DWICK_CONSUMER_DIR=... -DWICK_VERSION=0.1.0
#         -DWICK_HAVE=,CUDA,NCCL,MPI -P run_install_test.cmake     # the components the build has
cmake_minimum_required(VERSION 3.25)
foreach(var WICK_BUILD_DIR WICK_WORK_DIR WICK_CONSUMER_DIR WICK_VERSION)
  if(NOT ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()
string(REPLACE "," ";" WICK_HAVE "${WICK_HAVE}")
list(REMOVE_ITEM WICK_HAVE "")
if(NOT WICK_GENERATOR)
  set(WICK_GENERATOR Ninja)
endif()
if(NOT WICK_CXX_COMPILER)
  set(WICK_CXX_COMPILER c++)
endif()

set(prefix ${WICK_WORK_DIR}/prefix)
set(consumer_build ${WICK_WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WICK_WORK_DIR})
file(MAKE_DIRECTORY ${WICK_WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc WORKING_DIRECTORY ${WICK_WORK_DIR})
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

step(${CMAKE_COMMAND} --install ${WICK_BUILD_DIR} --prefix ${prefix})
execute_process(COMMAND du -sh ${prefix} OUTPUT_VARIABLE size OUTPUT_STRIP_TRAILING_WHITESPACE)
message(STATUS "installed size: ${size}")

# ---- the installed tree. The library's folder is lib, or lib/<multiarch> when the prefix is /usr.
file(GLOB libwick_so ${prefix}/lib*/libwick.so ${prefix}/lib*/*/libwick.so)
if(NOT libwick_so)
  message(FATAL_ERROR "no libwick.so under ${prefix}")
endif()
get_filename_component(libdir ${libwick_so} DIRECTORY)
string(REGEX MATCH "^[0-9]+" major ${WICK_VERSION})
foreach(link "libwick.so:libwick.so.${major}" "libwick.so.${major}:libwick.so.${WICK_VERSION}")
  string(REPLACE ":" ";" pair ${link})
  list(GET pair 0 name)
  list(GET pair 1 target)
  if(NOT IS_SYMLINK ${libdir}/${name})
    message(FATAL_ERROR "${libdir}/${name} is not a symbolic link")
  endif()
  file(READ_SYMLINK ${libdir}/${name} got)
  if(NOT got STREQUAL target)
    message(FATAL_ERROR "${libdir}/${name} points to ${got}, expected ${target}")
  endif()
endforeach()
if(NOT EXISTS ${libdir}/libwick.so.${WICK_VERSION} OR IS_SYMLINK ${libdir}/libwick.so.${WICK_VERSION})
  message(FATAL_ERROR "${libdir}/libwick.so.${WICK_VERSION} is missing or not the library itself")
endif()
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND ${READELF} -d ${libdir}/libwick.so.${WICK_VERSION} OUTPUT_VARIABLE dyn)
  if(NOT dyn MATCHES "Library soname: \\[libwick\\.so\\.${major}\\]")
    message(FATAL_ERROR "libwick.so.${WICK_VERSION} has no SONAME libwick.so.${major}:\n${dyn}")
  endif()
endif()
foreach(f include/wick/wick.h include/wick/version.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "${prefix}/${f} was not installed")
  endif()
endforeach()
file(READ ${prefix}/include/wick/version.h version_h)
if(NOT version_h MATCHES "#define WICK_VERSION \"${WICK_VERSION}\"")
  message(FATAL_ERROR "version.h does not say ${WICK_VERSION}:\n${version_h}")
endif()

# ---- CMake: find_package(wick 0.1 REQUIRED COMPONENTS <what the build has>)
# Only the prefix is given: nothing of wick's source or build tree is visible to the consumer.
# (not through step(): its ${ARGN} would split the list of components)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WICK_CONSUMER_DIR} -B ${consumer_build} -G ${WICK_GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${WICK_CXX_COMPILER}
    "-DWICK_COMPONENTS=${WICK_HAVE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
foreach(c IN LISTS WICK_HAVE)
  if(NOT out MATCHES "wick_${c}_FOUND=TRUE")
    message(FATAL_ERROR "find_package(wick COMPONENTS ${WICK_HAVE}) did not find ${c} (${rc})")
  endif()
endforeach()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed (${rc})")
endif()
step(${CMAKE_COMMAND} --build ${consumer_build})
step(${consumer_build}/wick_consumer)
list(JOIN WICK_HAVE " " have)
message(STATUS "find_package(wick COMPONENTS ${have}): the consumer builds and runs")

# ---- pkg-config and a plain compiler call
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(WARNING "no pkg-config: the pkg-config half of the test is skipped (scripts/setup.sh installs it)")
else()
  set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
  foreach(what cflags libs modversion)
    execute_process(COMMAND ${PKG_CONFIG} --${what} wick RESULT_VARIABLE rc OUTPUT_VARIABLE pc_${what}
      ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config --${what} wick failed: ${err}")
    endif()
  endforeach()
  message(STATUS "pkg-config: --cflags '${pc_cflags}' --libs '${pc_libs}' --modversion '${pc_modversion}'")
  string(FIND "${pc_cflags}" "-I${prefix}/include" at_include)
  string(FIND "${pc_libs}" "-L${libdir} -lwick" at_lib)
  if(at_include EQUAL -1 OR at_lib EQUAL -1)
    message(FATAL_ERROR "wick.pc does not point into ${prefix}")
  endif()
  separate_arguments(cflags UNIX_COMMAND "${pc_cflags}")
  separate_arguments(libs UNIX_COMMAND "${pc_libs}")
  step(${WICK_CXX_COMPILER} -std=c++20 -O1 ${cflags} "-DWICK_PACKAGE_VERSION=\"${pc_modversion}\""
       ${WICK_CONSUMER_DIR}/main.cpp -o ${WICK_WORK_DIR}/wick_consumer_pc ${libs} -Wl,-rpath,${libdir})
  step(${WICK_WORK_DIR}/wick_consumer_pc)
  message(STATUS "pkg-config: the consumer builds and runs")
endif()

# ---- components. A component this build lacks is asked for as it is; when the build has them
# all, the installed wickConfig.cmake is edited to say NCCL is missing, as a build without NCCL
# writes it.
set(missing "")
foreach(c CUDA NCCL MPI CUDNN)
  if(NOT c IN_LIST WICK_HAVE)
    set(missing ${c})
    break()
  endif()
endforeach()
set(config ${libdir}/cmake/wick/wickConfig.cmake)
if(NOT missing)
  set(missing NCCL)
  file(READ ${config} text)
  string(REPLACE "set(wick_HAVE_NCCL ON)" "set(wick_HAVE_NCCL OFF)" edited "${text}")
  if(edited STREQUAL text)
    message(FATAL_ERROR "${config} does not record NCCL as set(wick_HAVE_NCCL ON)")
  endif()
  file(WRITE ${config} "${edited}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WICK_CONSUMER_DIR} -B ${WICK_WORK_DIR}/consumer_missing
    -G ${WICK_GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${WICK_CXX_COMPILER}
    -DWICK_COMPONENTS=${missing}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")  # CMake wraps the message's lines
if(rc EQUAL 0 OR NOT flat MATCHES "built without the component\\(s\\) ${missing} ")
  message(FATAL_ERROR "find_package(wick REQUIRED COMPONENTS ${missing}) should fail naming ${missing}; "
                      "it returned ${rc}:\n${out}\n${err}")
endif()
message(STATUS "find_package(wick REQUIRED COMPONENTS ${missing}) fails as it should")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WICK_CONSUMER_DIR} -B ${WICK_WORK_DIR}/consumer_optional
    -G ${WICK_GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${WICK_CXX_COMPILER}
    -DWICK_OPTIONAL_COMPONENTS=${missing}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "wick_${missing}_FOUND=FALSE")
  message(FATAL_ERROR "find_package(wick OPTIONAL_COMPONENTS ${missing}) should succeed with "
                      "wick_${missing}_FOUND FALSE; it returned ${rc}:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WICK_CONSUMER_DIR} -B ${WICK_WORK_DIR}/consumer_unknown
    -G ${WICK_GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${WICK_CXX_COMPILER}
    -DWICK_COMPONENTS=ROCm
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")
if(rc EQUAL 0 OR NOT flat MATCHES "wick has no component 'ROCm'")
  message(FATAL_ERROR "find_package(wick COMPONENTS ROCm) should fail; it returned ${rc}:\n${out}\n${err}")
endif()
message(STATUS "the installed wick package builds and runs a consumer both ways; its components check")
