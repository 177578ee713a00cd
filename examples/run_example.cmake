# Runs one example (ctest: example_<name>) and compares what it prints with <name>.expected
# when there is one.
#   cmake -DEXAMPLE=build/examples/devices [-DEXPECTED=examples/devices.expected] -P run_example.cmake
execute_process(COMMAND ${EXAMPLE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXAMPLE} failed (${rc}):\n${err}")
endif()
if(EXPECTED)
  file(READ ${EXPECTED} expected)
  if(NOT out STREQUAL expected)
    string(REPLACE "\n" "\n  " shown_expected "${expected}")
    string(REPLACE "\n" "\n  " shown_out "${out}")
    message(FATAL_ERROR "${EXAMPLE} printed:\n  ${shown_out}\nbut ${EXPECTED} says:\n  ${shown_expected}")
  endif()
endif()
