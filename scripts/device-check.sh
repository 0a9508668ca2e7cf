#!/usr/bin/env bash
# Run on the GPU machine (device tool): build from the staged dependencies,
# run every test (the gpu-labelled ones included), compute-sanitizer over the
# release cycles, the commands and the benchmarks; logs go under $OUT.
#   scripts/device-check.sh [STEPS...]   steps: tests sanitizer engine-sanitizer commands
#                                         release-check release-bench kernels-sanitizer
#                                         kernels-bench telemetry-bench
#                                         thermal-latency thermal-power contexts foreign
#                                         models engine-vs-torch lottery hidden-state
#                                         ew-jit hidden-state-paired attention-ncu
#                                         attention row-phases wgmma64
#                                         (default: the first six)
# COOLBENCH_BUILD_TARGETS (space-separated) builds only those targets, for a short call.
# COOLBENCH_DEVICE_ARCHS: the CUDA architectures built here (default 90-real: this GPU's code).
# models: the small PyTorch exports on CPU and CUDA (ctest conformance_torch_models*)
# and the full-size model table (tools/check_full_models.py; COOLBENCH_MODELS_ARGS
# passes options, e.g. "--deadline 100 --exporters torchscript").
# The thermal steps are bench/thermal_invariance.py on one workload each,
# sized for one 10-minute call; results.jsonl grows run by run, so a call cut
# short still returns what ran. Combine two calls' files with
# `python3 bench/thermal_invariance.py --from A/results.jsonl B/results.jsonl`.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-/tmp/coolbench-out}
mkdir -p "$out"
steps=("$@")
((${#steps[@]} > 0)) || steps=(tests sanitizer engine-sanitizer commands release-check release-bench)
want() { [[ " ${steps[*]} " == *" $1 "* ]]; }
log="$out/device-check.log"
{
  date -u
  nvidia-smi --query-gpu=name,uuid,driver_version,temperature.gpu,clocks.sm,power.draw --format=csv
  # -dirty: the tree differs from the commit (the device gets the working tree over the last landed commit).
  echo "commit $(git describe --always --dirty --abbrev=40 2>/dev/null)"
} | tee "$log"
# The engine's Debian libraries (scripts/stage-device-deps.sh carries them as
# .debs): unpacked into a prefix inside .device-deps, never into /.
deps="$PWD/.device-deps"
prefix="$deps/prefix"
engine=OFF
if compgen -G "$deps/debs/*.deb" >/dev/null; then
  if [[ ! -e "$prefix/.unpacked" ]]; then
    rm -rf "$prefix" && mkdir -p "$prefix"
    for f in "$deps"/debs/*.deb; do dpkg -x "$f" "$prefix"; done
    touch "$prefix/.unpacked"
  fi
  engine=ON
  libdir="$prefix/usr/lib/x86_64-linux-gnu"
  # OpenBLAS is loaded at run time (dlopen), from Debian's alternatives folder.
  export LD_LIBRARY_PATH="$libdir:$libdir/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "no staged engine libraries (.device-deps/debs): building without the engine" | tee -a "$log"
fi
# Warnings stay warnings here: this machine's compiler differs from CI's (which
# builds with -Werror) and may warn where CI's does not; they are listed below.
{ grep PRETTY_NAME /etc/os-release; c++ --version | head -1; nvcc --version | tail -1; } | tee -a "$log"
# This GPU runs sm_90 machine code, never the PTX for other GPUs (75-virtual) that a default
# build adds: building it here only costs time (COOLBENCH_DEVICE_ARCHS overrides).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOOLBENCH_WERROR=OFF -DCOOLBENCH_ENGINE=$engine \
  -DCMAKE_CUDA_ARCHITECTURES="${COOLBENCH_DEVICE_ARCHS:-90-real}" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu" \
  -DCOOLBENCH_DEPS_DIR="$deps" -DPython_EXECUTABLE="$(command -v python3)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
# Keep going past a failed target: what did build still gets tested.
# shellcheck disable=SC2086 # a list of target names
cmake --build build -j 16 ${COOLBENCH_BUILD_TARGETS:+--target $COOLBENCH_BUILD_TARGETS} -- -k 0 >>"$out/build.log" 2>&1 || grep -E "error|FAILED" -A5 "$out/build.log" | head -40
grep -E "warning:" "$out/build.log" | sort -u | head -20
grep -E "coolbench: (the Python module|no pybind11)" "$out/build.log" | tee -a "$log"

if want tests; then
  # The install tests need pkg-config and the system's packages, which this
  # machine lacks (they run in CI); a failure's whole output goes to ctest-cpu.log.
  ctest --test-dir build --output-on-failure -j 4 -LE "gpu|install" >"$out/ctest-cpu.log" 2>&1
  tail -8 "$out/ctest-cpu.log" | tee -a "$log"
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
if want engine-sanitizer && [[ -x build/tests/engine/cuda_parity_test ]]; then
  # The CUDA engine's kernels: out-of-bounds and uninitialised accesses, leaks,
  # and shared-memory races (the reductions' block trees).
  for tool in memcheck racecheck; do
    for t in cuda_parity_test cuda_session_test; do
      echo "== compute-sanitizer $tool over $t" | tee -a "$log"
      # The out-of-memory test provokes a failing cudaMalloc on purpose.
      extra=()
      [[ $tool == memcheck ]] && extra=(--leak-check full)
      compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 \
        "build/tests/engine/$t" --gtest_filter='-*out_of_memory*' >>"$log" 2>&1
      echo "compute-sanitizer $tool $t exit code $?" | tee -a "$log"
    done
  done
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|LEAK SUMMARY" "$log" | tail -8
fi
if want kernels-sanitizer && [[ -x build/tests/engine/cuda_attention_test ]]; then
  # The fused kernels' own tests: LayerNorm (warp and block kernels, any
  # alignment), elementwise programs, and every attention kernel forced
  # (shared-memory races: the tiles, the split-keys blocks' merge).
  for tool in memcheck racecheck; do
    for run in "cuda_fusion_test:*layer_norm*:*elementwise*" \
               "cuda_attention_test:*kernels_match*:*views*"; do
      t=${run%%:*}
      echo "== compute-sanitizer $tool over $t" | tee -a "$log"
      compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "build/tests/engine/$t" --gtest_filter="${run#*:}" >>"$log" 2>&1
      echo "compute-sanitizer $tool $t exit code $?" | tee -a "$log"
    done
  done
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$log" | tail -4
fi
if want kernels-bench; then
  # Where the time goes after the kernel changes: GPT-2 node by node, the
  # attention kernels forced one by one, and the protocol figure.
  {
    build/bin/coolbench nodes --top 10; echo "rc=$?"
    build/bench/attention_bench; echo "rc=$?"
    build/bin/coolbench run; echo "rc=$?"
  } >"$out/kernels-bench.txt" 2>&1
  tail -40 "$out/kernels-bench.txt"
fi
if want foreign; then
  # The foreign-state check against CuPy and PyTorch, with its evidence
  # (docs/perf/release.md, "Foreign runtimes"): the cases' steps land in
  # foreign-cases.jsonl, the probe's and the runtimes' figures in
  # foreign-figures.jsonl, the bare-context cache in context-baseline.json.
  rm -f "$out/foreign-cases.jsonl"
  COOLBENCH_EVIDENCE_DIR="$out" PYTHONPATH="$PWD/build/python" \
    COOLBENCH_SHARED_LIBRARY="$PWD/build/lib/libcoolbench.so" \
    python3 -m pytest -q -rA -p no:cacheprovider tests/python/test_release_foreign.py 2>&1 |
    tee "$out/foreign-tests.txt" | tail -12
  python3 tests/gpu/foreign_runtime_figures.py --build build --out "$out" >"$out/foreign-figures.txt" 2>&1
  cp "${XDG_CACHE_HOME:-$HOME/.cache}/coolbench/context-baseline.json" "$out/" 2>/dev/null
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
if want lottery; then
  # Where a context's level comes from: the chain beside per-part probes (docs/perf/ci.md,
  # "The lottery"); about 1.5 s a context (estimated).
  build/bench/lottery --contexts 16 --json "$out/lottery.json" >"$out/lottery.md" 2>&1
  echo "rc=$?" >>"$out/lottery.md"
  sed -n '/^| probe/,$p' "$out/lottery.md"
fi
if want hidden-state; then
  # The detection table (both sentinels, then the victim itself) and the isolation table
  # (docs/perf/hidden-state.md §9).
  build/bench/order_effect --part detect --victim fp16:library:blocking --disturb-on raw \
    --json "$out/detect.json" \
    >"$out/detect.md" 2>&1
  echo "rc=$?" >>"$out/detect.md"
  build/bench/order_effect --part isolation --victim fp16:library:blocking --disturb-on raw \
    --repeats 3 --json "$out/isolation.json" >"$out/isolation.md" 2>&1
  echo "rc=$?" >>"$out/isolation.md"
  grep -vE "^(detection|trial)" "$out/detect.md" | tail -30
  tail -25 "$out/isolation.md"
fi
if want ew-jit; then
  # The elementwise programs as generated kernels (COOLBENCH_EW_JIT=1, docs/engine.md) against
  # the interpreter: the elementwise cases both ways against the CPU, then coolbench alone on
  # BERT 32 x 128 (the GELU after each FFN product) with each, profiled per kernel.
  build/tests/engine/cuda_fusion_test --gtest_filter='*elementwise*' >"$out/ew-jit-tests.txt" 2>&1
  echo "cuda_fusion_test (elementwise) exit code $?" | tee -a "$out/ew-jit-tests.txt"
  for jit in 0 1; do
    COOLBENCH_EW_JIT=$jit python3 bench/engine_vs_torch.py --build build --engines coolbench \
      --configs bert:fp16:32:128 --profile bert:fp16:32:128 --processes 2 --no-ceilings \
      --work "${TMPDIR:-/tmp}/coolbench-evt" --jsonl "$out/ew-jit-$jit.jsonl" \
      --log "$out/ew-jit-children.log" 2>&1 | tee "$out/ew-jit-$jit.md" | grep -E "^\| coolbench|fused_elementwise|\[ "
  done
fi
if want attention-ncu; then
  # Why the 64-row attention kernel takes BERT-base's layer (32 x 128, fp16) in 29 us where its
  # counts say about 10 (docs/perf/engine.md, "The attention's bias path"): ncu's stall reasons,
  # occupancy and throughput for its launches after the warm-up.
  if command -v ncu >/dev/null; then
    ncu --kernel-name regex:rows64_kernel --launch-skip 5 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
      build/bench/attention_bench 6 "bert b32" float16 >"$out/attention-ncu.txt" 2>&1
    echo "ncu exit code $?" | tee -a "$out/attention-ncu.txt"
    grep -E "Duration|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" \
      "$out/attention-ncu.txt" | head -20
  else
    echo "attention-ncu: no ncu on this machine" | tee "$out/attention-ncu.txt"
  fi
fi
if want attention; then
  # The fused attention's GPU tests (wgmma_test: the sm_90a kernels' pieces alone), then each
  # kernel forced against PyTorch's SDPA kernels
  # (bench/attention_vs_torch.py; attention_bench's whole table in attention-bench.txt).
  # COOLBENCH_ATTN_ARGS passes options, e.g. "--only decode" or "--rounds 2".
  ctest --test-dir build --output-on-failure -R "cuda_attention|launch_shapes|wgmma_test" \
    >"$out/attention-ctest.log" 2>&1
  grep -E "Test +#|tests passed|Failure|FAILED|SKIPPED" "$out/attention-ctest.log" | tee -a "$log"
  # shellcheck disable=SC2086 # options
  python3 bench/attention_vs_torch.py --build build --rounds 1 --runs 100 ${COOLBENCH_ATTN_ARGS:-} \
    --raw "$out/attention-bench.txt" --json "$out/attention_vs_torch.json" \
    >"$out/attention_vs_torch.md" 2>&1
  echo "attention_vs_torch exit code $?" | tee -a "$log"
  tail -n 40 "$out/attention_vs_torch.md"
fi
if want row-phases; then
  # Y's unaligned rows written in place (docs/engine.md, "row phases"; by size by default since
  # this ran on an H100, 2026-12-08): cuda_gemm_test's row-phase cases and the odd-vocabulary GPT-2 sessions, then
  # the built-in GPT-2 small node by node with the phases forced and with the padded scratch
  # and its copy (=0): at 8 x 1,024 tokens with its kernels traced, and at 4,096, 1,024 (two
  # ways) and 512 tokens, where the lm_head's rows a phase say where the phases start to pay
  # (k_row_phase_min_rows).
  build/tests/engine/cuda_gemm_test --gtest_filter='*row_phases*:*gpt2_graph*' \
    >"$out/row-phases-tests.txt" 2>&1
  echo "cuda_gemm_test (row phases) exit code $?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED) |RECORD row|Failure" "$out/row-phases-tests.txt" | head -20
  for shape in 8x1024 4x1024 1x1024 8x128 4x128; do
    batch=${shape%x*} sequence=${shape#*x}
    kernels=()
    [[ $shape == 8x1024 ]] && kernels=(--kernels)
    for phases in force 0; do
      name="row-phases-nodes-$shape-$phases"
      COOLBENCH_GEMM_ROW_PHASES=$phases build/bin/coolbench nodes --dim "batch=$batch" \
        --dim "sequence=$sequence" "${kernels[@]}" --runs 10 --top 8 --json "$out/$name.json" \
        >"$out/$name.txt" 2>&1
      echo "coolbench nodes $shape (COOLBENCH_GEMM_ROW_PHASES=$phases) exit code $?" | tee -a "$log"
      grep -E "least|lm_head|Gemm .*row phases|padded from" "$out/$name.txt" | head -6
    done
  done
fi
if want wgmma64; then
  # The wgmma kernel on 64-key tiles (two blocks an SM at head dim 64; picked on many blocks
  # at head dims up to 64 since this ran on an H100, 2026-12-08): its GPU tests, then
  # attention_bench's prefill rows and the batch-32 encoders, where the wgmma64 column stands
  # beside wgmma's and mma's (docs/engine.md).
  ctest --test-dir build --output-on-failure -R cuda_attention_wgmma64 \
    >"$out/wgmma64-ctest.log" 2>&1
  grep -E "Test +#|tests passed|Failure|FAILED|SKIPPED" "$out/wgmma64-ctest.log" | tee -a "$log"
  for name in prefill b32; do
    build/bench/attention_bench 50 "$name" float16 >>"$out/wgmma64-bench.txt" 2>&1
    echo "attention_bench $name exit code $?" | tee -a "$log"
  done
  grep -E "^\| (config|gpt2|bert|vit)" "$out/wgmma64-bench.txt"
fi
if want hidden-state-paired; then
  # Isolation inside one context (docs/perf/hidden-state.md, "To run next"): 30 fresh processes.
  python3 bench/hidden_state_trials.py --build build --part paired --trials 10 \
    --json "$out/paired.json" 2>&1 | tee "$out/paired.md" | tail -8
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
if want engine-vs-torch; then
  # bench/engine_vs_torch.py (docs/perf/engine.md, "Against PyTorch"); COOLBENCH_EVT_ARGS
  # passes options, e.g. "--budget 300" or "--configs gpt2:bf16:8:1+128 --profile --budget 540".
  # The records stay in the build folder while the machine is warm, so a later call can add
  # the processes a cut one left out: COOLBENCH_EVT_ARGS="--top-up build/engine_vs_torch/records.jsonl ...".
  records=build/engine_vs_torch/records.jsonl
  mkdir -p "$(dirname "$records")"
  # shellcheck disable=SC2086 # options
  python3 bench/engine_vs_torch.py --build build ${COOLBENCH_EVT_ARGS:-} \
    --jsonl "$records" --json "$out/engine_vs_torch.json" \
    --log "$out/engine_vs_torch-children.log" 2>&1 |
    tee "$out/engine_vs_torch.md" | grep -vE "Warning|warn"
  cp "$records" "$out/engine_vs_torch.jsonl" 2>/dev/null
fi
if want models; then
  ctest --test-dir build --output-on-failure -V -R conformance_torch_models >"$out/models-ctest.log" 2>&1
  grep -E "^[0-9]+: (test_|torch-models|note|root)|tests passed|Passed|Failed|SKIPPED" "$out/models-ctest.log" | tee -a "$log"
  # shellcheck disable=SC2086 # options
  PYTHONPATH="$PWD/build/python" python3 tools/check_full_models.py ${COOLBENCH_MODELS_ARGS:-} \
    --json "$out/full-models.json" 2>&1 | tee "$out/full-models.md" | grep -vE "Warning|warn"
fi
