#!/usr/bin/env bash
# Runs the chosen bench/compare rows for two trees of wick on one GPU in one run: the current
# tree and an earlier one, each with its own library, taking turns with LibTorch's program in
# three rounds, so that "no row slower than before" is one table from one machine.
#   bash scripts/gpu/before-after.sh BEFORE_TAR FILTER...
# BEFORE_TAR: `git archive --format=tar.gz -o .deps/before.tar.gz COMMIT`, carried in .deps.
# FILTER: a row-name substring (or exact with a trailing $), as bench/compare/run.sh takes.
# Builds both libraries at once (the current one in build-gpu through build-and-test.sh's
# configure, with WICK_GPU_TARGETS="wick wick-launch"), then bench/compare's wick programs of
# each tree and LibTorch's once. Tables: $OUT/before_after.md (after, before, LibTorch).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
before_tar=${1:?usage: before-after.sh BEFORE_TAR FILTER...}; shift
OUT=${OUT:-/tmp/wick-out}; mkdir -p "$OUT"
here=$(pwd)
src=/tmp/wick-before
rm -rf "$src" && mkdir -p "$src" && tar -xzf "$before_tar" -C "$src"
# The current tree's library (and the dependencies unpacked) by build-and-test.sh, with no step.
WICK_GPU_TARGETS="wick wick-launch" bash scripts/gpu/build-and-test.sh >"$OUT/after_build.txt" 2>&1 &
after=$!
# The earlier tree: wait for the unpacked dependencies, then configure it as build-and-test does.
sleep 20
deps=/tmp/deps lib=/tmp/deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$lib/openblas-openmp:$lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake -S "$src" -B "$src/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DWICK_CUDA=ON \
  -DWICK_OPENBLAS="$lib/openblas-openmp/libopenblas.so" \
  -DWICK_CBLAS_INCLUDE="$deps/usr/include/x86_64-linux-gnu/openblas-openmp" \
  -DWICK_DNNL="$lib/libdnnl.so" -DWICK_DNNL_INCLUDE="$deps/usr/include" -DWICK_CPU_BLAS=dnnl \
  -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include" \
  -DGTest_DIR="$lib/cmake/GTest" -Dbenchmark_DIR="$lib/cmake/benchmark" \
  -DZLIB_INCLUDE_DIR="$deps/usr/include" -DZLIB_LIBRARY="$deps/lib/x86_64-linux-gnu/libz.so.1.2.13" \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" \
  -DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ -DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++ >"$OUT/before_configure.log" 2>&1
ninja -C "$src/build-gpu" -j8 wick >"$OUT/before_build.log" 2>&1
echo "earlier library: rc=$?"
wait $after
echo "current library: rc=$?"; tail -3 "$OUT/after_build.txt"
py=python3
prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)')
troot=$($py -c 'import torch; print(torch.__path__[0])')
abi=$($py -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
progs() {  # progs TREE BUILD TARGETS...: bench/compare's programs of TREE against BUILD's library
  local tree=$1 b=$2; shift 2
  cmake -S "$tree/bench/compare" -B "$b/compare" -G Ninja -DWICK_BUILD_DIR="$b" -DTORCH_ROOT="$troot" \
    -DTORCH_CXX11_ABI="$abi" -DCOMPARE_TORCH_CMAKE=ON -DCMAKE_PREFIX_PATH="$prefix" >>"$OUT/progs_configure.log" 2>&1
  ninja -C "$b/compare" -k 0 "$@" >>"$OUT/progs_build.log" 2>&1
}
progs "$here" "$here/build-gpu" wick_compare wick_train_step torch_compare torch_train_step &
progs "$src" "$src/build-gpu" wick_compare wick_train_step &
wait
echo "programs built"; grep -E -A5 'error|FAILED' "$OUT/progs_build.log" | head -30
: >"$OUT/after.txt"; : >"$OUT/before.txt"; : >"$OUT/torch.txt"
for f in "$@"; do
  for round in 1 2 3; do
    for p in compare train_step; do
      build-gpu/compare/wick_$p "$f" >>"$OUT/after.txt" 2>>"$OUT/after.err"
      "$src/build-gpu/compare/wick_$p" "$f" >>"$OUT/before.txt" 2>>"$OUT/before.err"
      build-gpu/compare/torch_$p "$f" >>"$OUT/torch.txt" 2>>"$OUT/torch.err"
    done
  done
  echo "rows $f done ($(date +%T))"
done
echo "## current tree"; $py bench/compare/table.py "$OUT/after.txt" "$OUT/torch.txt" | tee "$OUT/before_after.md"
echo "## earlier tree"; $py bench/compare/table.py "$OUT/before.txt" "$OUT/torch.txt" | tee -a "$OUT/before_after.md"
