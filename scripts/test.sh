#!/usr/bin/env bash
# Sets up, builds and runs every test of wick; prints how many were skipped.
#   bash scripts/test.sh                  # all tests
#   bash scripts/test.sh -R Printing      # extra arguments go to ctest
# CUDA tests skip themselves (GTEST_SKIP) on a machine without a GPU; the summary counts them.
# Under CI (CI=true, as .ci/run sets) or with WICK_SANITIZE=1, the CPU tests then run again
# built with AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh, build-asan/).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WICK_BUILD_DIR:-$root/build}
jobs=${WICK_JOBS:-2}

start=$SECONDS
bash "$root/scripts/build.sh"
echo "wick: configured and built in $((SECONDS - start)) s"

log="$build/ctest.log"
status=0
(cd "$build" && ctest --output-on-failure --no-tests=error -j "$jobs" "$@") 2>&1 | tee "$log" ||
  status=$?

total=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\2/p' "$log" | tail -1)
failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
echo "wick: ${total:-0} tests, ${failed:-?} failed, ${skipped} skipped (GPU tests skip without a GPU)"
if ((status != 0)); then
  echo "wick: tests FAILED" >&2
fi

if [[ "${WICK_SANITIZE:-}" == 1 || ( "${CI:-}" == true && "${WICK_SANITIZE:-}" != 0 ) ]]; then
  start=$SECONDS
  bash "$root/scripts/sanitize.sh" "$@" || status=$?
  echo "wick: sanitizer build and tests in $((SECONDS - start)) s"
fi
exit "$status"
