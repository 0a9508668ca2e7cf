#!/usr/bin/env bash
# The test command: set up, build, run every test. GPU tests (label gpu) skip
# with their reason where there is no GPU; ctest counts them as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
status=0

# The threaded logic (sampler, device leases and release, several GPUs at once) again under
# ThreadSanitizer; any report fails the test.
tsan_tests=(sampler_test device_test multi_device_test multi_test)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=ON \
  -DCOOLBENCH_CUDA=OFF -DCOOLBENCH_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$(nproc)" --target "${tsan_tests[@]}"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" || status=$?

# The ONNX loader under libFuzzer for a fixed time (scripts/fuzz.sh). Its seeds
# include the generated conformance roots, so their fixtures run first.
ctest --test-dir build --output-on-failure -R "^conformance_(pypi|reference)_data\$" || status=$?
scripts/fuzz.sh 60 build || status=$?

# The whole suite last, so its summary closes the output.
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=$?
# ctest shows a skipped test's output nowhere; print why each one skipped.
log=build/Testing/Temporary/LastTest.log
# (GoogleTest prints "file:line: Skipped" and the reason below it; pytest's
# -rs prints "SKIPPED [n] file: reason".)
if grep -q -e ": Skipped" -e "^SKIPPED \[" "$log" 2>/dev/null; then
  echo "Why tests were skipped:"
  {
    grep -h -A1 ": Skipped$" "$log" | grep -v -e ": Skipped$" -e "^--$"
    grep -h "^SKIPPED \[" "$log" | sed 's/^SKIPPED \[[0-9]*\] [^:]*: /pytest: /'
  } | sort -u | sed 's/^/  /'
fi
exit "$status"
