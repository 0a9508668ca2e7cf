#!/usr/bin/env bash
# The test command: set up, build, run every test. GPU tests (label gpu) skip
# with their reason where there is no GPU; ctest counts them as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=$?
# ctest shows a skipped test's output nowhere; print why each one skipped.
log=build/Testing/Temporary/LastTest.log
if grep -q ": Skipped" "$log" 2>/dev/null; then
  echo "Why tests were skipped:"
  grep -h -A1 ": Skipped$" "$log" | grep -v -e ": Skipped$" -e "^--$" | sort -u | sed 's/^/  /'
fi
exit "$status"
