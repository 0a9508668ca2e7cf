#!/usr/bin/env bash
# Run on the GPU machine (device tool): build from the staged dependencies,
# run every test (the gpu-labelled ones included), compute-sanitizer over the
# release cycles, the commands and the benchmarks; logs go under $OUT.
#   scripts/device-check.sh [STEPS...]   steps: tests sanitizer commands
#                                         release-check release-bench telemetry-bench
#                                         thermal-latency thermal-power contexts
#                                         (default: the first five)
# The thermal steps are bench/thermal_invariance.py on one workload each,
# sized for one 10-minute call; results.jsonl grows run by run, so a call cut
# short still returns what ran. Combine two calls' files with
# `python3 bench/thermal_invariance.py --from A/results.jsonl B/results.jsonl`.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/coolbench-out}
mkdir -p "$out"
steps=("$@")
((${#steps[@]} > 0)) || steps=(tests sanitizer commands release-check release-bench)
want() { [[ " ${steps[*]} " == *" $1 "* ]]; }
log="$out/device-check.log"
{
  date -u
  nvidia-smi --query-gpu=name,uuid,driver_version,temperature.gpu,clocks.sm,power.draw --format=csv
  git log -1 --format='commit %H' 2>/dev/null || true
} | tee "$log"
# Warnings stay warnings here: this machine's compiler differs from CI's (which
# builds with -Werror) and may warn where CI's does not; they are listed below.
# Without the engine: its Debian libraries (ONNX, protobuf, OpenBLAS) are not
# on that machine and cannot be installed there.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF -DCOOLBENCH_ENGINE=OFF \
  -DCOOLBENCH_DEPS_DIR="$PWD/.device-deps" -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
# Keep going past a failed target: what did build still gets tested.
cmake --build build -j 16 -- -k 0 >>"$out/build.log" 2>&1 || grep -E "error|FAILED" -A5 "$out/build.log" | head -40
grep -E "warning:" "$out/build.log" | sort -u | head -20
grep -E "coolbench: (the Python module|no pybind11)" "$out/build.log" | tee -a "$log"

if want tests; then
  ctest --test-dir build --output-on-failure -j 4 -LE gpu 2>&1 | tail -8 | tee -a "$log"
  ctest --test-dir build --output-on-failure -V -L gpu >>"$log" 2>&1
  grep -E "RECORD|tests passed|\[  FAILED|\[  SKIPPED|Failure|Expected|Which is|actual" "$log" | head -60
fi
if want commands; then
  {
    build/bin/coolbench info; echo "rc=$?"
    build/bin/coolbench who; echo "rc=$?"
    build/bin/coolbench monitor --period 100 --duration 1; echo "rc=$?"
    build/bin/coolbench wait-cool --below 99 --timeout 5; echo "rc=$?"
  } >"$out/commands.txt" 2>&1
  tail -5 "$out/commands.txt"
fi
if want release-bench; then
  build/bench/release_bench 2>&1 | tee "$out/release_bench.md"
fi
if want release-check; then
  build/bin/coolbench release-check --hold 5 --json "$out/release-check.json" 2>&1 | tee "$out/release-check.txt"
fi
if want sanitizer; then
  echo "== compute-sanitizer memcheck over release cycles" | tee -a "$log"
  COOLBENCH_CYCLES=5 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
    build/tests/gpu/device_cycles_test >>"$log" 2>&1
  echo "compute-sanitizer exit code $?" | tee -a "$log"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|PASSED|FAILED" "$log" | tail -4
fi
if want telemetry-bench; then
  build/bench/telemetry_overhead 10 6 2>&1 | tee "$out/telemetry_overhead.md"
fi
if want contexts; then
  # Is the figure a property of the context? (docs/perf/thermal.md, "Contexts")
  {
    for renew in context memory workload; do
      build/bench/context_spread gemm:fp16:gpt2-small 6 300 0 "$renew"
    done
    echo "## coolbench run: default (spread over contexts), one context, power-bound"
    build/bin/coolbench run --workload gemm:fp16:gpt2-small --quiet; echo "rc=$?"
    build/bin/coolbench run --workload gemm:fp16:gpt2-small --contexts 1 --quiet; echo "rc=$?"
    build/bin/coolbench run --workload gemm:bf16:8192:8192:8192:1 --max-time 20 --quiet; echo "rc=$?"
  } >"$out/contexts.md" 2>&1
  grep -E "^\| [0-9]|^latency|^mean of|median|stopped|rc=" "$out/contexts.md" | head -60
fi
if want thermal-latency; then
  # GPT-2 small's 48 layer GEMMs at sequence 128: latency-bound, barely heats,
  # some 6,000 ticks of the event timer long (docs/measure.md, "GEMM chains").
  # --processes: the baselines' figures over fresh processes, for the
  # wall-time target at an equal CI width (docs/perf/thermal.md, "Contexts").
  python3 bench/thermal_invariance.py --build build --workload latency=gemm:fp16:gpt2-small \
    --policies coolbench naive fixed-sleep clock-discard --repeats 2 --preheat 8 --max-time 15 \
    --rel-ci 0.002 --processes 8 --out "$out/thermal-latency" 2>&1 |
    tee "$out/thermal-latency.txt"
fi
if want thermal-power; then
  # bf16 8192^3: power-bound, capped within about 60 ms (docs/facts-h200.md §2).
  python3 bench/thermal_invariance.py --build build --workload power=gemm:bf16:8192:8192:8192:1 \
    --policies coolbench naive fixed-sleep --repeats 2 --preheat 10 --max-time 20 --rel-ci 0.001 \
    --out "$out/thermal-power" 2>&1 | tee "$out/thermal-power.txt"
fi
