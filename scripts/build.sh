#!/usr/bin/env bash
# Sets up, configures and builds wick (Release, Ninja) into build/.
#   bash scripts/build.sh                 # everything
#   bash scripts/build.sh wick-tour       # only the named targets
# Environment: WICK_BUILD_DIR (default build), WICK_BUILD_TYPE (Release), WICK_JOBS (2),
# WICK_CUDA (AUTO: the CUDA backend is built when nvcc is found), WICK_CMAKE_ARGS (extra -D...).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_BUILD_DIR:-$root/build}
jobs=${WICK_JOBS:-2}

bash "$root/scripts/setup.sh"

args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${WICK_BUILD_TYPE:-Release}")
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# nvcc is often installed outside PATH; CMake would find /usr/local/cuda on its own, the
# explicit path keeps the choice visible. sm_90 (H100/H200) unless told otherwise.
cuda=${WICK_CUDA:-AUTO}
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ "$cuda" != OFF && -n "$nvcc" ]]; then
  args+=(-DWICK_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${WICK_CUDA_ARCH:-90}")
else
  args+=(-DWICK_CUDA="$cuda")
fi
# shellcheck disable=SC2206  # WICK_CMAKE_ARGS is a space-separated list on purpose
args+=(${WICK_CMAKE_ARGS:-})

cmake "${args[@]}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
