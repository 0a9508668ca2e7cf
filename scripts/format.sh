#!/usr/bin/env bash
# Formats every C++ and CUDA file of the project in place.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard -- '*.hpp' '*.cpp' '*.cu' '*.cuh' | xargs clang-format -i
