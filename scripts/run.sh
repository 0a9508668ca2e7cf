#!/usr/bin/env bash
# The main job: set up, build, and run coolbench. Until `coolbench run` exists
# this is `coolbench info`: the GPUs and the host sensors. Arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/bin/coolbench info "$@"
