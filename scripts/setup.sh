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
  python3-venv                      # .venv/: onnx, onnxruntime and numpy from PyPI for the tests
  python3-dev pybind11-dev          # the Python module (src/python)
  clang libclang-rt-14-dev          # the ONNX loader's fuzzer (clang -fsanitize=fuzzer and its runtime)
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

# The tests' Python tooling (onnx's newer node tests, onnxruntime's reference
# outputs, onnx.checker) from PyPI, pinned in tools/requirements-test.txt,
# in .venv/ at the top of the checkout. Debian's own python3 makes it, so the
# venv does not depend on whatever python3 comes first on PATH. The pip step
# runs only when the pinned set differs from the one last installed (a copy of
# the requirements file kept in the venv), so a warm run costs nothing.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
requirements="$root/tools/requirements-test.txt"
installed="$venv/requirements-test.installed"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup: creating $venv"
  /usr/bin/python3 -m venv "$venv"
fi
if ! cmp -s "$requirements" "$installed"; then
  echo "setup: installing the tests' Python packages (tools/requirements-test.txt) into .venv"
  rm -f "$installed"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$requirements"
  cp "$requirements" "$installed"
fi
