#!/usr/bin/env python3
"""TVM's own rule against coolbench's, on the same TVM-compiled work (issue "TVM", §3;
results in docs/perf/tvm.md).

The work: GPT-2 small's GEMM chain (12 layers of 128x768·768x2304, 128x768·768x768,
128x768·768x3072 and 128x3072·3072x768, fp16, the MLP path data-dependent) built by TVM
for CUDA sm_90 (tools/compile_tvm_gemm_chain.py, staged by scripts/stage-tvm-runtime.sh),
its weights made on the GPU machine from a fixed seed. Two ways to measure it, each in
fresh processes, from cool starts (after `coolbench wait-cool`) and hot starts (right after
`coolbench heat` in another process):

- tvm-rule: `time_evaluator(number, repeat, cooldown_interval_ms, repeats_to_cooldown)`,
  the fixed-sleep rule TVM merged instead of a context reset (apache/tvm PR #11465); its
  figure is ProfileResult.mean, its CI the Student-t interval over the repeats' means (what
  a TVM user can compute from `results`);
- coolbench: `coolbench.measure(chain, device=0, release="keep")` (TVM's arrays stay alive,
  so the context is never reset: one context's draw), cold mode, stream 0 held;
- coolbench-contexts: the same with `release="reset"` and `setup`/`teardown` that build
  TVM's VM and arrays (the library through coolbench.tvm.load_module) and drop them, so the
  protocol spreads the run over fresh contexts as it does for its own workloads.

Prints per rule: the mean figure from cool and from hot starts, |hot - cold| / cold, the CV
of the figures over all its processes, pairwise CI coverage (does run i's CI hold run j's
figure, over ordered pairs of its processes) and the median wall time to a figure; and
writes OUT/results.jsonl (one line per process) and OUT/summary.md.

    python3 bench/tvm_peer.py --stage build/tvm-runtime --processes 5 --out $OUT
    python3 bench/tvm_peer.py --from results.jsonl
"""

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RULES = ["tvm-rule", "coolbench", "coolbench-contexts"]
SHAPES = {"x": (128, 768), "w_qkv": (768, 2304), "w_proj": (768, 768), "w_fc": (768, 3072),
          "w_out": (3072, 768)}


def bench_helpers():
    """thermal_invariance's statistics (Student-t quantile, CI half-width, CV)."""
    spec = importlib.util.spec_from_file_location("thermal_invariance",
                                                  ROOT / "bench" / "thermal_invariance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpu_temperature():
    """GPU 0's temperature from nvidia-smi (python_peers'), or None when it cannot say."""
    sys.path.insert(0, str(ROOT / "bench"))
    from python_peers import gpu_temperature as read

    return read()


def load_tvm(stage):
    """TVM's runtime from the stage folder (or an installed apache-tvm)."""
    spec = importlib.util.spec_from_file_location("tvm_cuda_reset",
                                                  ROOT / "examples" / "tvm_cuda_reset.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    site = stage / "site"
    return example.load_tvm_runtime(str(site) if (site / "tvm").is_dir() else None)


def build_chain(tvm, stage):
    """The chain's VM on GPU 0 and its inputs: uniform in [-1, 1) / sqrt(rows), fp16, from a
    fixed seed. The library comes through coolbench.tvm.load_module, so it runs again after
    a release."""
    import numpy as np

    import coolbench.tvm

    device = tvm.cuda(0)
    vm = tvm.runtime.vm.VirtualMachine(coolbench.tvm.load_module(stage / "gemm_chain_cuda.so"),
                                       device)
    rng = np.random.default_rng(19)
    inputs = [tvm.runtime.tensor((rng.uniform(-1, 1, shape) / np.sqrt(shape[0])).astype("float16"),
                                 device) for shape in SHAPES.values()]
    return device, vm, inputs


def child(rule, stage, args):
    began = time.perf_counter()
    tvm = load_tvm(stage)
    if rule == "tvm-rule":
        device, vm, inputs = build_chain(tvm, stage)
        timer = vm.time_evaluator("main", device, number=args.number, repeat=args.repeat,
                                  cooldown_interval_ms=args.cooldown_ms,
                                  repeats_to_cooldown=args.repeats_to_cooldown)
        result = timer(*inputs)
        repeats = [r * 1e3 for r in result.results]
        figure = result.mean * 1e3
        record = {"figure_ms": figure, "rel_ci": bench_helpers().mean_ci_half_width(repeats),
                  "samples": len(repeats) * args.number, "contexts": 1}
    else:
        import gc

        import coolbench

        state = {}

        def setup():
            _, state["vm"], state["inputs"] = build_chain(tvm, stage)
            state["main"] = state["vm"]["main"]

        def teardown():  # TVM's arrays and VM dropped, its pool emptied: nothing left to refuse
            state.clear()
            gc.collect()
            tvm.get_global_func("vm.builtin.memory_manager.clear")()

        def chain():
            state["main"](*state["inputs"])

        release = "keep" if rule == "coolbench" else "reset"
        r = coolbench.measure(chain, device=0, release=release, setup=setup, teardown=teardown,
                              max_time=args.max_time)
        document = r.to_dict()
        record = {"figure_ms": r.figure_ms, "rel_ci": r.rel_ci, "samples": len(r.latencies_ms),
                  "contexts": len({s.get("context") for s in document.get("samples", [])}),
                  "converged": r.converged, "stop_reason": r.stop_reason}
    record.update({"rule": rule, "wall_s": time.perf_counter() - began})
    print(json.dumps(record))


def run_one(args, rule, start):
    coolbench_exe = os.path.join(args.build, "bin", "coolbench")
    if start == "cool":
        subprocess.run([coolbench_exe, "wait-cool", "--below", str(args.cool_below), "--timeout",
                        str(args.cool_timeout), "--quiet"], check=False)
    else:
        subprocess.run([coolbench_exe, "heat", "--seconds", str(args.preheat)], check=True,
                       capture_output=True)
    start_temp = gpu_temperature()
    command = [sys.executable, __file__, "--child", rule, "--stage", str(args.stage)]
    for name in ("number", "repeat", "cooldown_ms", "repeats_to_cooldown", "max_time"):
        command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"tvm_peer: {rule} ({start}) failed:\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-3000:]}")
    record = json.loads(done.stdout.strip().splitlines()[-1])
    record.update({"start": start, "start_temp_c": start_temp,
                   "process_wall_s": time.perf_counter() - began})
    return record


def coverage(records):
    """Ordered pairs (i, j), i != j, where run i's CI holds run j's figure."""
    covered = pairs = 0
    for i in records:
        for j in records:
            if i is j or i["rel_ci"] is None:
                continue
            pairs += 1
            covered += abs(j["figure_ms"] - i["figure_ms"]) <= i["rel_ci"] * i["figure_ms"]
    return covered, pairs


def table(records):
    lines = ["| rule | processes (cool + hot) | cool start | hot start | \\|hot − cold\\| / cold | "
             "CV over processes | mean CI half-width | pairwise coverage | median wall | "
             "start temperatures (cool, hot) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for rule in RULES:
        mine = [r for r in records if r["rule"] == rule]
        by = {s: [r["figure_ms"] for r in mine if r["start"] == s] for s in ("cool", "hot")}
        if not by["cool"] or not by["hot"]:
            continue
        cool, hot = statistics.mean(by["cool"]), statistics.mean(by["hot"])
        figures = by["cool"] + by["hot"]
        cv = statistics.stdev(figures) / statistics.mean(figures) if len(figures) > 1 else 0.0
        covered, pairs = coverage(mine)
        widths = [r["rel_ci"] for r in mine if r["rel_ci"] is not None]
        temps = {s: [r["start_temp_c"] for r in mine if r["start"] == s and r["start_temp_c"]]
                 for s in ("cool", "hot")}

        def span(values):
            return f"{min(values)}–{max(values)} °C" if values else "n/a"

        lines.append(
            f"| {rule} | {len(by['cool'])} + {len(by['hot'])} | {cool:.4f} ms | {hot:.4f} ms | "
            f"{abs(hot - cool) / cool:.2%} | {cv:.2%} | ±{statistics.mean(widths):.2%} | "
            f"{covered}/{pairs} | {statistics.median(r['wall_s'] for r in mine):.1f} s | "
            f"{span(temps['cool'])}, {span(temps['hot'])} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="the build folder with bin/coolbench")
    p.add_argument("--stage", type=pathlib.Path, default=ROOT / "build" / "tvm-runtime",
                   help="scripts/stage-tvm-runtime.sh's folder (gemm_chain_cuda.so, site/)")
    p.add_argument("--rules", nargs="+", default=RULES, choices=RULES)
    p.add_argument("--processes", type=int, default=5, help="fresh processes per rule and start")
    p.add_argument("--preheat", type=int, default=10, help="seconds of `coolbench heat` before hot")
    p.add_argument("--cool-below", type=int,
                   help="cool start: wait until the GPU is at or below this (default: its temperature "
                        "when the benchmark starts + 2 °C)")
    p.add_argument("--cool-timeout", type=int, default=60)
    p.add_argument("--number", type=int, default=50, help="time_evaluator's number")
    p.add_argument("--repeat", type=int, default=20, help="time_evaluator's repeat")
    p.add_argument("--cooldown-ms", type=int, default=200, help="time_evaluator's cooldown_interval_ms")
    p.add_argument("--repeats-to-cooldown", type=int, default=5)
    p.add_argument("--max-time", type=float, default=10.0, help="coolbench.measure's max_time")
    p.add_argument("--out", default="tvm-peer")
    p.add_argument("--from", dest="from_files", nargs="+", metavar="RESULTS")
    p.add_argument("--child", choices=RULES, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.stage, args)
    if args.from_files:
        records = [json.loads(line) for path in args.from_files for line in open(path) if line.strip()]
        print(table(records))
        return None
    os.makedirs(args.out, exist_ok=True)
    if args.cool_below is None:
        idle = gpu_temperature()
        args.cool_below = (idle if idle is not None else 40) + 2
    records = []
    # cool starts first (the light chain barely warms the GPU), then hot; the rules' order
    # rotates from one round to the next
    for start in ("cool", "hot"):
        for i in range(args.processes):
            for rule in args.rules[i % len(args.rules):] + args.rules[:i % len(args.rules)]:
                record = run_one(args, rule, start)
                records.append(record)
                print(json.dumps(record), flush=True)
                with open(os.path.join(args.out, "results.jsonl"), "a") as f:
                    f.write(json.dumps(record) + "\n")
    summary = "# tvm_peer\n\n" + table(records)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(summary)
    print(summary)
    return None


if __name__ == "__main__":
    sys.exit(main())
