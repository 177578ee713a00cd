#!/usr/bin/env bash
# Builds and runs the LibTorch conformance suite against a finished wick build (with CUDA, on
# the GPU machine, after scripts/gpu/build-and-test.sh has made it):
#   bash tests/conformance/run.sh BUILD_DIR [gtest filter]
# Logs land in $OUT (default /tmp/wick-conformance); the last lines are GoogleTest's summary.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
wick_build=$(cd "${1:?usage: run.sh BUILD_DIR [gtest filter]}" && pwd)
filter=${2:-*}
out=${OUT:-/tmp/wick-conformance}
mkdir -p "$out"
build=$wick_build/conformance
py=${PYTHON:-python3}
prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)') || { echo "no PyTorch in $py"; exit 1; }

# The dependencies scripts/gpu/build-and-test.sh unpacked (GoogleTest, OpenBLAS), when present.
deps=/tmp/deps/usr/lib/x86_64-linux-gnu
gtest=()
[[ -d $deps/cmake/GTest ]] && gtest=(-DGTest_DIR="$deps/cmake/GTest")
[[ -d $deps ]] && export LD_LIBRARY_PATH="$deps/openblas-openmp:$deps:/tmp/deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

cmake -S "$here" -B "$build" -G Ninja -DWICK_BUILD_DIR="$wick_build" -DCMAKE_PREFIX_PATH="$prefix" "${gtest[@]}" \
  >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
ninja -C "$build" >"$out/build.log" 2>&1 || { grep -E -A8 'error|FAILED' "$out/build.log" | head -80; exit 1; }
"$build/wick_conformance" --gtest_filter="$filter" >"$out/conformance.log" 2>&1
rc=$?
grep -E '^\[  FAILED  \]|Failure' "$out/conformance.log" | head -40
grep -B2 -A30 'Failure' "$out/conformance.log" | head -120
tail -4 "$out/conformance.log"
echo "wick_conformance rc=$rc"
exit $rc
