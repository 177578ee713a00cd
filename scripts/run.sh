#!/usr/bin/env bash
# Sets up, builds and runs wick's main program; arguments go to the program.
#   bash scripts/run.sh
set -euo pipefail

main=wick-tour  # the main job

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_BUILD_DIR:-$root/build}

bash "$root/scripts/build.sh" "$main"
exec "$build/bin/$main" "$@"
