# Shows that check_layering.cmake can fail: on fixtures/bad it must fail and name every file
# there (each includes a layer above its own in another form), on fixtures/good it must pass.
#
#   cmake -P selftest.cmake
cmake_minimum_required(VERSION 3.25)

set(here "${CMAKE_CURRENT_LIST_DIR}")
set(check "${here}/check_layering.cmake")

execute_process(COMMAND "${CMAKE_COMMAND}" -DWICK_SRC=${here}/fixtures/bad/src -P "${check}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "layering self-test: the check passed on fixtures/bad:\n${out}${err}")
endif()
file(GLOB_RECURSE bad_files RELATIVE "${here}/fixtures/bad" "${here}/fixtures/bad/src/cpu/*"
     "${here}/fixtures/bad/src/cuda/*" "${here}/fixtures/bad/src/core/*")
list(LENGTH bad_files n)
if(n LESS 11)
  message(FATAL_ERROR "layering self-test: expected 11 fixtures under fixtures/bad, found ${n}")
endif()
foreach(f IN LISTS bad_files)
  string(FIND "${err}" "${f} includes " at)
  if(at LESS 0)
    message(FATAL_ERROR "layering self-test: the check did not name ${f}:\n${err}")
  endif()
endforeach()
if(NOT err MATCHES "layering: ${n} include\\(s\\) across layers")
  message(FATAL_ERROR "layering self-test: expected exactly ${n} violations:\n${err}")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" -DWICK_SRC=${here}/fixtures/good/src -P "${check}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layering self-test: the check failed on fixtures/good:\n${out}${err}")
endif()
message(STATUS "layering self-test: ${n} bad includes caught, the good fixtures pass")
