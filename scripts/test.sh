#!/usr/bin/env bash
# The test command: set up, build, run every test. GPU tests (label gpu) skip
# with their reason where there is no GPU; ctest counts them as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
