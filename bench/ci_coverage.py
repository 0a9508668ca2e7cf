#!/usr/bin/env python3
"""Does a run's CI hold for the next process? coolbench and the three baselines, in fresh processes.

Each policy measures each workload in N fresh `coolbench run` processes, in rounds (one run
of every workload and policy per round, policies in a shuffled order, so a drift of the card
touches all alike and a run cut short leaves every row with the rounds done).
Per workload and policy it prints and records:

  processes     runs that gave a figure
  cv            stdev / mean of their figures (a fraction)
  covered_pairs of the N(N-1) ordered pairs (i, j), i != j, those where run i's CI holds run
                j's figure; two calibrated 95 % intervals of equal width give about 83 %
  mean_rel_ci   the runs' mean CI half-width, relative to their figure
  wall_s        mean wall time of one run, process start to exit

A run's figure is what `coolbench run` leads with: the mean of the contexts' medians when the
run was spread over contexts, else the (pooled) median; its CI is the one printed beside it.
Targets (issue "Honest uncertainty"): for coolbench, coverage >= 80 % and a CV <= 0.2 % within
30 s per run, on the latency-bound and the power-bound workload.

  python3 bench/ci_coverage.py --build build --processes 10 --out DIR
  python3 bench/ci_coverage.py --from DIR/runs.jsonl          # the table again, no GPU

The records go to docs/perf/ci_coverage.json (--json), merged by (label, workload, policy);
every run's figure and CI to DIR/runs.jsonl.
"""
import argparse
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import time

POLICIES = ["coolbench", "naive", "fixed-sleep", "clock-discard"]
WORKLOADS = {"latency": "gemm:fp16:gpt2-small", "power": "gemm:bf16:8192:8192:8192:1"}


def figure_and_ci(doc):
    """The run's figure and its CI (lower, upper), as `coolbench run` reports them."""
    summary = doc["summary"]
    contexts = summary.get("contexts")
    if contexts and contexts.get("ci_ms"):
        return contexts["mean_ms"], contexts["ci_ms"], contexts["count"]
    median = summary["latency"]["median_ms"]
    return median, summary.get("median_ci_ms"), 1


def measure(o, workload, spec, policy, process, out_dir):
    """One `coolbench run` in a fresh process; returns its record."""
    coolbench = os.path.join(o.build, "bin", "coolbench")
    if o.cool_below:
        subprocess.run([coolbench, "wait-cool", "--device", str(o.device), "--below",
                        str(o.cool_below), "--timeout", "120", "--quiet"], capture_output=True)
    path = os.path.join(out_dir, f"run-{os.getpid()}.json")
    command = [coolbench, "run", "--device", str(o.device), "--workload", spec, "--policy", policy,
               "--max-time", str(o.max_time), "--json", path, "--quiet"]
    if policy == "coolbench":
        command += ["--rel-ci", str(o.rel_ci)] + (o.coolbench_args or [])
    else:
        command += ["--rel-ci", str(o.baseline_rel_ci)] + (o.baseline_args or [])
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - started
    record = {"workload": workload, "spec": spec, "policy": policy, "process": process,
              "exit": done.returncode, "wall_s": round(wall, 3), "figure_ms": None, "ci_ms": None}
    try:
        with open(path) as f:
            doc = json.load(f)
        os.remove(path)
    except (OSError, ValueError) as e:
        record["error"] = f"{e}; {done.stderr[-500:]}"
        return record
    figure, ci, contexts = figure_and_ci(doc)
    summary = doc["summary"]
    gpu = doc["environment"].get("gpu") or {}
    per_context = (summary.get("contexts") or {}).get("per_context") or []
    record.update({"figure_ms": figure, "ci_ms": ci, "contexts": contexts,
                   "context_medians_ms": [round(c["median_ms"], 6) for c in per_context],
                   "converged": summary["converged"], "stop_reason": summary["stop_reason"],
                   "seconds_total": summary.get("seconds_total"),
                   "gpu": " ".join(filter(None, [gpu.get("name"), gpu.get("uuid")])) or None,
                   "driver": doc["environment"].get("driver_version")})
    return record


def coverage_row(runs):
    """The table's figures for one (workload, policy)'s runs."""
    good = [r for r in runs if r.get("figure_ms") and r.get("ci_ms")]
    figures = [r["figure_ms"] for r in good]
    covered = pairs = 0
    for i, a in enumerate(good):
        for j, b in enumerate(good):
            if i == j:
                continue
            pairs += 1
            covered += a["ci_ms"][0] <= b["figure_ms"] <= a["ci_ms"][1]
    return {
        "processes": len(good),
        "cv": statistics.stdev(figures) / statistics.mean(figures) if len(good) >= 2 else None,
        "covered_pairs": covered, "pairs": pairs,
        "mean_rel_ci": statistics.mean((r["ci_ms"][1] - r["ci_ms"][0]) / 2 / r["figure_ms"]
                                       for r in good) if good else None,
        "wall_s": statistics.mean(r["wall_s"] for r in runs) if runs else None,
        "mean_ms": statistics.mean(figures) if figures else None,
        "contexts": statistics.mean(r.get("contexts", 1) for r in good) if good else None,
    }


def table(runs):
    rows = []
    lines = ["| workload | policy | processes | figure (mean) | CV across processes | "
             "covered pairs | mean CI | wall per run | contexts per run |",
             "|---|---|---|---|---|---|---|---|---|"]
    for workload in sorted({r["workload"] for r in runs}):
        for policy in POLICIES:
            mine = [r for r in runs if r["workload"] == workload and r["policy"] == policy]
            if not mine:
                continue
            row = coverage_row(mine)
            row.update({"workload": workload, "spec": mine[0]["spec"], "policy": policy})
            rows.append(row)
            share = row["covered_pairs"] / row["pairs"] if row["pairs"] else 0
            lines.append(
                f"| {workload} | {policy} | {row['processes']} | "
                + (f"{row['mean_ms']:.5f} ms" if row["mean_ms"] else "n/a") + " | "
                + (f"{row['cv'] * 100:.3f} %" if row["cv"] is not None else "n/a") + " | "
                f"{row['covered_pairs']}/{row['pairs']} ({share * 100:.0f} %) | "
                + (f"±{row['mean_rel_ci'] * 100:.3f} %" if row["mean_rel_ci"] else "n/a") + " | "
                + (f"{row['wall_s']:.1f} s" if row["wall_s"] is not None else "n/a") + " | "
                + (f"{row['contexts']:.1f}" if row["contexts"] is not None else "n/a") + " |")
    verdicts = []
    for row in rows:
        if row["policy"] != "coolbench" or not row["pairs"]:
            continue
        share = row["covered_pairs"] / row["pairs"]
        verdicts.append(
            f"- {row['workload']}, coolbench: coverage {share * 100:.0f} % (>= 80 %: "
            f"{'met' if share >= 0.8 else 'NOT met'}), CV {row['cv'] * 100:.3f} % (<= 0.2 %: "
            f"{'met' if row['cv'] <= 0.002 else 'NOT met'}), wall {row['wall_s']:.1f} s per run "
            f"(<= 30 s: {'met' if row['wall_s'] <= 30 else 'NOT met'})")
    return rows, "\n".join(lines) + "\n\n" + "\n".join(verdicts) + "\n"


def commit():
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("COOLBENCH_COMMIT", "unknown")


def write_json(path, rows, runs, label, extra):
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    gpu = next((r["gpu"] for r in runs if r.get("gpu")), None)
    records = []
    if os.path.exists(path):
        with open(path) as f:
            records = json.load(f)
    keys = {(label, row["spec"], row["policy"]) for row in rows}  # records keep the spec
    records = [r for r in records if (r.get("label"), r["workload"], r["policy"]) not in keys]
    for row in rows:
        records.append({
            "label": label, "workload": row["spec"], "policy": row["policy"],
            "processes": row["processes"], "cv": row["cv"],
            "covered_pairs": row["covered_pairs"], "pairs": row["pairs"],
            "mean_rel_ci": row["mean_rel_ci"], "wall_s": row["wall_s"], "date": date,
            "gpu": gpu, "commit": extra.get("commit") or commit(), **extra.get("settings", {})})
    with open(path, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--processes", type=int, default=10, help="fresh processes per policy")
    parser.add_argument("--workload", action="append", metavar="NAME=SPEC",
                        help="default: latency=gemm:fp16:gpt2-small power=gemm:bf16:8192:8192:8192:1")
    parser.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES)
    parser.add_argument("--rel-ci", type=float, default=0.005, help="coolbench's --rel-ci")
    parser.add_argument("--baseline-rel-ci", type=float, default=0.005)
    parser.add_argument("--max-time", type=float, default=30, help="per run, s")
    parser.add_argument("--cool-below", type=int, default=0,
                        help="wait until the GPU is below this (C) before each run; 0: do not")
    parser.add_argument("--coolbench-args", type=str.split, default=[],
                        help="more flags for coolbench's runs, one string")
    parser.add_argument("--baseline-args", type=str.split, default=[],
                        help="more flags for the baselines' runs, one string ('--min-time 0.5')")
    parser.add_argument("--from", dest="inputs", nargs="+", metavar="RUNS_JSONL")
    parser.add_argument("--out", default=".", help="folder for runs.jsonl")
    parser.add_argument("--json", default="docs/perf/ci_coverage.json",
                        help="records merged into this file ('' : none)")
    parser.add_argument("--label", default="after", help="the records' label (before, after)")
    parser.add_argument("--seed", type=int, default=1)
    o = parser.parse_args()
    if o.inputs:
        runs = [json.loads(line) for p in o.inputs for line in open(p) if line.strip()]
    else:
        workloads = dict(w.split("=", 1) for w in o.workload) if o.workload else WORKLOADS
        os.makedirs(o.out, exist_ok=True)
        log = os.path.join(o.out, "runs.jsonl")
        rng = random.Random(o.seed)
        runs = []
        for process in range(o.processes):
            for workload, spec in workloads.items():
                for policy in rng.sample(o.policies, len(o.policies)):
                    record = measure(o, workload, spec, policy, process, o.out)
                    runs.append(record)
                    with open(log, "a") as f:
                        f.write(json.dumps(record) + "\n")
                    print(f"{workload} {policy} #{process}: "
                          + (f"{record['figure_ms']:.5f} ms" if record["figure_ms"] else "no figure")
                          + f", {record['wall_s']:.1f} s", file=sys.stderr, flush=True)
    rows, text = table(runs)
    print(text)
    if o.json and rows:
        settings = {"rel_ci": o.rel_ci, "max_time_s": o.max_time} if not o.inputs else {}
        write_json(o.json, rows, runs, o.label, {"settings": settings})


if __name__ == "__main__":
    main()
