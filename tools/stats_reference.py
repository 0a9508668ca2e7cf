#!/usr/bin/env python3
"""Reference values for coolbench's stats layer, computed with numpy and scipy.

Writes one JSON file that tests/stats/reference_test.cpp reads and compares
with coolbench::stats (the stats_reference_data ctest fixture runs this):

    datasets:  seeded samples (small n, ties, skewed latency-like data) with
               numpy.quantile (default "linear", type 7), mean, std(ddof=1),
               scipy.stats.quantile_test(p=0.5).confidence_interval(level),
               and a percentile bootstrap of the median drawn with the same
               generator and index rule as coolbench (std::mt19937_64,
               reimplemented below and checked against the value the C++
               standard fixes for it)
    mann_whitney: scipy.stats.mannwhitneyu(a, b, alternative="two-sided",
               use_continuity=True, method=...) for asymptotic, exact and auto
    fits:      scipy.stats.linregress(x, y)
    student_t: scipy.stats.t.ppf and .cdf, and per dataset
               scipy.stats.ttest_1samp(x, 0).confidence_interval(level)

Usage: python stats_reference.py --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64 (C++ [rand.predef]): the 64-bit Mersenne Twister with
    its one-integer seeding. Pure Python, enough for a few hundred thousand
    draws."""

    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed: int) -> None:
        self.mt = [0] * self.N
        self.mt[0] = seed & MASK64
        for i in range(1, self.N):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64
        self.index = self.N

    def _twist(self) -> None:
        mt = self.mt
        for i in range(self.N):
            x = (mt[i] & self.UPPER) | (mt[(i + 1) % self.N] & self.LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= self.MATRIX_A
            mt[i] = mt[(i + self.M) % self.N] ^ xa
        self.index = 0

    def __call__(self) -> int:
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def check_generator() -> None:
    """The C++ standard: the 10000th output of a default-constructed
    mt19937_64 (seed 5489) is 9981545732273789042."""
    engine = MT19937_64(5489)
    value = 0
    for _ in range(10000):
        value = engine()
    if value != 9981545732273789042:
        sys.exit(f"stats_reference: mt19937_64 reimplementation is wrong ({value})")


def draw_index(engine: MT19937_64, n: int) -> int:
    """coolbench's rule: reject outputs below 2^64 mod n, then take r mod n."""
    threshold = (1 << 64) % n
    while True:
        r = engine()
        if r >= threshold:
            return r % n


def bootstrap_median_ci(x: np.ndarray, level: float, resamples: int, seed: int) -> list[float]:
    engine = MT19937_64(seed)
    n = len(x)
    medians = np.empty(resamples)
    for b in range(resamples):
        idx = [draw_index(engine, n) for _ in range(n)]
        medians[b] = np.quantile(x[idx], 0.5)
    low, high = np.quantile(medians, [(1 - level) / 2, (1 + level) / 2])
    return [float(low), float(high)]


def datasets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20260601)
    return {
        "hand_5": np.array([3.1, 1.2, 5.5, 2.2, 4.0]),
        "minimal_6": np.array([10.0, 12.5, 11.0, 9.5, 13.0, 10.5]),
        "normal_50": rng.normal(10.0, 1.0, 50),
        # Latency-like: a floor plus a long right tail [ms].
        "latency_lognormal_200": 2.0 + rng.lognormal(-1.0, 0.6, 200),
        # Ties: values rounded to 0.1 ms, and small integers.
        "ties_rounded_80": np.round(rng.normal(5.0, 0.3, 80), 1),
        "ties_integers_12": rng.integers(1, 6, 12).astype(float),
        "pareto_1000": 1.0 + rng.pareto(3.0, 1000),
        "constant_9": np.full(9, 4.25),
    }


QUANTILES = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]
LEVELS = [0.9, 0.95, 0.99]
BOOTSTRAP = {"level": 0.95, "resamples": 400, "seed": 7}


def describe(name: str, x: np.ndarray) -> dict:
    entry = {
        "name": name,
        "values": x.tolist(),
        "quantiles": [[q, float(np.quantile(x, q))] for q in QUANTILES],
        "mean": float(np.mean(x)),
        "stddev": float(np.std(x, ddof=1)) if len(x) > 1 else 0.0,
        "order_statistic_ci": [],
    }
    test = stats.quantile_test(x, q=float(np.median(x)), p=0.5)
    n = len(x)
    for level in LEVELS:
        ci = test.confidence_interval(confidence_level=level)
        if np.isnan(ci.low) or np.isnan(ci.high):
            entry["order_statistic_ci"].append({"level": level, "too_few": True})
            continue
        # Rank k of the lower bound (from 1) and the exact coverage.
        k = int(stats.binom.ppf((1 - level) / 2, n, 0.5))
        coverage = 1.0 - 2.0 * float(stats.binom.cdf(k - 1, n, 0.5))
        entry["order_statistic_ci"].append({
            "level": level, "too_few": False, "lower": float(ci.low), "upper": float(ci.high),
            "coverage": coverage})
    entry["mean_ci"] = []
    if n >= 2 and np.std(x) > 0:
        test_t = stats.ttest_1samp(x, 0.0)
        for level in LEVELS:
            ci = test_t.confidence_interval(confidence_level=level)
            entry["mean_ci"].append({"level": level, "lower": float(ci.low), "upper": float(ci.high)})
    if n <= 200:
        entry["bootstrap_ci"] = dict(BOOTSTRAP, bounds=bootstrap_median_ci(
            x, BOOTSTRAP["level"], BOOTSTRAP["resamples"], BOOTSTRAP["seed"]))
    return entry


def mann_whitney_cases(data: dict[str, np.ndarray]) -> list[dict]:
    rng = np.random.default_rng(7)
    pairs = [
        # (name, a, b, methods to ask scipy for)
        ("normal_shifted", data["normal_50"], data["normal_50"][::-1] + 0.4,
         ["asymptotic", "auto"]),
        ("latency_3pct", data["latency_lognormal_200"],
         2.0 + rng.lognormal(-1.0, 0.6, 150) * 1.03 + 0.06, ["asymptotic", "auto"]),
        ("ties_rounded", data["ties_rounded_80"], np.round(rng.normal(5.1, 0.3, 60), 1),
         ["asymptotic", "auto"]),
        ("ties_small", data["ties_integers_12"], rng.integers(2, 7, 7).astype(float),
         ["asymptotic", "auto"]),
        ("same_distribution", data["normal_50"][:20], data["normal_50"][20:45],
         ["asymptotic", "auto"]),
        ("all_equal", data["constant_9"], np.full(4, 4.25), ["asymptotic"]),
        ("exact_5_7", rng.normal(0, 1, 5), rng.normal(0.8, 1, 7), ["exact", "asymptotic", "auto"]),
        ("exact_3_3", np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]), ["exact", "auto"]),
        ("exact_1_5", np.array([2.5]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), ["exact", "auto"]),
        ("exact_8_40", rng.normal(0, 1, 8), rng.normal(0.5, 1, 40), ["exact", "auto"]),
        ("exact_12_15", rng.normal(0, 1, 12), rng.normal(0.9, 1, 15), ["exact", "asymptotic"]),
        ("exact_30_35", rng.normal(0, 1, 30), rng.normal(0.3, 1, 35), ["exact", "asymptotic"]),
        ("large_skewed", data["pareto_1000"], 1.0 + rng.pareto(2.8, 800), ["asymptotic", "auto"]),
    ]
    cases = []
    for name, a, b, methods in pairs:
        for method in methods:
            result = stats.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
                                        method=method)
            ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
            used = method
            if method == "auto":  # scipy's rule (_mwu_choose_method)
                used = "asymptotic" if (len(a) > 8 and len(b) > 8) or ties else "exact"
            cases.append({
                "name": name, "a": np.asarray(a).tolist(), "b": np.asarray(b).tolist(),
                "method": method, "method_used": used,
                "u": float(result.statistic), "p": float(result.pvalue)})
    return cases


def fit_cases() -> list[dict]:
    rng = np.random.default_rng(11)
    temp = rng.uniform(35.0, 83.0, 300)
    clock = rng.choice(np.arange(1410.0, 1981.0, 15.0), 300)
    inputs = [
        # Latency [ms] rising 0.02 ms per °C with noise.
        ("latency_on_temperature", temp, 4.0 + 0.02 * temp + rng.normal(0, 0.05, 300)),
        # Latency [ms] falling with the SM clock.
        ("latency_on_clock", clock, 9.0 - 0.0025 * clock + rng.normal(0, 0.03, 300)),
        ("three_points", np.array([1.0, 2.0, 4.0]), np.array([2.0, 2.5, 5.0])),
        ("two_points", np.array([1.0, 3.0]), np.array([5.0, 4.0])),
        ("flat_y", np.array([1.0, 2.0, 3.0, 4.0]), np.array([7.0, 7.0, 7.0, 7.0])),
        ("perfect_line", np.arange(10.0), 3.0 - 0.5 * np.arange(10.0)),
    ]
    def number(value: float) -> float | None:
        """JSON has no NaN: scipy's NaN (r of a flat y) becomes null; the test
        then expects coolbench's documented value instead."""
        return None if np.isnan(value) else float(value)

    cases = []
    for name, x, y in inputs:
        fit = stats.linregress(x, y)
        mean_y = float(np.mean(y))
        cases.append({
            "name": name, "x": x.tolist(), "y": y.tolist(),
            "slope": float(fit.slope), "intercept": float(fit.intercept),
            "r": number(fit.rvalue), "slope_stderr": number(fit.stderr),
            "intercept_stderr": number(fit.intercept_stderr),
            "mean_y": mean_y,
            "percent_per_unit": 100.0 * float(fit.slope) / mean_y,
            "percent_per_100_units": 100.0 * 100.0 * float(fit.slope) / mean_y})
    return cases


def student_t_cases() -> list[dict]:
    cases = []
    for df in [1.0, 2.0, 3.0, 4.5, 9.0, 29.0, 199.0, 5000.0]:
        for p in [1e-6, 0.001, 0.025, 0.05, 0.3, 0.5, 0.8, 0.95, 0.975, 0.995, 0.999999]:
            q = float(stats.t.ppf(p, df))
            cases.append({"df": df, "p": p, "quantile": q, "cdf_at_quantile": float(stats.t.cdf(q, df))})
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write")
    args = parser.parse_args()
    check_generator()
    data = datasets()
    reference = {
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "datasets": [describe(name, x) for name, x in data.items()],
        "mann_whitney": mann_whitney_cases(data),
        "fits": fit_cases(),
        "student_t": student_t_cases(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(reference, indent=1, allow_nan=False))
    print(f"stats_reference: wrote {args.out} (numpy {np.__version__}, scipy {scipy.__version__})")


if __name__ == "__main__":
    main()
