#!/usr/bin/env bash
# Downloads, on a machine with Debian's package index, the packages that building and testing
# wick needs on the GPU machine (which has nvcc, cmake and ninja but no GoogleTest, Google
# Benchmark, OpenBLAS or zlib headers, and no network). They land in .deps/debs (git-ignored);
# scripts/gpu/build-and-test.sh unpacks them there.
#   bash scripts/gpu/fetch-deps.sh              # the packages
#   bash scripts/gpu/fetch-deps.sh --snapshot   # only .deps/head.tar: the committed tree to build
#   bash scripts/gpu/fetch-deps.sh --runtime    # only .deps/runtime.tar: the runtime's committed files
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .deps/debs
if [[ "${1:-}" == "--runtime" ]]; then  # the runtime's files as committed (see build-and-test.sh)
  rm -f .deps/head.tar
  git archive --format=tar HEAD src/cuda src/no_cuda include/wick/cuda.h tests/cuda bench/cuda_runtime_bench.cpp \
    >.deps/runtime.tar
  git log -1 --format='%h %s' >.deps/runtime.txt
  exit 0
fi
if [[ "${1:-}" == "--snapshot" ]]; then
  git archive --format=tar HEAD >.deps/head.tar
  git log -1 --format='%h %s' >.deps/head.txt
  exit 0
fi
cd .deps/debs
packages=(
  libgtest-dev                                   # GoogleTest (static libs, CMake config)
  libbenchmark-dev libbenchmark1debian           # Google Benchmark
  libopenblas-openmp-dev libopenblas0-openmp     # CPU GEMM, OpenMP build
  libgfortran5 libquadmath0                      # what libopenblas needs at run time
  libgomp1                                       # used only if the GPU machine lacks one
  zlib1g-dev zlib1g                              # the data loaders' gzip
)
apt-get download "${packages[@]}"
ls -la
