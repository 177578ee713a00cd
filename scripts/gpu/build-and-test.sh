#!/usr/bin/env bash
# Runs on the GPU machine, in the copy of the repository: unpacks .deps/debs (see
# fetch-deps.sh) into /tmp/deps, configures and builds wick for sm_90 with Ninja, runs ctest,
# and copies the logs to $OUT.
#   bash scripts/gpu/build-and-test.sh [ctest -R regex] [--sanitize] [--bench filter] [--info]
#     --info       print what the machine has (cmake, BLAS/GTest libraries, GPUs, sanitizer)
#     --sanitize   also run compute-sanitizer memcheck over the CUDA tests, caching off
#     --bench F    also run wick_cuda_runtime_bench with --benchmark_filter=F
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/wick-out}
mkdir -p "$OUT"
filter="" sanitize=0 bench="" info=0
while (($#)); do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --bench) bench="$2"; shift ;;
    --info) info=1 ;;
    *) filter="$1" ;;
  esac
  shift
done

if ((info)); then
  echo "== machine"
  cmake --version | head -1; ninja --version; g++ --version | head -1; nvcc --version | tail -1
  ls /usr/lib/x86_64-linux-gnu | grep -i -E 'gtest|blas|libz\.|gomp|gfortran' || true
  nvidia-smi -L; which compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer
  nproc; free -g | head -2
fi

# With .deps/head.tar (git archive HEAD, made by fetch-deps.sh --snapshot), build the committed
# tree rather than the working copy, in which others' files may be half-written.
if [[ -f .deps/head.tar ]]; then
  repo=$PWD
  rm -rf /tmp/wick-src && mkdir -p /tmp/wick-src && tar -xf .deps/head.tar -C /tmp/wick-src
  cp -r .deps /tmp/wick-src/ && cd /tmp/wick-src || exit 1
  grep -q cuda_runtime_bench bench/CMakeLists.txt ||
    printf 'if(WICK_HAVE_CUDA)\n  wick_bench(wick_cuda_runtime_bench cuda_runtime_bench.cpp)\nendif()\n' >>bench/CMakeLists.txt
  echo "== building the committed tree ($(cat .deps/head.txt 2>/dev/null)) in $PWD"
fi

# With .deps/runtime.tar (fetch-deps.sh --runtime), the runtime's own files are taken as committed
# and the rest of the working copy as it is: files of src/cuda that are not committed yet (the
# next issue's, possibly half-written) stay out of the build.
if [[ ! -f .deps/head.tar && -f .deps/runtime.tar ]]; then
  rm -rf src/cuda src/no_cuda && tar -xf .deps/runtime.tar
  echo "== runtime files as committed in $(cat .deps/runtime.txt 2>/dev/null)"
fi

deps=/tmp/deps
rm -rf "$deps" && mkdir -p "$deps"
for f in .deps/debs/*.deb; do
  case "$f" in
    *libgomp1*) dpkg -x "$f" "$deps/fallback" ;;  # only if the machine has none (below)
    *) dpkg -x "$f" "$deps" ;;
  esac
done
lib=$deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$lib/openblas-openmp:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p | grep -q 'libgomp.so.1 '; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$deps/fallback/usr/lib/x86_64-linux-gnu"
fi
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$deps/lib/x86_64-linux-gnu"  # zlib, when the machine lacks it
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

build=build-gpu
start=$(date +%s)
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_CUDA=ON \
  -DWICK_OPENBLAS="$lib/openblas-openmp/libopenblas.so" \
  -DWICK_CBLAS_INCLUDE="$deps/usr/include/x86_64-linux-gnu/openblas-openmp" \
  -DGTest_DIR="$lib/cmake/GTest" -Dbenchmark_DIR="$lib/cmake/benchmark" \
  -DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$deps/lib/x86_64-linux-gnu/libz.so.1.2.13" \
  -DCMAKE_CUDA_COMPILER="$nvcc" >"$OUT/configure.log" 2>&1
rc=$?
tail -5 "$OUT/configure.log"
((rc == 0)) || { cat "$OUT/configure.log"; exit $rc; }
ninja -C $build -j16 -k 0 >"$OUT/build.log" 2>&1
rc=$?
echo "== build: rc=$rc in $(( $(date +%s) - start )) s"
if ((rc != 0)); then
  grep -E -A5 'error|FAILED' "$OUT/build.log" | head -60
  [[ -f $build/libwick.so ]] || exit $rc
  # Another part of the tree is half-written: build the runtime's tests on their own.
  echo "== fallback: tests/cuda alone"
  g++ -std=c++20 -O2 -Iinclude -Isrc -I"$deps/usr/include" tests/cuda/*_test.cpp -o $build/wick_cuda_tests \
    -L$build -lwick -Wl,-rpath,"$PWD/$build" "$lib/libgtest_main.a" "$lib/libgtest.a" -lpthread -ldl || exit 1
  $build/wick_cuda_tests ${filter:+--gtest_filter="*$filter*"} >"$OUT/gtest_cuda.log" 2>&1
  rc=$?
  grep -E '^\[  (PASSED|FAILED|  SKIPPED) |tests ran' "$OUT/gtest_cuda.log" | head -40
  tests_bin=$build/wick_cuda_tests
else
  tests_bin=$build/tests/wick_tests
fi

# The runtime's tests (Cuda*) measure free memory and time streams: one at a time. The rest in parallel.
if [[ $tests_bin == $build/tests/wick_tests ]]; then
echo "== ctest ${filter:+-R $filter}"
(cd $build && ctest --output-on-failure -j8 --timeout 150 -E '^Cuda' ${filter:+-R "$filter"}) >"$OUT/ctest.log" 2>&1
rc=$?
(cd $build && ctest --output-on-failure -j1 --timeout 150 -R "^Cuda${filter:+.*$filter}") >"$OUT/ctest_cuda.log" 2>&1
rc2=$?
((rc == 0)) && rc=$rc2
for f in "$OUT/ctest.log" "$OUT/ctest_cuda.log"; do
  echo "-- $(basename "$f")"
  grep -E '^[0-9]+% tests passed' "$f"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)' "$f" | head -40
done
fi

if ((sanitize)); then
  echo "== compute-sanitizer memcheck (WICK_NO_CUDA_MEMORY_CACHING=1)"
  # Left out: child-process tests (Subprocess*: one makes an illegal access on purpose), the
  # out-of-memory test (its failing cudaMalloc is an API error to memcheck, on purpose), and the
  # >2^31-element test (too slow instrumented).
  WICK_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --target-processes application-only \
    $tests_bin --gtest_filter='Cuda*:-*Subprocess*:CudaKernels.OverTwoBillionElements:CudaAllocator.OutOfMemory*' \
    >"$OUT/sanitizer.log" 2>&1
  echo "sanitizer rc=$?"
  grep -E 'ERROR SUMMARY|PASSED|FAILED|tests ran' "$OUT/sanitizer.log" | tail -8
fi

if [[ -n "$bench" ]]; then
  echo "== wick_cuda_runtime_bench $bench"
  [[ -x $build/bin/wick_cuda_runtime_bench ]] && timeout 150 $build/bin/wick_cuda_runtime_bench --benchmark_filter="$bench" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>&1 | tee "$OUT/bench.log" | grep -E 'median|Benchmark|---' | head -40
fi
exit $rc
