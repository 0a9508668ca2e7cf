#!/usr/bin/env bash
# The main job: set up, build, and measure with `coolbench run` (by default the
# built-in GPT-2 small on the CPU backend). Arguments go to coolbench run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/bin/coolbench run "$@"
