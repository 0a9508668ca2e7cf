#!/usr/bin/env bash
# Stage what examples/tvm_cuda_reset.py and its GPU test need on the GPU machine,
# which has Python 3.12, no package registry and no room for apache-tvm (~300 MB):
#   build/tvm-runtime/add_cuda.so   the report's Add compiled for CUDA sm_90 (a cubin inside)
#   build/tvm-runtime/gemm_chain_cuda.so  GPT-2 small's GEMM chain, the same way (bench/tvm_peer.py)
#   build/tvm-runtime/site/tvm      TVM's runtime only (TVM_USE_RUNTIME_LIB=1): no libtvm_compiler.so,
#                                   3rdparty/, include/, src/, web/; libcudart.so.13 beside its libraries
#   build/tvm-runtime/site/tvm_ffi  apache-tvm-ffi from its cp312 wheel
# Needs .venv with apache-tvm (scripts/setup.sh) and the CUDA toolkit (its libcuda stub makes
# the build link a cubin instead of carrying CUDA C for NVRTC). Usage: scripts/stage-tvm-runtime.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/tvm-runtime}
python=.venv/bin/python
cuda=${CUDA_HOME:-/usr/local/cuda}
ffi_version=$("$python" -c "import importlib.metadata as m; print(m.version('apache-tvm-ffi'))")
tvm_dir=$("$python" -c "import os, tvm; print(os.path.dirname(tvm.__file__))" 2>/dev/null) ||
  { echo "stage-tvm-runtime: no apache-tvm in $python; run scripts/setup.sh" >&2; exit 1; }
[[ -e $cuda/lib64/stubs/libcuda.so && -e $cuda/lib64/libcudart.so.13 ]] ||
  { echo "stage-tvm-runtime: needs the CUDA 13 toolkit at $cuda (set CUDA_HOME)" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/site" "$out/stub"

# The Add, compiled for CUDA with nvcc against the driver stub (libcuda.so.1 resolvable).
ln -s "$cuda/lib64/stubs/libcuda.so" "$out/stub/libcuda.so.1"
LD_LIBRARY_PATH="$out/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$cuda/bin:$PATH" \
  TVM_CUDA_COMPILE_MODE=nvcc "$python" tools/compile_tvm_add.py "$out/add_cuda.so"
LD_LIBRARY_PATH="$out/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$cuda/bin:$PATH" \
  TVM_CUDA_COMPILE_MODE=nvcc "$python" tools/compile_tvm_gemm_chain.py "$out/gemm_chain_cuda.so"
rm -rf "$out/stub"

# TVM's runtime only.
cp -a "$tvm_dir" "$out/site/tvm"
rm -rf "$out"/site/tvm/{3rdparty,include,src,web,lib/libtvm_compiler.so}
find "$out/site" -name __pycache__ -prune -exec rm -rf {} +
cp -L "$cuda/lib64/libcudart.so.13" "$out/site/tvm/lib/"

# tvm_ffi for the GPU machine's Python 3.12.
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --implementation cp --dest "$out/wheel" "apache-tvm-ffi==$ffi_version"
"$python" -m zipfile -e "$out"/wheel/apache_tvm_ffi-*.whl "$out/site/"
rm -rf "$out/wheel" "$out/site/tvm_ffi/include" "$out/site/tvm_ffi/src" "$out/site/tvm_ffi/3rdparty" \
  "$out/site/tvm_ffi/cython"
echo "stage-tvm-runtime: $(du -sh "$out" | cut -f1) in $out"
