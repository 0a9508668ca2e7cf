#!/usr/bin/env bash
# Run on the GPU machine (device tool): build from the staged dependencies,
# run every test (the gpu-labelled ones included), the telemetry benchmark and
# the commands, and keep the logs under $OUT.
#   scripts/device-check.sh [BENCH_SECONDS] [BENCH_ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/coolbench-out}
mkdir -p "$out"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,temperature.gpu,clocks.sm,power.draw --format=csv
  git log -1 --format='commit %H' 2>/dev/null || true
} | tee "$out/env.txt"
# Warnings stay warnings here: this machine's compiler differs from CI's (which
# builds with -Werror) and may warn where CI's does not; they are listed below.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF \
  -DCOOLBENCH_DEPS_DIR="$PWD/.device-deps" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build -j 16 >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$out/build.log" | head -60; exit 1; }
grep -E "warning:" "$out/build.log" | sort -u | head -20
ctest --test-dir build --output-on-failure -j 4 -LE gpu 2>&1 | tail -15 | tee "$out/ctest-cpu.txt"
ctest --test-dir build --output-on-failure -V -L gpu >"$out/ctest-gpu.txt" 2>&1
grep -E "RECORD|Passed|Failed|Skipped|tests passed|FAILED|Failure|Expected|Which is|actual" "$out/ctest-gpu.txt" | head -60
{
  build/bin/coolbench info; echo "rc=$?"
  build/bin/coolbench who; echo "rc=$?"
  build/bin/coolbench monitor --period 100 --duration 1 --csv "$out/monitor.csv"; echo "rc=$?"
  build/bin/coolbench wait-cool --below 99 --timeout 5; echo "rc=$?"
  build/bin/coolbench info --json >"$out/info.json"; echo "rc=$?"
} >"$out/commands.txt" 2>&1
head -70 "$out/commands.txt"
build/bench/telemetry_overhead "${1:-10}" "${2:-6}" 2>&1 | tee "$out/telemetry_overhead.md"
