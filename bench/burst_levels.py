#!/usr/bin/env python3
"""Burst levels: where the spread of a cold-mode figure comes from (no GPU).

Reads the samples that bench/thermal_invariance.py keeps (OUT/samples.jsonl:
one line per run, rows named by its "fields") and prints, for each coolbench
run, its figure (the median of the kept samples), the median of each burst,
and two 95 % intervals of the figure: the order-statistic one the protocol
stops on, which takes the samples as independent, and a percentile bootstrap
that resamples whole bursts (a burst is one CUDA context and one stretch of
cold state). Then, over the runs of each workload and start: the CV of the
figures against what each interval says it should be (half-width / 1.96).

- CV near the order-statistic expectation: the samples are as independent as
  the stopping rule assumes.
- CV near the burst-bootstrap expectation and above the other: the level
  moves from burst to burst, and a CI over bursts would cover it.
- CV above both: the level moves from process to process (more contexts per
  run, or more runs, not a wider interval within one run, would show it).

Last column: the samples the first-burst rule dropped (docs/measure.md), their
median against the figure, and what the figure would have been with them.

    python3 bench/burst_levels.py OUT/samples.jsonl [MORE.jsonl ...]
"""

import argparse
import math
import random
import statistics
import sys
from collections import defaultdict

from thermal_invariance import read_records

FIRST_BURST_REASON = "first burst, after the full warm-up"  # src/measure/protocol.cpp
RESAMPLES = 4000
LEVEL = 0.95


def order_statistic_ci(values, level=LEVEL):
    """The distribution-free interval of the median: [x_(k), x_(n-k+1)], k the
    largest with P(B <= k-1) <= (1-level)/2, B ~ binomial(n, 1/2)."""
    x = sorted(values)
    n = len(x)
    alpha = (1 - level) / 2
    k, cumulative = 0, 0.0
    while k < n:
        p = math.comb(n, k) / 2 ** n
        if cumulative + p > alpha:
            break
        cumulative += p
        k += 1
    if k == 0:
        return None  # too few samples for the level
    return x[k - 1], x[n - k]


def burst_bootstrap_ci(groups, rng, level=LEVEL):
    """Percentile bootstrap of the pooled median, resampling whole bursts."""
    medians = []
    for _ in range(RESAMPLES):
        pool = [v for _ in groups for v in rng.choice(groups)]
        medians.append(statistics.median(pool))
    medians.sort()
    lo = medians[int((1 - level) / 2 * (RESAMPLES - 1))]
    hi = medians[int((1 + level) / 2 * (RESAMPLES - 1))]
    return lo, hi


def columns(run):
    return {name: i for i, name in enumerate(run["fields"])}


def kept_by_burst(run):
    col = columns(run)
    bursts = defaultdict(list)
    for row in run["samples"]:
        if row[col["phase"]] == "measure" and row[col["kept"]]:
            bursts[row[col["burst"]]].append(row[col["latency_ms"]])
    return dict(sorted(bursts.items()))


def dropped_by_first_burst_rule(run):
    col = columns(run)
    return [row[col["latency_ms"]] for row in run["samples"]
            if row[col["throttle_reason"]] == FIRST_BURST_REASON]


def first_burst_rule_effect(dropped, kept, figure):
    if not dropped:
        return "none"
    theirs = statistics.median(dropped)
    with_them = statistics.median(kept + dropped)
    return (f"{len(dropped)}, {(theirs / figure - 1) * 100:+.2f}%; "
            f"figure with them {(with_them / figure - 1) * 100:+.3f}%")


def half_width(ci, centre):
    return (ci[1] - ci[0]) / 2 / centre if ci else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", metavar="SAMPLES_JSONL")
    parser.add_argument("--seed", type=int, default=1)
    o = parser.parse_args()
    rng = random.Random(o.seed)
    runs = [r for r in read_records(o.inputs) if r["policy"] == "coolbench"]
    if not runs:
        sys.exit("burst_levels: no coolbench-policy runs in " + ", ".join(o.inputs))

    print("| run | start | kept | bursts | figure | order-statistic CI | burst-bootstrap CI "
          "| burst medians (samples) | first-burst rule dropped |")
    print("|---|---|---|---|---|---|---|---|---|")
    by_group = defaultdict(list)
    for r in runs:
        bursts = kept_by_burst(r)
        kept = [v for g in bursts.values() for v in g]
        if not kept:
            continue
        figure = statistics.median(kept)
        iid = half_width(order_statistic_ci(kept), figure)
        clustered = half_width(burst_bootstrap_ci(list(bursts.values()), rng), figure)
        name = f"{r['workload']} {r['start']} #{r['repeat']}"
        levels = " ".join(f"{statistics.median(g):.4f} ({len(g)})" for g in bursts.values())
        print(f"| {name} | {r['start_temp_c']} °C | {len(kept)} | {len(bursts)} | {figure:.4f} ms "
              f"| ±{iid * 100:.3f}% | ±{clustered * 100:.3f}% | {levels} "
              f"| {first_burst_rule_effect(dropped_by_first_burst_rule(r), kept, figure)} |")
        by_group[(r["workload"], r["start"])].append((figure, iid, clustered))

    print()
    for (workload, start), rows in sorted(by_group.items()):
        if len(rows) < 2:
            continue
        figures = [f for f, _, _ in rows]
        cv = statistics.stdev(figures) / statistics.mean(figures)
        iid = statistics.mean(i for _, i, _ in rows) / 1.96
        clustered = statistics.mean(c for _, _, c in rows) / 1.96
        print(f"- {workload} {start}: {len(rows)} runs, CV of the figures {cv * 100:.3f}%; "
              f"expected from the order-statistic CI {iid * 100:.3f}%, "
              f"from the burst bootstrap {clustered * 100:.3f}%")


if __name__ == "__main__":
    main()
