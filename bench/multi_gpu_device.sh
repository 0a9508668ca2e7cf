#!/usr/bin/env bash
# Several GPUs of one host (docs/perf/multi-gpu.md), on the GPU machine, one step per call
# (each sized for the device tool's 10-minute call). Builds the command without the engine or
# the Python module (as bench/ab_device.sh) unless build/ is configured already, then:
#   smoke     any machine (one GPU is enough): --device all against --device 0 (the same
#             run/1 document on one GPU), a list of one, the refusals; then on two GPUs or
#             more a short run on all of them
#   per-gpu   every GPU at once: the latency-bound gemm:fp16:gpt2-small (cold, 5 contexts)
#             and the power-bound gemm:bf16:8192:8192:8192:4 (cold), each with its spread
#   coupling  GPU 0 measured with GPU 1 idle and heated (bench/neighbour_coupling.py,
#             2 repeats, 45 s pre-heat, runs of at most 45 s), gemm:fp16:gpt2-small
#   coupling-power   the same with the power-bound chain measured
# Everything goes under $OUT: the log, the JSON and HTML of each run, the summaries.
#   bench/multi_gpu_device.sh STEP
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/coolbench-multi}
mkdir -p "$out"
step=${1:?give a step: smoke, per-gpu, coupling or coupling-power}
log="$out/multi-gpu-$step.log"
{
  date -u
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,temperature.gpu,clocks.sm,power.draw,power.limit --format=csv
  nvidia-smi topo -m 2>/dev/null
  if [[ -f COMMIT ]]; then echo "commit $(cat COMMIT)"; else git log -1 --format='commit %H'; fi
} | tee "$log"
start=$(date +%s)
# An existing build (scripts/device-check.sh's, engine included) is kept as it is configured:
# configuring it again without the engine would make the next full build start over.
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF \
    -DCOOLBENCH_ENGINE=OFF -DCOOLBENCH_PYTHON=OFF -DCOOLBENCH_DEPS_DIR="$PWD/.device-deps" \
    >"$out/build.log" 2>&1 || { tail -30 "$out/build.log" | tee -a "$log"; exit 1; }
fi
cmake --build build -j 16 --target coolbench >>"$out/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A5 "$out/build.log" | head -40 | tee -a "$log"; exit 1; }
echo "built in $(($(date +%s) - start)) s" | tee -a "$log"
cb=./build/bin/coolbench
"$cb" info --device all --json >"$out/info.json" 2>>"$log"
# The GPUs CUDA sees, as --device all counts them: nvidia-smi -L ignores CUDA_VISIBLE_DEVICES
# and lists MIG instances as lines of their own.
gpus=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["gpus"]))' \
  "$out/info.json" 2>>"$log") || gpus=0
echo "CUDA sees $gpus GPU(s)" | tee -a "$log"
"$cb" info --device all 2>&1 | tee -a "$log" | grep -iE "topology|nvlink|pcie|GPU [0-9]" | head -20

run() {  # NAME ARGS...: one coolbench run, its summary in the log, its exit code noted
  local name=$1
  shift
  echo "=== $name: coolbench run $*" | tee -a "$log"
  "$cb" run "$@" --quiet --json "$out/$name.json" --html "$out/$name.html" >"$out/$name.txt" 2>&1
  local code=$?
  cat "$out/$name.txt" >>"$log"
  echo "=== $name exit $code" | tee -a "$log"
  grep -E "^(=== GPU|latency|median|spread|\| [0-9]|GPU [0-9]+ FAILED|[0-9]+ of)" "$out/$name.txt"
}

case "$step" in
  smoke)
    run smoke_all --workload gemm:fp16:128:2304:768:4 --device all --max-time 20 --contexts 2
    run smoke_0 --workload gemm:fp16:128:2304:768:4 --device 0 --max-time 20 --contexts 2
    python3 - "$out" "$gpus" <<'EOF' | tee -a "$log"
import json, sys
out, gpus = sys.argv[1], int(sys.argv[2])
a, b = (json.load(open(f"{out}/smoke_{n}.json")) for n in ("all", "0"))
want = "coolbench.run/1" if gpus == 1 else "coolbench.multi/1"
print(f"--device all on {gpus} GPU(s): schema {a['schema']} (want {want}); "
      f"--device 0: {b['schema']}")
EOF
    for bad in "0,0" "0,99"; do
      "$cb" run --workload gemm:fp16:128:128:128 --device "$bad" >/dev/null 2>>"$log"
      echo "--device $bad: exit $? (want 2, then 4)" | tee -a "$log"
    done
    if ((gpus >= 2)); then
      run smoke_01 --workload gemm:fp16:128:2304:768:4 --device 0,1 --max-time 20 --contexts 2
    fi
    ;;
  per-gpu)
    run per_gpu_latency --workload gemm:fp16:gpt2-small --device all --max-time 120
    run per_gpu_power --workload gemm:bf16:8192:8192:8192:4 --device all --max-time 120
    ;;
  coupling | coupling-power)
    workload=gemm:fp16:gpt2-small
    [[ $step == coupling-power ]] && workload=gemm:bf16:8192:8192:8192:4
    python3 bench/neighbour_coupling.py --build build --measured 0 --heated 1 --repeats 2 \
      --preheat 45 --max-time 45 --workload "$workload" --out "$out/$step" 2>&1 | tee -a "$log"
    ;;
  *) echo "unknown step '$step'" | tee -a "$log"; exit 2 ;;
esac
echo "done after $(($(date +%s) - start)) s" | tee -a "$log"
