#!/usr/bin/env python3
"""Thermal invariance: does a policy give the same figure from a cool GPU and
from a hot one? (issue "measurement protocol", §5; results in
docs/perf/thermal.md)

For each workload, each repeat and each policy (in a shuffled order per
repeat), `coolbench run` measures twice in fresh processes: once after
`coolbench wait-cool` (cool start) and once right after `coolbench heat`
heated the GPU in another process (hot start; in-process heating can leave a
hidden slowdown that is not thermal, docs/facts-h200.md §4). Prints, per workload
and policy: the median figure from cool and from hot starts, |hot - cold| /
cold, the CV of the figures over repeats, the median wall time to a result
and the CI half-width reached; and, with --profile, the profile table of a
power-bound workload.

With --processes K each baseline policy also measures K times from a cool
start, each in a fresh process: on a GPU whose figure is a property of the
CUDA context (docs/perf/thermal.md, "Contexts"), that is what a baseline's
user must do to get a CI that holds for the next process, and it is the
fair "same CI width" for the wall-time target: the mean of K figures with its
Student-t CI, against the coolbench policy's mean over contexts. Since both
CIs narrow as 1/sqrt(n), the wall time to equal widths is wall * width^2.

A call of the GPU machine lasts at most 10 minutes, so run one workload per
call (--workload) and keep what it prints; each call writes OUT/results.jsonl
(one line per run, small), OUT/samples.jsonl (every run's samples, compact:
phase, burst, context, latency, kept, reason; to see where a figure came
from) and OUT/summary.md. Then --from combines the
results.jsonl of several calls into one table (no GPU needed), with the
issue's targets for the coolbench policy checked against the baselines.

    python3 bench/thermal_invariance.py --workload power=gemm:bf16:8192:8192:8192:1 \\
        --repeats 2 --preheat 30 --out $OUT
    python3 bench/thermal_invariance.py --from power/results.jsonl latency/results.jsonl
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

POLICIES = ["coolbench", "naive", "fixed-sleep", "clock-discard"]


def run(command, check=True):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - started
    if check and done.returncode != 0:
        sys.exit(f"thermal_invariance: {' '.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done, wall


def heat_end_temperature(heat_output):
    """The GPU temperature `coolbench heat` printed at its end ("GPU 0 at end: 61 C, ..."):
    how hot the pre-heat left the GPU, before the measuring process started."""
    for line in heat_output.splitlines():
        if " at end: " in line:
            word = line.split(" at end: ", 1)[1].split(" ", 1)[0]
            try:
                return float(word)
            except ValueError:
                return None
    return None


SAMPLE_FIELDS = ["phase", "burst", "context", "latency_ms", "kept", "throttle_reason"]


def compact_samples(doc, name, spec, policy, start, repeat):
    """One run's samples as rows of SAMPLE_FIELDS (about a seventh of the run JSON's size)."""
    return {
        "workload": name, "spec": spec, "policy": policy, "start": start, "repeat": repeat,
        "gpu": (doc["environment"].get("gpu") or {}).get("uuid"),
        "start_temp_c": doc["environment"]["start_temp_c"],
        "fields": SAMPLE_FIELDS,
        "samples": [[s["phase"], s["burst"], s["context"], round(s["latency_ms"], 6), s["kept"],
                     s["throttle_reason"]] for s in doc["samples"]],
    }


def measure(o, name, spec, policy, start, repeat, out_dir):
    """One `coolbench run`; returns the compact record."""
    coolbench = os.path.join(o.build, "bin", "coolbench")
    heat_end_temp_c = None
    if start in ("cool", "process"):
        run([coolbench, "wait-cool", "--device", str(o.device), "--below", str(o.cool_below),
             "--timeout", "600", "--quiet"])
    else:
        heated, _ = run([coolbench, "heat", "--device", str(o.device), "--seconds", str(o.preheat)])
        heat_end_temp_c = heat_end_temperature(heated.stdout)
    path = os.path.join(out_dir, f"{name}-{policy}-{start}-{repeat}.json")
    command = [coolbench, "run", "--device", str(o.device), "--workload", spec, "--policy",
               policy, "--rel-ci", str(o.rel_ci), "--max-time", str(o.max_time), "--json", path,
               "--quiet"]
    if policy == "coolbench" and o.contexts:
        command += ["--contexts", str(o.contexts)]
    done, wall = run(command, check=False)
    with open(path) as f:
        doc = json.load(f)
    os.remove(path)  # the run's JSON is large: its samples go to samples.jsonl, compact
    with open(os.path.join(out_dir, "samples.jsonl"), "a") as f:
        f.write(json.dumps(compact_samples(doc, name, spec, policy, start, repeat)) + "\n")
    summary = doc["summary"]
    # The run's figure: the mean of the per-context medians when the run was
    # spread over contexts, else the median.
    contexts = summary.get("contexts")
    pooled = summary["latency"]["median_ms"]
    if contexts:
        median, ci = contexts["mean_ms"], contexts["ci_ms"]
    else:
        median, ci = pooled, summary["median_ci_ms"]
    return {
        "workload": name, "spec": spec, "policy": policy, "start": start, "repeat": repeat,
        "exit": done.returncode, "complete": doc["complete"], "median_ms": median,
        "pooled_median_ms": pooled,
        "contexts": contexts["count"] if contexts else 1,
        "context_medians_ms": [c["median_ms"] for c in contexts["per_context"]] if contexts else [],
        "ci_half_width_rel": (ci[1] - ci[0]) / 2 / median if ci and median else None,
        "converged": summary["converged"], "stop_reason": summary["stop_reason"],
        "kept": summary["latency"]["count"], "discarded": summary["discarded"],
        "timer_step_ms": summary.get("timer_step_ms"),
        "wall_s": wall, "gating_s": summary["seconds_gating"],
        "start_temp_c": doc["environment"]["start_temp_c"], "heat_end_temp_c": heat_end_temp_c,
        "temp_range_c": summary["temp_range_c"], "clock_range_mhz": summary["sm_clock_range_mhz"],
    }


def cv(values):
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else None


def milliseconds(value):
    """Five significant digits: a 20 us figure needs them as much as a 1 ms one."""
    return f"{value:.5g} ms"


def table(records):
    """Markdown: one row per workload and policy."""
    lines = ["| workload | policy | cool start | hot start | \\|hot − cold\\| / cold | CV over "
             "repeats (cool, hot) | wall time to result | CI half-width | contexts |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["workload"], r["policy"]) for r in records},
                  key=lambda k: (k[0], POLICIES.index(k[1]) if k[1] in POLICIES else 99))
    for workload, policy in keys:
        f = cell(records, workload, policy)
        if f is None:
            continue
        lines.append(
            f"| {workload} | {policy} | {milliseconds(f['cool_ms'])} | {milliseconds(f['hot_ms'])} | "
            f"{f['hot_cold'] * 100:.2f}% | "
            + ", ".join("n/a" if v is None else f"{v * 100:.2f}%" for v in (f["cv_cool"], f["cv_hot"]))
            + f" | {f['wall_s']:.1f} s | "
            + (f"±{f['ci_half_width'] * 100:.2f}%" if f["ci_half_width"] is not None else "n/a")
            + f" | {f['contexts']:g} |")
    return "\n".join(lines) + "\n"


# The targets for the coolbench policy (|hot - cold| / cold, CV over
# repeats, wall time against the fixed-sleep baseline at the same --rel-ci).
TARGET_HOT_COLD = 0.003
TARGET_CV = 0.002
TARGET_WALL_VS_FIXED_SLEEP = 0.5


def cell(records, workload, policy):
    """The figures of one workload and policy, or None without both starts."""
    rows = [r for r in records if r["workload"] == workload and r["policy"] == policy]
    cool = [r["median_ms"] for r in rows if r["start"] == "cool" and r["median_ms"]]
    hot = [r["median_ms"] for r in rows if r["start"] == "hot" and r["median_ms"]]
    if not cool or not hot:
        return None
    c, h = statistics.median(cool), statistics.median(hot)
    widths = [r["ci_half_width_rel"] for r in rows if r["ci_half_width_rel"] is not None]
    return {
        "cool_ms": c, "hot_ms": h, "hot_cold": abs(h - c) / c,
        "cv_cool": cv(cool), "cv_hot": cv(hot),
        "wall_s": statistics.median([r["wall_s"] for r in rows]),
        "ci_half_width": statistics.median(widths) if widths else None,
        "not_converged": sum(1 for r in rows if not r["converged"]),
        # Records from before runs were spread over contexts measured one.
        "contexts": statistics.median([r.get("contexts", 1) for r in rows]),
        "runs": len(rows),
    }


def targets(records):
    """Markdown lines: each target of the coolbench policy, met or not, per workload."""
    lines = []
    for workload in sorted({r["workload"] for r in records}):
        ours = cell(records, workload, "coolbench")
        if ours is None:
            continue
        checks = [(f"|hot − cold| / cold = {ours['hot_cold'] * 100:.2f}% (≤ "
                   f"{TARGET_HOT_COLD * 100:.1f}%)", ours["hot_cold"] <= TARGET_HOT_COLD)]
        cvs = [v for v in (ours["cv_cool"], ours["cv_hot"]) if v is not None]
        if cvs:
            checks.append((f"CV over repeats = {max(cvs) * 100:.2f}% (≤ {TARGET_CV * 100:.1f}%)",
                           max(cvs) <= TARGET_CV))
        else:
            checks.append(("CV over repeats: one repeat only", False))
        fixed = cell(records, workload, "fixed-sleep")
        if fixed is not None:
            ratio = ours["wall_s"] / fixed["wall_s"]
            checks.append((f"wall time {ours['wall_s']:.1f} s = {ratio:.2f}× fixed-sleep's "
                           f"{fixed['wall_s']:.1f} s (≤ {TARGET_WALL_VS_FIXED_SLEEP}×)",
                           ratio <= TARGET_WALL_VS_FIXED_SLEEP))
        else:
            checks.append(("wall time: no fixed-sleep runs to compare", False))
        if ours["not_converged"]:
            checks.append((f"{ours['not_converged']} of {ours['runs']} runs did not reach the CI",
                           False))
        for text, met in checks:
            lines.append(f"- {workload}, coolbench: {text}: {'met' if met else 'NOT met'}")
    return "\n".join(lines) + ("\n" if lines else "")


def timer_steps(records):
    """Markdown lines: per workload, the timer's step against the figure (records
    from before the step was reported have none)."""
    lines = []
    for workload in sorted({r["workload"] for r in records}):
        steps = [(r["timer_step_ms"], r["median_ms"]) for r in records
                 if r["workload"] == workload and r.get("timer_step_ms") and r["median_ms"]]
        if steps:
            step, median = min(steps)
            lines.append(f"- {workload}: timer step {step:.6f} ms, {100 * step / median:.3f}% of "
                         "the figure")
    return "\n".join(lines) + ("\n" if lines else "")


def student_t_quantile(p, df):
    """The p-quantile of Student's t with df degrees of freedom (Simpson's rule
    on the density, bisection; 1e-9 is far below what a CI needs, and the
    device machine need not have scipy)."""
    log_norm = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
                - 0.5 * math.log(df * math.pi))

    def density(x):
        return math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))

    def cdf(t):  # t >= 0
        steps = 4000
        h = t / steps
        area = density(0) + density(t)
        area += sum((4 if i % 2 else 2) * density(i * h) for i in range(1, steps))
        return 0.5 + area * h / 3

    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while cdf(high) < p:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cdf(middle) < p else (low, middle)
    return (low + high) / 2


def mean_ci_half_width(values, level=0.95):
    """Half-width of the Student-t CI of the mean, relative to the mean."""
    if len(values) < 2:
        return None
    mean = statistics.mean(values)
    t = student_t_quantile(0.5 + level / 2, len(values) - 1)
    return t * statistics.stdev(values) / math.sqrt(len(values)) / mean


def processes(records):
    """Markdown: each baseline's figures over fresh processes (start
    "process"), against the coolbench policy's cool-start runs; empty without
    such records."""
    rows = [r for r in records if r["start"] == "process" and r["median_ms"]]
    if not rows:
        return ""
    lines = ["## Across fresh processes\n",
             "| workload | policy | runs | mean of their figures | figures range | CV | "
             "CI half-width of the mean | wall time | wall time at coolbench's CI width |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for workload in sorted({r["workload"] for r in rows}):
        ours = [r for r in records if r["workload"] == workload and r["policy"] == "coolbench"
                and r["start"] == "cool" and r["median_ms"] and r["ci_half_width_rel"]]
        our_width = statistics.median([r["ci_half_width_rel"] for r in ours]) if ours else None
        our_wall = statistics.median([r["wall_s"] for r in ours]) if ours else None
        if ours:
            figures = [r["median_ms"] for r in ours]
            lines.append(
                f"| {workload} | coolbench (one run, over contexts) | {len(ours)} | "
                f"{milliseconds(statistics.mean(figures))} | "
                f"{milliseconds(min(figures))} – {milliseconds(max(figures))} | "
                + ("n/a" if cv(figures) is None else f"{cv(figures) * 100:.2f}%")
                + f" | ±{our_width * 100:.2f}% (its own) | {our_wall:.1f} s per run | "
                f"{our_wall:.1f} s |")
        for policy in POLICIES:
            mine = [r for r in rows if r["workload"] == workload and r["policy"] == policy]
            if len(mine) < 2:
                continue
            figures = [r["median_ms"] for r in mine]
            width = mean_ci_half_width(figures)
            wall = sum(r["wall_s"] for r in mine)
            scaled = wall * (width / our_width) ** 2 if our_width and width else None
            lines.append(
                f"| {workload} | {policy} | {len(mine)} | {milliseconds(statistics.mean(figures))} | "
                f"{milliseconds(min(figures))} – {milliseconds(max(figures))} | "
                f"{cv(figures) * 100:.2f}% | ±{width * 100:.2f}% | {wall:.1f} s | "
                + (f"{scaled:.1f} s |" if scaled is not None else "n/a |"))
            if policy == "fixed-sleep" and scaled and our_wall:
                ratio = our_wall / scaled
                verdicts.append(
                    f"- {workload}, coolbench: wall time at equal CI width over processes "
                    f"{our_wall:.1f} s = {ratio:.2f}× fixed-sleep's {scaled:.1f} s (≤ "
                    f"{TARGET_WALL_VS_FIXED_SLEEP}×): "
                    f"{'met' if ratio <= TARGET_WALL_VS_FIXED_SLEEP else 'NOT met'}")
            if ours:
                gap = statistics.mean(figures) / statistics.mean(
                    [r["median_ms"] for r in ours]) - 1
                verdicts.append(f"- {workload}, {policy}: its mean over processes is "
                                f"{gap * 100:+.2f}% from coolbench's figure")
    return "\n".join(lines) + "\n\n" + "\n".join(verdicts) + ("\n" if verdicts else "")


def report(records):
    main = [r for r in records if r["start"] != "process"]
    across = processes(records)
    return ("# thermal_invariance\n\n" + table(main) + "\n" + targets(main)
            + timer_steps(main) + ("\n" + across if across else ""))


def read_records(paths):
    records = []
    for path in paths:
        with open(path) as f:
            records.extend(json.loads(line) for line in f if line.strip())
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--workload", action="append",
                        help="NAME=SPEC, e.g. power=gemm:bf16:8192:8192:8192:1 (repeatable)")
    parser.add_argument("--from", dest="inputs", nargs="+", metavar="RESULTS_JSONL",
                        help="only combine these results.jsonl files into one table")
    parser.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--preheat", type=float, default=30, help="seconds of coolbench heat")
    parser.add_argument("--cool-below", type=int, default=42)
    parser.add_argument("--rel-ci", type=float, default=0.001,
                        help="CI half-width to stop at, every policy alike (the targets are "
                        "0.3%% and 0.2%%: a 0.5%% CI cannot show them)")
    parser.add_argument("--max-time", type=float, default=60)
    parser.add_argument("--profile", help="SPEC: also one profile-mode run of this workload")
    parser.add_argument("--profile-time", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--contexts", type=int,
                        help="--contexts for the coolbench policy (default: coolbench run's)")
    parser.add_argument("--processes", type=int, default=0, metavar="K",
                        help="also measure each baseline policy K times from a cool start, "
                        "each in a fresh process (the CI that holds for the next process)")
    parser.add_argument("--out")
    o = parser.parse_args()
    if o.inputs:
        records = read_records(o.inputs)
        print(report(records), end="")
        return
    if not o.workload or not o.out:
        parser.error("give --workload and --out to measure, or --from to combine results")
    os.makedirs(o.out, exist_ok=True)
    workloads = []
    for item in o.workload:
        name, sep, spec = item.partition("=")
        if not sep or not spec.startswith("gemm:"):
            sys.exit(f"thermal_invariance: --workload takes NAME=gemm:..., got '{item}'")
        workloads.append((name, spec))

    rng = random.Random(o.seed)
    results_path = os.path.join(o.out, "results.jsonl")
    records = []
    started = time.monotonic()
    with open(results_path, "a") as results:
        for name, spec in workloads:
            for repeat in range(o.repeats):
                order = list(o.policies)
                rng.shuffle(order)
                for policy in order:
                    for start in ("cool", "hot"):
                        record = measure(o, name, spec, policy, start, repeat, o.out)
                        records.append(record)
                        results.write(json.dumps(record) + "\n")
                        results.flush()
                        print(f"[{time.monotonic() - started:6.0f} s] {name} {policy} {start} "
                              f"#{repeat}: {record['median_ms']:.4f} ms "
                              f"({record['stop_reason']}, {record['wall_s']:.1f} s)", flush=True)
            baselines = [p for p in o.policies if p != "coolbench"]
            for repeat in range(o.processes):
                rng.shuffle(baselines)
                for policy in baselines:
                    record = measure(o, name, spec, policy, "process", repeat, o.out)
                    records.append(record)
                    results.write(json.dumps(record) + "\n")
                    results.flush()
                    print(f"[{time.monotonic() - started:6.0f} s] {name} {policy} process "
                          f"#{repeat}: {record['median_ms']:.4f} ms ({record['wall_s']:.1f} s)",
                          flush=True)

    text = report(records)
    if o.profile:
        coolbench = os.path.join(o.build, "bin", "coolbench")
        run([coolbench, "wait-cool", "--device", str(o.device), "--below", str(o.cool_below),
             "--timeout", "600", "--quiet"])
        done, _ = run([coolbench, "run", "--device", str(o.device), "--workload", o.profile,
                       "--mode", "profile", "--profile-time", str(o.profile_time)])
        marker = "Latency against GPU temperature"
        text += "\n## Profile: " + o.profile + "\n\n" + done.stdout[done.stdout.find(marker):]
    with open(os.path.join(o.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
