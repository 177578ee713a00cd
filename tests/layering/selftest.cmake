# Shows that check_layering.cmake can fail: run with the real table (docs/design.md) on
# fixtures/bad it must fail and name every file there (each holds an include its row does not
# allow, in one spelling or another, or lies in a folder without a row), every row of the table
# having at least one such file; on fixtures/good it must pass.
#
#   cmake -DWICK_TABLE=<docs/design.md> -P selftest.cmake
cmake_minimum_required(VERSION 3.25)

set(here "${CMAKE_CURRENT_LIST_DIR}")
set(check "${here}/check_layering.cmake")
include("${here}/layering_table.cmake")
read_layering_table("${WICK_TABLE}")

execute_process(COMMAND "${CMAKE_COMMAND}" -DWICK_ROOT=${here}/fixtures/bad -DWICK_TABLE=${WICK_TABLE}
                        -P "${check}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "layering self-test: the check passed on fixtures/bad:\n${out}${err}")
endif()
file(GLOB_RECURSE bad_files RELATIVE "${here}/fixtures/bad" "${here}/fixtures/bad/*")
list(LENGTH bad_files n)
foreach(f IN LISTS bad_files)
  string(FIND "${err}" "  ${f} includes " at)
  string(FIND "${err}" "  ${f} is in " at_folder)
  if(at LESS 0 AND at_folder LESS 0)
    message(FATAL_ERROR "layering self-test: the check did not name ${f}:\n${err}")
  endif()
endforeach()
if(NOT err MATCHES "layering: ${n} violation\\(s\\) of the table")
  message(FATAL_ERROR "layering self-test: expected exactly ${n} violations:\n${err}")
endif()
# A fixture for every row: some folder of the row holds a bad file.
foreach(row IN LISTS row_lines)
  string(REPLACE "," ";" folders "${row}")
  set(covered FALSE)
  foreach(f IN LISTS bad_files)
    cmake_path(GET f PARENT_PATH folder)
    if(folder IN_LIST folders)
      set(covered TRUE)
    endif()
  endforeach()
  if(NOT covered)
    message(FATAL_ERROR "layering self-test: no bad fixture for the row of ${row}")
  endif()
endforeach()

execute_process(COMMAND "${CMAKE_COMMAND}" -DWICK_ROOT=${here}/fixtures/good -DWICK_TABLE=${WICK_TABLE}
                        -P "${check}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "layering self-test: the check failed on fixtures/good:\n${out}${err}")
endif()
list(LENGTH row_lines nrows)
message(STATUS "layering self-test: ${n} bad includes caught, every one of ${nrows} rows failing on a fixture; the good fixtures pass")
