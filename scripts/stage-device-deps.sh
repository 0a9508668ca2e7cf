#!/usr/bin/env bash
# Copies the header-only dependencies and GoogleTest's sources from this
# machine's Debian packages into .device-deps/ (git-ignored), for a machine
# that can build but cannot install packages (the lent GPU machine): CMake
# falls back to that folder. Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device-deps
mkdir -p .device-deps/include
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/fmt .device-deps/include/
cp -r /usr/src/googletest .device-deps/googletest
du -sh .device-deps
