#!/usr/bin/env bash
# Configures and builds coolbench into build/ (warnings are errors).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc && -z "${CUDACXX:-}" ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
