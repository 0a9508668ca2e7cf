#!/usr/bin/env python3
"""coolbench's Python module against the Python peers, on one PyTorch callable.

Each tool measures the same callable in a fresh process, from a cool GPU (after
`coolbench wait-cool`) and from a hot one (right after `coolbench heat` in
another process), in a shuffled order per repeat:

  coolbench         coolbench.measure(fn, device=0): the protocol, context kept
  coolbench-nohold  the same with hold=False: the host's launch time included
  triton            triton.testing.do_bench(fn, return_mode="median")
  torch-benchmark   torch.utils.benchmark.Timer(...).blocked_autorange()
  torch-events      a loop timed with torch.cuda.Event (20 warm-up, 200 timed, median)

Workloads: `power` (a bf16 8192^3 matmul: power-bound, capped within about
60 ms on the H200) and `latency` (GPT-2 small's 48 dense GEMMs at sequence 128,
fp16, replayed as one CUDA graph). Prints a table: each tool's cool and hot
figures, |hot - cold| / cold, the CV over repeats, the wall time. Results go
to docs/perf/python.md; raw records to OUT/results.jsonl.

  PYTHONPATH=build/python python3 bench/python_peers.py --build build --workload power --out DIR
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from thermal_invariance import read_records

TOOLS = ["coolbench", "coolbench-nohold", "triton", "torch-benchmark", "torch-events"]


def make_workload(torch, name):
    """Returns (callable, description); inputs random, never zeros."""
    g = torch.Generator(device="cuda").manual_seed(1)
    if name == "power":
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(8192, 8192, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.matmul(a, b, out=c)), "torch.matmul bf16 8192x8192x8192"
    if name == "latency":
        shapes = [(128, 768, 2304), (128, 768, 768), (128, 768, 3072), (128, 3072, 768)]
        ops = []
        for _ in range(12):
            for m, k, n in shapes:
                ops.append((torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g),
                            torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g),
                            torch.empty(m, n, device="cuda", dtype=torch.float16)))

        def chain():
            for x, w, y in ops:
                torch.matmul(x, w, out=y)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                chain()  # cuBLAS picks and loads its kernels before capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            chain()
        return graph.replay, "GPT-2 small's 48 GEMMs fp16, one CUDA graph"
    raise SystemExit(f"unknown workload {name!r}: power or latency")


def child(tool, workload, max_time, rel_ci):
    """One measurement in this (fresh) process; prints one JSON line."""
    import torch

    fn, description = make_workload(torch, workload)
    torch.cuda.synchronize()
    begin = time.perf_counter()
    extra = {}
    if tool in ("coolbench", "coolbench-nohold"):
        import coolbench

        r = coolbench.measure(fn, device=0, max_time=max_time, rel_ci=rel_ci, check=False,
                              hold=tool == "coolbench")
        figure = r.figure_ms
        doc = r.to_dict()["summary"]
        extra = {"converged": r.converged, "stop_reason": r.stop_reason,
                 "kept": doc["latency"]["count"], "discarded": doc["discarded"],
                 "bursts": doc["bursts"], "rel_ci": r.rel_ci}
    elif tool == "triton":
        import triton.testing

        figure = triton.testing.do_bench(fn, return_mode="median")
    elif tool == "torch-benchmark":
        import torch.utils.benchmark as benchmark

        m = benchmark.Timer(stmt="fn(); torch.cuda.synchronize()",
                            globals={"fn": fn, "torch": torch}).blocked_autorange(min_run_time=1.0)
        figure = m.median * 1e3
    elif tool == "torch-events":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for i in range(220):
            start.record()
            fn()
            end.record()
            end.synchronize()
            if i >= 20:
                times.append(start.elapsed_time(end))
        figure = statistics.median(times)
    else:
        raise SystemExit(f"unknown tool {tool!r}")
    wall = time.perf_counter() - begin
    print(json.dumps({"tool": tool, "workload": workload, "description": description,
                      "figure_ms": figure, "wall_s": wall, "end_temp_c": gpu_temperature(),
                      **extra}))


def gpu_temperature():
    """GPU 0's temperature from nvidia-smi, or None when it cannot say."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=temperature.gpu", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return int(out.stdout.split()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def run_one(args, tool, start):
    coolbench_exe = os.path.join(args.build, "bin", "coolbench")
    if start == "cool":
        subprocess.run([coolbench_exe, "wait-cool", "--below", str(args.cool_below), "--timeout",
                        "300"], check=True, capture_output=True)
    else:
        subprocess.run([coolbench_exe, "heat", "--seconds", str(args.preheat)], check=True,
                       capture_output=True)
    start_temp = gpu_temperature()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(args.build, "python") + os.pathsep + env.get("PYTHONPATH", "")
    began = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", tool, "--workload", args.workload,
                          "--max-time", str(args.max_time), "--rel-ci", str(args.rel_ci)],
                         capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{tool} ({start}) failed:\n{out.stderr[-3000:]}")
    record = json.loads(out.stdout.strip().splitlines()[-1])
    record.update({"start": start, "start_temp_c": start_temp,
                   "process_wall_s": time.perf_counter() - began})
    return record


def table(records):
    lines = ["| tool | cool start | hot start | \\|hot − cold\\| / cold | CV over repeats (cool, hot) "
             "| wall time | start temperatures (cool, hot) |", "|---|---|---|---|---|---|---|"]
    for tool in TOOLS:
        mine = [r for r in records if r["tool"] == tool]
        if not mine:
            continue
        by = {s: [r["figure_ms"] for r in mine if r["start"] == s] for s in ("cool", "hot")}
        temps = {s: [r["start_temp_c"] for r in mine if r["start"] == s] for s in ("cool", "hot")}
        if not by["cool"] or not by["hot"]:
            continue
        cool, hot = statistics.median(by["cool"]), statistics.median(by["hot"])

        def cv(values):
            return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0

        wall = statistics.median(r["wall_s"] for r in mine)
        def span(values):
            known = [t for t in values if t is not None]
            return f"{min(known)}–{max(known)} °C" if known else "n/a"

        lines.append(f"| {tool} | {cool:.4f} ms | {hot:.4f} ms | {abs(hot - cool) / cool:.2%} | "
                     f"{cv(by['cool']):.2%}, {cv(by['hot']):.2%} | {wall:.1f} s | "
                     f"{span(temps['cool'])}, {span(temps['hot'])} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--workload", default="power", choices=["power", "latency"])
    p.add_argument("--tools", nargs="+", default=TOOLS, choices=TOOLS)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--preheat", type=int, default=10, help="seconds of `coolbench heat`")
    p.add_argument("--cool-below", type=int, default=42)
    p.add_argument("--max-time", type=float, default=20.0, help="coolbench's --max-time")
    p.add_argument("--rel-ci", type=float, default=0.002, help="coolbench's --rel-ci")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="python-peers")
    p.add_argument("--from", dest="from_files", nargs="+", metavar="RESULTS",
                   help="only print the table of these results.jsonl files (runs of several calls pooled)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.workload, args.max_time, args.rel_ci)
    if args.from_files:
        print(table(read_records(args.from_files)))
        return None
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    records = []
    t0 = time.perf_counter()
    with open(os.path.join(args.out, "results.jsonl"), "a") as results:
        for repeat in range(args.repeats):
            order = [(tool, start) for tool in args.tools for start in ("cool", "hot")]
            rng.shuffle(order)
            for tool, start in order:
                r = run_one(args, tool, start)
                r["repeat"] = repeat
                records.append(r)
                results.write(json.dumps(r) + "\n")
                results.flush()
                print(f"[{time.perf_counter() - t0:6.0f} s] {args.workload} {tool} {start} "
                      f"#{repeat}: {r['figure_ms']:.4f} ms (from {r['start_temp_c']} °C, "
                      f"{r['wall_s']:.1f} s)", flush=True)
    text = f"# python_peers: {records[0]['description']}\n\n{table(records)}\n"
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    return None


if __name__ == "__main__":
    main()
