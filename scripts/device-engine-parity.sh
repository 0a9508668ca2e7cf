#!/usr/bin/env bash
# The CUDA engine's parity test and compute-sanitizer memcheck over it, on the
# GPU machine, in one short device call (scripts/device-check.sh runs
# everything; this is its engine-parity part alone). Logs go under $OUT.
#   scripts/device-engine-parity.sh [TEST_BINARY]
# With TEST_BINARY (cuda_parity_test built on another machine with the same
# CUDA major version) nothing is built: only OpenBLAS, the CPU reference's
# BLAS, is unpacked from .device-deps/debs (scripts/stage-device-deps.sh).
# Without it, build/tests/engine/cuda_parity_test is built first, the engine's
# libraries taken from .device-deps as device-check.sh does.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/coolbench-out}
mkdir -p "$out"
log="$out/engine-parity.log"
deps="$PWD/.device-deps"
prefix="$deps/prefix"
{
  date -u
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv
  git log -1 --format='commit %H' 2>/dev/null || true
} | tee "$log"
if ! compgen -G "$deps/debs/*.deb" >/dev/null; then
  echo "no staged libraries in $deps/debs: run scripts/stage-device-deps.sh first" | tee -a "$log"
  exit 2
fi
if [[ ! -e "$prefix/.unpacked" ]]; then
  rm -rf "$prefix" && mkdir -p "$prefix"
  for f in "$deps"/debs/*.deb; do dpkg -x "$f" "$prefix"; done
  touch "$prefix/.unpacked"
fi
libdir="$prefix/usr/lib/x86_64-linux-gnu"
cuda_libs="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
export LD_LIBRARY_PATH="$libdir:$libdir/openblas-pthread:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
test_binary=${1:-}
if [[ -z "$test_binary" ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF \
    -DCOOLBENCH_ENGINE=ON -DCMAKE_PREFIX_PATH="$prefix/usr" \
    -DCMAKE_LIBRARY_PATH="$libdir" -DCOOLBENCH_DEPS_DIR="$deps" >"$out/build.log" 2>&1 &&
    cmake --build build -j 16 --target cuda_parity_test >>"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; exit 1; }
  test_binary=build/tests/engine/cuda_parity_test
fi
echo "== $test_binary" | tee -a "$log"
"$test_binary" >>"$log" 2>&1
echo "cuda_parity_test exit code $?" | tee -a "$log"
grep -E "RECORD|\[  PASSED|\[  FAILED|\[  SKIPPED|Failure|element|threw" "$log" | head -40
echo "== compute-sanitizer memcheck --leak-check full over $test_binary" | tee -a "$log"
compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$test_binary" \
  >"$out/memcheck.log" 2>&1
echo "compute-sanitizer memcheck exit code $?" | tee -a "$log"
grep -E "RECORD|ERROR SUMMARY|LEAK SUMMARY|\[  PASSED|\[  FAILED" "$out/memcheck.log" | tee -a "$log"
