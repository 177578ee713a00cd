# Run by ctest (install_find_package): install wick's build into a fresh prefix, then build and
# run the consumer project in this folder against it, the way a user would.
#   cmake -DWICK_BUILD_DIR=... -DWICK_WORK_DIR=... -DWICK_CONSUMER_DIR=... -P run_install_test.cmake
foreach(var WICK_BUILD_DIR WICK_WORK_DIR WICK_CONSUMER_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()
if(NOT WICK_GENERATOR)
  set(WICK_GENERATOR Ninja)
endif()

set(prefix ${WICK_WORK_DIR}/prefix)
set(consumer_build ${WICK_WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WICK_WORK_DIR})

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

step(${CMAKE_COMMAND} --install ${WICK_BUILD_DIR} --prefix ${prefix})
set(compiler_arg)
if(WICK_CXX_COMPILER)
  set(compiler_arg -DCMAKE_CXX_COMPILER=${WICK_CXX_COMPILER})
endif()
# Only the prefix is given: nothing of wick's source or build tree is visible to the consumer.
step(${CMAKE_COMMAND} -S ${WICK_CONSUMER_DIR} -B ${consumer_build} -G ${WICK_GENERATOR}
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} ${compiler_arg})
step(${CMAKE_COMMAND} --build ${consumer_build})
step(${consumer_build}/wick_consumer)
message(STATUS "the installed wick package builds and runs a consumer")
