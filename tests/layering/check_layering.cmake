# Checks which layers of src/ include which (docs/design.md, "the layers"): the backends
# (src/cpu, src/cuda) depend on core only, and core does not depend on nn, optim or data.
#
#   cmake -DWICK_SRC=<path to src> -P check_layering.cmake
#
# Every #include line of the files under src/cpu, src/cuda and src/core is read, in any form
# ("nn/x.h", "../nn/x.h", "src/nn/x.h", a path relative to the including file), and so are the
# public headers of the layers above ("wick/nn.h", "wick/optim/...", "wick/wick.h", which
# includes them all). The check fails naming each offending file and include.
cmake_minimum_required(VERSION 3.25)

if(NOT WICK_SRC OR NOT IS_DIRECTORY "${WICK_SRC}")
  message(FATAL_ERROR "layering: pass -DWICK_SRC=<the src folder>, got '${WICK_SRC}'")
endif()
cmake_path(ABSOLUTE_PATH WICK_SRC NORMALIZE OUTPUT_VARIABLE src)
string(REGEX REPLACE "/$" "" src "${src}")

# The folders of src/ each layer may not include, and the public headers (a regex on the
# include path, as written under include/) that stand for them.
set(backend_banned nn autograd optim data)
set(backend_public "^wick/(nn|optim|data)(/|\\.h$)|^wick/(wick|autograd|optim|nn)\\.h$")
set(core_banned nn optim data)
set(core_public "^wick/(nn|optim|data)(/|\\.h$)|^wick/(wick|optim|nn)\\.h$")

set(layers cpu cuda core)
set(violations "")
set(checked 0)

foreach(layer IN LISTS layers)
  if(layer STREQUAL "core")
    set(banned ${core_banned})
    set(public "${core_public}")
  else()
    set(banned ${backend_banned})
    set(public "${backend_public}")
  endif()
  file(GLOB_RECURSE files LIST_DIRECTORIES false
    "${src}/${layer}/*.h" "${src}/${layer}/*.hpp" "${src}/${layer}/*.cpp" "${src}/${layer}/*.cc"
    "${src}/${layer}/*.cu" "${src}/${layer}/*.cuh" "${src}/${layer}/*.inl")
  foreach(file IN LISTS files)
    math(EXPR checked "${checked} + 1")
    cmake_path(GET file PARENT_PATH dir)
    file(RELATIVE_PATH shown "${src}/.." "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
        continue()
      endif()
      set(inc "${CMAKE_MATCH_1}")
      # The folder of src/ the include names: first from the file it reaches relative to the
      # including file, then from its text with leading ./ ../ src/ include/ taken off.
      set(folders "")
      cmake_path(APPEND dir "${inc}" OUTPUT_VARIABLE near)
      cmake_path(NORMAL_PATH near)
      if(EXISTS "${near}")
        cmake_path(IS_PREFIX src "${near}" NORMALIZE under_src)
        if(under_src)
          file(RELATIVE_PATH rel "${src}" "${near}")
          string(REGEX MATCH "^[^/]+" top "${rel}")
          list(APPEND folders "${top}")
        endif()
      endif()
      set(text "${inc}")
      cmake_path(NORMAL_PATH text)
      while(text MATCHES "^\\.\\.?/")
        string(REGEX REPLACE "^\\.\\.?/" "" text "${text}")
      endwhile()
      if(text MATCHES "^(src|include)/")
        string(REGEX REPLACE "^(src|include)/" "" text "${text}")
      endif()
      if(text MATCHES "/")
        string(REGEX MATCH "^[^/]+" top "${text}")
        list(APPEND folders "${top}")
      endif()
      set(bad "")
      foreach(f IN LISTS folders)
        if(f IN_LIST banned)
          set(bad "src/${f}")
        endif()
      endforeach()
      if(NOT bad AND text MATCHES "${public}")
        set(bad "${text}")
      endif()
      if(bad)
        list(APPEND violations "  ${shown} includes \"${inc}\" (src/${layer} may not depend on ${bad})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(LENGTH violations n)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "layering: ${n} include(s) across layers:\n${text}")
endif()
message(STATUS "layering: ${checked} files under src/cpu, src/cuda and src/core include no layer above them")
