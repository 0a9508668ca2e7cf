#!/usr/bin/env bash
# Installs what coolbench's build and tests need, from Debian's packages.
# Idempotent: installs only what is missing. Needs root (or sudo) when it does.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config  # the build
  libcli11-dev                      # command-line parsing
  nlohmann-json3-dev                # JSON output
  libfmt-dev                        # formatting (used header-only)
  libgtest-dev                      # unit tests
  libonnx-dev libprotobuf-dev       # ONNX import (the engine)
  libonnx-testdata                  # ONNX's backend node tests, for the conformance runner
  libopenblas-dev                   # MatMul/Gemm on the CPU backend
  clang-format                      # the format check in the test suite
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The CUDA toolkit is not a Debian package here: CMake finds nvcc on PATH or
# in /usr/local/cuda. Without it coolbench builds without its CUDA parts.
if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: no CUDA toolkit (nvcc) found; the GPU benchmarks and GPU test helpers will not be built"
fi
