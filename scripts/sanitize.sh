#!/usr/bin/env bash
# Builds the CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer into a second build
# folder (build-asan/) and runs them; any report fails the run (UBSan does not recover).
#   bash scripts/sanitize.sh              # build and run
#   bash scripts/sanitize.sh -R BadInput  # extra arguments go to ctest
# Environment: WICK_ASAN_BUILD_DIR (default build-asan), WICK_JOBS (2).
#
# Warnings are the normal build's business: GCC's -Wmaybe-uninitialized reports false positives
# in libstdc++ (std::regex, std::function) once the sanitizers instrument it, so they are not
# errors here. Only what the tests need is built: the library without CUDA, wick_tests, the fuzz corpus
# replays and the renamed LibTorch programs of tests/porting (no programs, benchmarks or MPI). Left out of the run:
#   - the tests of wick-train, wick-smi and wick-launch skip themselves (the programs are not
#     built here);
#   - install_find_package and the layering checks (they build or read sources, no wick code
#     runs) and the mpirun tests (MPI is not built here);
#   - BadInputSizes.ArangeAndLinspaceCounts and BadInputCatalogue.SizesThatWrap: they ask for
#     2^62-byte buffers on purpose to see OutOfMemoryError, and ASan's operator new ends the
#     process on such a request (allocator_may_return_null only covers malloc);
#   - dlpack_torch and safetensors_torch: they load wick into Python, which is not built with
#     the sanitizers, and their shim and program are not built here.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_ASAN_BUILD_DIR:-$root/build-asan}
jobs=${WICK_JOBS:-2}

bash "$root/scripts/setup.sh"

flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DWICK_TESTS_OPTIMIZE=-O0
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
  -DWICK_WERROR=OFF -DWICK_CUDA=OFF -DWICK_BUILD_TOOLS=OFF -DWICK_BUILD_BENCH=OFF -DWICK_EXAMPLES=OFF
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

start=$SECONDS
cmake "${args[@]}" >/dev/null
targets=(--target wick_tests)
for t in device_string idx safetensors load_state_dict view_shape checkpoint token_shard; do targets+=(--target "wick_replay_$t"); done
for f in "$root"/tests/porting/*.cpp; do targets+=(--target "port_$(basename "$f" .cpp)"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
echo "wick: sanitizer build in $((SECONDS - start)) s"

# detect_leaks: every test ends with nothing leaked. allocator_may_return_null: an allocation
# too large for memory returns null (wick raises OutOfMemoryError) instead of aborting.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

start=$SECONDS
status=0
excluded='install_find_package|layering|layering_selftest|dist_.*|BadInputSizes.ArangeAndLinspaceCounts|BadInputCatalogue.SizesThatWrap|dlpack_torch|safetensors_torch'
if (($# > 0)); then
  # A chosen set: ctest, a process for each test.
  (cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" -E "^($excluded)$" "$@") || status=$?
else
  # Everything: wick_tests runs as $jobs processes, each given every $jobs-th test suite (under
  # the sanitizers a process takes about a second to start, and there are over 1,600 tests),
  # then ctest runs the programs that are not wick_tests (their names have no dot). Suites, not
  # gtest's shard variables: tests that start wick_tests again would pass them on.
  excluded_tests=BadInputSizes.ArangeAndLinspaceCounts:BadInputCatalogue.SizesThatWrap
  mapfile -t suites < <(cd "$build/tests" && ./wick_tests --gtest_list_tests | sed -n 's/^\([^ ][^ ]*\.\)\( .*\)\{0,1\}$/\1*/p')
  pids=()
  for ((i = 0; i < jobs; i++)); do
    filter=""
    for ((j = i; j < ${#suites[@]}; j += jobs)); do filter+="${filter:+:}${suites[$j]}"; done
    (cd "$build/tests" && ./wick_tests --gtest_filter="$filter-$excluded_tests" >"$build/wick_tests.shard$i.log" 2>&1) &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      grep -E '^\[  PASSED  \] [0-9]+ tests' "$build/wick_tests.shard$i.log" | tail -1 | sed "s/^/wick_tests shard $i: /"
    else
      status=1
      echo "wick_tests shard $i FAILED; its log ends:" >&2
      grep -E '^\[  FAILED  \]|ERROR: (Address|Leak)Sanitizer|runtime error' "$build/wick_tests.shard$i.log" | head -40 >&2
      tail -60 "$build/wick_tests.shard$i.log" >&2
    fi
  done
  (cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" -E "\\.|^($excluded)$") || status=$?
fi
echo "wick: sanitizer tests ran in $((SECONDS - start)) s"
if ((status != 0)); then
  echo "wick: sanitizer tests FAILED" >&2
fi
exit "$status"
