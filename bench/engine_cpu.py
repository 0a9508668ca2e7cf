#!/usr/bin/env python3
"""GPT-2 on the CPU: coolbench's CPU backend against onnxruntime, in one run.

Writes the model with `coolbench model gpt2` (GPT-2 small by default), draws
seeded random token ids, then times each engine in a fresh process, in
alternating order over several rounds, with the same thread count. Prints a
markdown table (median and spread per engine, the ratio coolbench/onnxruntime)
and the largest logit difference between the two.

    .venv/bin/python bench/engine_cpu.py [--build build] [--rounds 3] [--runs 10]
        [--threads N] [--batch 1] [--seq 128] [--layers 12 --hidden 768 --heads 12 --vocab 50257]

Needs numpy and onnxruntime (scripts/setup.sh puts them in .venv) and a build
with the engine (build/bin/coolbench, build/bench/engine_cpu).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def ort_worker(model, ids_file, batch, seq, warmup, runs, threads, output):
    """Runs in its own process (this script with --ort-worker)."""
    import onnxruntime
    ids = np.fromfile(ids_file, dtype=np.int64).reshape(batch, seq)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - start) * 1e3
    feed = {session.get_inputs()[0].name: ids}
    start = time.perf_counter()
    out = session.run(None, feed)[0]
    first_ms = (time.perf_counter() - start) * 1e3
    for _ in range(1, warmup):
        session.run(None, feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = session.run(None, feed)[0]
        times.append((time.perf_counter() - start) * 1e3)
    out.astype(np.float32).tofile(output)
    print(json.dumps({"engine": "onnxruntime-cpu", "version": onnxruntime.__version__,
                      "load_ms": load_ms, "first_run_ms": first_ms, "runs_ms": times}))


def run_json(command, env):
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"engine_cpu.py: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "fp16"])
    parser.add_argument("--ort-worker", nargs=7, help=argparse.SUPPRESS)
    o = parser.parse_args()
    if o.ort_worker:
        model, ids_file, batch, seq, warmup, runs, output = o.ort_worker
        ort_worker(model, ids_file, int(batch), int(seq), int(warmup), int(runs), o.threads,
                   output)
        return

    coolbench = os.path.join(o.build, "bin", "coolbench")
    timer = os.path.join(o.build, "bench", "engine_cpu")
    for path in (coolbench, timer):
        if not os.access(path, os.X_OK):
            sys.exit(f"engine_cpu.py: {path} is missing; build with scripts/build.sh first")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(o.threads), OMP_NUM_THREADS=str(o.threads))
    work = tempfile.mkdtemp(prefix="coolbench-engine-cpu-")
    model = os.path.join(work, "gpt2.onnx")
    subprocess.run([coolbench, "model", "gpt2", "--layers", str(o.layers), "--hidden",
                    str(o.hidden), "--heads", str(o.heads), "--vocab", str(o.vocab), "--seq",
                    str(o.seq), "--batch", str(o.batch), "--dtype", o.dtype, "-o", model],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    ids_file = os.path.join(work, "ids.bin")
    rng = np.random.default_rng(20261202)
    rng.integers(0, o.vocab, (o.batch, o.seq), dtype=np.int64).tofile(ids_file)

    results = {"coolbench-cpu": [], "onnxruntime-cpu": []}
    outputs = {name: os.path.join(work, name + ".bin") for name in results}
    for round_index in range(o.rounds):
        order = list(results) if round_index % 2 == 0 else list(reversed(list(results)))
        for name in order:
            if name == "coolbench-cpu":
                command = [timer, model, "--ids", ids_file, "--batch", str(o.batch), "--seq",
                           str(o.seq), "--warmup", str(o.warmup), "--runs", str(o.runs),
                           "--output", outputs[name]]
            else:
                command = [sys.executable, __file__, "--threads", str(o.threads), "--ort-worker",
                           model, ids_file, str(o.batch), str(o.seq), str(o.warmup), str(o.runs),
                           outputs[name]]
            results[name].append(run_json(command, env))

    ours = np.fromfile(outputs["coolbench-cpu"], dtype=np.float32)
    theirs = np.fromfile(outputs["onnxruntime-cpu"], dtype=np.float32)
    difference = float(np.max(np.abs(ours - theirs))) if ours.shape == theirs.shape else None

    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    print("# engine_cpu: GPT-2 on the CPU, coolbench against onnxruntime\n")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"commit {commit or 'unknown'}")
    print(f"- CPU: {describe_cpu()}, {os.cpu_count()} logical CPUs; threads per engine: "
          f"{o.threads}")
    print(f"- model: GPT-2, {o.layers} layers, hidden {o.hidden}, {o.heads} heads, vocab "
          f"{o.vocab}, {o.dtype}; input batch {o.batch}, sequence {o.seq}")
    print(f"- coolbench backend: {results['coolbench-cpu'][0]['backend']}")
    print(f"- onnxruntime {results['onnxruntime-cpu'][0]['version']}; {o.rounds} rounds, "
          f"alternating order, each a fresh process: {o.warmup} warm-up runs, then {o.runs} "
          "timed runs\n")
    print("| engine | load | first run | median | min | max | median per round |")
    print("|---|---|---|---|---|---|---|")
    medians = {}
    for name, rounds in results.items():
        every = [t for r in rounds for t in r["runs_ms"]]
        per_round = [statistics.median(r["runs_ms"]) for r in rounds]
        medians[name] = statistics.median(every)
        print(f"| {name} | {statistics.median(r['load_ms'] for r in rounds):.0f} ms | "
              f"{statistics.median(r['first_run_ms'] for r in rounds):.1f} ms | "
              f"{medians[name]:.1f} ms | {min(every):.1f} ms | {max(every):.1f} ms | "
              + " ".join(f"{m:.1f}" for m in per_round) + " |")
    ratio = medians["coolbench-cpu"] / medians["onnxruntime-cpu"]
    print(f"\ncoolbench / onnxruntime (median): **{ratio:.2f}x** (goal: within 3x)")
    print("largest |logit difference|: " +
          ("shapes differ!" if difference is None else f"{difference:.3g}"))


if __name__ == "__main__":
    main()
