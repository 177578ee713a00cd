#!/usr/bin/env bash
# Runs on the GPU machine (or any other), in a copy of the repository: the CPU GEMM libraries
# that WICK_CPU_BLAS can choose, side by side, with PyTorch's CPU matmul as the reference column
# where `import torch` works (bench/cpu_gemm/run.sh). Needs only g++; the libraries come from
# .deps/debs and .deps/debs-cpu-gemm (scripts/gpu/fetch-deps.sh; carry both), unpacked into
# DEPS unless they are there already; a library whose package is missing is left out.
#   bash scripts/gpu/cpu-gemm.sh [DEPS] [quick]     # DEPS: /tmp/deps unless given
# Prints the machine, what each library detected (kernel, threads), and one table per thread
# count (the libraries' defaults, the physical cores, the logical CPUs, one); the rows land in
# $OUT/cpu_gemm_rows.tsv and the table in $OUT/cpu_gemm.md when OUT is set. The environment is
# used as it is: to see OpenBLAS without OPENBLAS_* settings, run it under env -u.
set -uo pipefail
cd "$(dirname "$0")/../.."
deps=${1:-/tmp/deps}
quick=${2:-}
if [[ ! -e $deps/usr/lib/x86_64-linux-gnu/libdnnl.so || ! -e $deps/usr/lib/x86_64-linux-gnu/blis-openmp ]]; then
  mkdir -p "$deps"
  for f in .deps/debs/*.deb .deps/debs-cpu-gemm/*.deb; do
    [[ -e $f ]] || continue
    case "$f" in
      *libgomp1*) ;;  # the machine's own (build-and-test.sh uses it only where none is installed)
      *) dpkg -x "$f" "$deps" ;;
    esac
  done
fi
work=$(mktemp -d /tmp/cpu-gemm.XXXXXX)
WORK=$work bash bench/cpu_gemm/run.sh "$deps" $quick | tee "$work/out.txt"
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  cp "$work/rows.tsv" "$OUT/cpu_gemm_rows.tsv"
  cp "$work/out.txt" "$OUT/cpu_gemm.md"
fi
