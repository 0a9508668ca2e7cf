#!/usr/bin/env bash
# Matched A/B and energy on a GPU machine, in one short call (docs/perf/compare.md): builds
# the command and the energy GPU test (without the engine or the Python module, unless a build
# folder is already there), then runs the energy test and alternates an A/A run
# (gemm:fp16:gpt2-small against itself) with a 2 % A/B run (50 against 51 identical
# 128x2304x768 fp16 GEMMs: one more GEMM in 50) until BUDGET_S seconds after the start. Every
# run's JSON and summary go under $OUT as they finish, so a call cut short still returns what
# ran. Each run stops at PER_RUN_S (--max-time) so that a budget holds about
# BUDGET_S / (PER_RUN_S + 10) pairs of runs.
#   bench/ab_device.sh [BUDGET_S [PER_RUN_S]]   (defaults 100 and 40)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/coolbench-ab}
mkdir -p "$out"
runs=/tmp/coolbench-ab-runs
mkdir -p "$runs"
budget=${1:-100}
per_run=${2:-40}
start=$(date +%s)
log="$out/ab-device.log"
{
  date -u
  nvidia-smi --query-gpu=name,uuid,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv
  if [[ -f COMMIT ]]; then echo "commit $(cat COMMIT)"; else git log -1 --format='commit %H'; fi
} | tee "$log"
deps="$PWD/.device-deps"
# A build folder left by an earlier call on a warm machine (scripts/device-check.sh, engine
# and all) is kept as configured: only the two targets are brought up to date.
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF \
    -DCOOLBENCH_ENGINE=OFF -DCOOLBENCH_PYTHON=OFF -DCOOLBENCH_DEPS_DIR="$deps" >"$runs/build.log" 2>&1 ||
    { tail -30 "$runs/build.log" | tee -a "$log"; exit 1; }
fi
cmake --build build -j 16 --target coolbench energy_counter_test >>"$runs/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A5 "$runs/build.log" | head -40 | tee -a "$log"; exit 1; }
echo "built in $(($(date +%s) - start)) s" | tee -a "$log"
./build/tests/gpu/energy_counter_test 2>&1 | tee -a "$log" | grep -E "energy|OK|FAIL|SKIP"
left() { echo $((budget - ($(date +%s) - start))); }
i=0
while (($(left) > 12)); do
  i=$((i + 1))
  for pair in "aa gemm:fp16:gpt2-small gemm:fp16:gpt2-small" \
              "ab gemm:fp16:128:2304:768:50 gemm:fp16:128:2304:768:51"; do
    read -r name a b <<<"$pair"
    (($(left) > 12)) || break
    max_time=$(($(left) - 2))
    ((max_time < per_run)) || max_time=$per_run
    timeout "$(left)" ./build/bin/coolbench run --workload "$a" --against "$b" --quiet \
      --rel-ci 0.003 --max-time "$max_time" --json "$runs/${name}_$i.json" >"$runs/${name}_$i.txt" 2>&1
    code=$?
    { echo "=== $name $i: $a against $b, exit $code"; cat "$runs/${name}_$i.txt"; } >>"$log"
    echo "$name $i exit $code: $(grep -E '^(B/A|verdict)' "$runs/${name}_$i.txt" | tr '\n' ' ')"
    tar -czf "$out/runs.tar.gz" -C "$runs" --exclude build.log . 2>/dev/null
  done
done
echo "done after $(($(date +%s) - start)) s" | tee -a "$log"
