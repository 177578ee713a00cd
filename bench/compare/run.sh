#!/usr/bin/env bash
# Builds wick's benchmark program and its LibTorch twin (CMakeLists.txt here), runs both on
# the GPU, and prints one table: workload, wick, LibTorch, ratio, target (docs/design.md,
# "Performance targets").
#   bash bench/compare/run.sh BUILD_DIR [filter]
# BUILD_DIR is a finished wick build with CUDA (holding libwick.so); filter picks workloads
# by substring. Raw lines and the table also land in $OUT (default /tmp/wick-compare).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
wick_build=$(cd "${1:?usage: run.sh BUILD_DIR [filter]}" && pwd)
filter=${2:-}
out=${OUT:-/tmp/wick-compare}
mkdir -p "$out"
build=$wick_build/compare
py=${PYTHON:-python3}

prefix=$($py -c 'import torch; print(torch.utils.cmake_prefix_path)') || { echo "no PyTorch in $py"; exit 1; }
troot=$($py -c 'import torch; print(torch.__path__[0])')
abi=$($py -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
common=(-S "$here" -B "$build" -G Ninja -DWICK_BUILD_DIR="$wick_build" -DTORCH_ROOT="$troot" -DTORCH_CXX11_ABI="$abi")
if ! cmake "${common[@]}" -DCOMPARE_TORCH_CMAKE=ON -DCMAKE_PREFIX_PATH="$prefix" >"$out/compare_configure.log" 2>&1; then
  echo "find_package(Torch) failed (see compare_configure.log); using torch's folders directly"
  rm -rf "$build"
  cmake "${common[@]}" -DCOMPARE_TORCH_CMAKE=OFF >>"$out/compare_configure.log" 2>&1 || {
    tail -30 "$out/compare_configure.log"; exit 1; }
fi
# -k 0: a program that fails to build leaves the others to run (its rows are then missing).
ninja -C "$build" -k 0 >"$out/compare_build.log" 2>&1 || grep -E -A8 'error|FAILED' "$out/compare_build.log" | head -60

# One program at a time on the GPU; LibTorch's libraries are found through its own RPATHs.
# Three rounds, the two programs taking turns, so that neither always runs on a GPU and host
# the other has just warmed; table.py takes each row's median.
: >"$out/compare_wick.txt"; : >"$out/compare_torch.txt"; : >"$out/compare_wick.err"; : >"$out/compare_torch.err"
for round in 1 2 3; do
  "$build/wick_compare" $filter >>"$out/compare_wick.txt" 2>>"$out/compare_wick.err"
  echo "wick_compare rc=$? (round $round)"
  "$build/torch_compare" $filter >>"$out/compare_torch.txt" 2>>"$out/compare_torch.err"
  echo "torch_compare rc=$? (round $round)"
done
"$build/wick_train_step" $filter >>"$out/compare_wick.txt" 2>>"$out/compare_wick.err"
echo "wick_train_step rc=$?"
"$build/torch_train_step" $filter >>"$out/compare_torch.txt" 2>>"$out/compare_torch.err"
echo "torch_train_step rc=$?"
# PyTorch's Python nn.DataParallel on the same step (the rows train_step_mlp_large_dp*).
if [[ -z "$filter" || "py_train_step_mlp_large_dp1_ms py_train_step_mlp_large_dp2_ms py_train_step_mlp_large_dp4_ms" == *"$filter"* ]]; then
  $py "$here/torch_dp_bench.py" $filter >>"$out/compare_torch.txt" 2>>"$out/compare_torch.err"
  echo "torch_dp_bench.py rc=$?"
fi
# DistributedDataParallel, one process per GPU: wick's under wick-launch, PyTorch's under torchrun.
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [[ -z "$filter" || "ddp_step_mlp_large" == *"$filter"* || "$filter" == *ddp* ]]; then
  for n in 1 2 4; do
    ((n <= ngpu)) || continue
    NCCL_NVLS_ENABLE=0 timeout 300 "$wick_build/bin/wick-launch" --nproc-per-node $n "$build/wick_ddp_step" \
      >>"$out/compare_wick.txt" 2>>"$out/compare_wick.err"
    echo "wick_ddp_step ($n) rc=$?"
    NCCL_NVLS_ENABLE=0 timeout 300 $py -m torch.distributed.run --nproc-per-node $n "$here/torch_ddp_bench.py" \
      >>"$out/compare_torch.txt" 2>>"$out/compare_torch.err"
    echo "torch_ddp_bench.py ($n) rc=$?"
  done
fi
tail -n 3 "$out/compare_wick.err" "$out/compare_torch.err"
$py "$here/table.py" "$out/compare_wick.txt" "$out/compare_torch.txt" | tee "$out/compare_table.md"
