#!/usr/bin/env bash
# Sets up, builds and runs wick's main job, wick-train on Fashion-MNIST (on the GPU when there
# is one); arguments go to the program.
#   bash scripts/run.sh
#   bash scripts/run.sh --model cnn --epochs 3
set -euo pipefail

main=wick-train  # the main job

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_BUILD_DIR:-$root/build}

bash "$root/scripts/build.sh" "$main"
exec "$build/bin/$main" "$@"
