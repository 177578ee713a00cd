#!/usr/bin/env bash
# Downloads, on a machine with Debian's package index, the packages that building and testing
# wick needs on the GPU machine (which has nvcc, cmake and ninja but no GoogleTest, Google
# Benchmark, OpenBLAS, CLI11, nlohmann-json, DLPack or zlib headers, and no network). They land in
# .deps/debs (git-ignored); scripts/gpu/build-and-test.sh unpacks them there. The CPU GEMM
# libraries that only scripts/gpu/cpu-gemm.sh compares land in .deps/debs-cpu-gemm.
#   bash scripts/gpu/fetch-deps.sh
# For wick-train's run there, copy the Fashion-MNIST files too: cp -r /usr/share/datasets/fashion-mnist .deps/fmnist
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .deps/debs
cd .deps/debs
packages=(
  libgtest-dev                                   # GoogleTest (static libs, CMake config)
  libbenchmark-dev libbenchmark1debian           # Google Benchmark
  libopenblas-openmp-dev libopenblas0-openmp     # CPU GEMM, OpenMP build (float64 beside oneDNN)
  libgfortran5 libquadmath0                      # what libopenblas needs at run time
  libdnnl-dev libdnnl2 ocl-icd-libopencl1        # CPU GEMM, float32: oneDNN (it links libOpenCL)
  libgomp1                                       # used only if the GPU machine lacks one
  zlib1g-dev zlib1g                              # the data loaders' gzip
  libcli11-dev nlohmann-json3-dev                # header-only: the programs' flags, safetensors
  libdlpack-dev                                  # header-only: DLPack's struct
  bible-kjv bible-kjv-text                       # the default corpus of wick-gpt and the text tests
)
apt-get download "${packages[@]}"
ls -la
# The other CPU GEMM choices (WICK_CPU_BLAS), for scripts/gpu/cpu-gemm.sh only: a folder of
# their own (26 MB), carried to the GPU machine only for that comparison.
mkdir -p ../debs-cpu-gemm
cd ../debs-cpu-gemm
apt-get download libopenblas-pthread-dev libopenblas0-pthread libblis-openmp-dev libblis4-openmp \
  libblis-pthread-dev libblis4-pthread
ls -la
