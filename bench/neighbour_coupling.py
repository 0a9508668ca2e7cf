#!/usr/bin/env python3
"""What heating GPU K does to a measurement on GPU J (docs/perf/multi-gpu.md).

Each repeat measures J twice with `coolbench run`, in an order that alternates (baseline
first in odd repeats, heated first in even ones, so a slow drift does not favour one):
  baseline: K idle;
  heated:   `coolbench heat --device K` in another process, started --preheat seconds before
            the run and stopped after it.
`coolbench monitor` records K (and J) every 200 ms throughout. The table gives, per run, K's
temperature and power while J was measured, J's start temperature, J's temperature and SM
clock over the kept samples, the time J spent gating, and J's figure with its CI; then the
change from baseline to heated and `coolbench compare`'s verdict on each pair.

  python3 bench/neighbour_coupling.py --build build --measured 0 --heated 1 --out DIR
  python3 bench/neighbour_coupling.py --from DIR        # the tables again, no GPU

Standard library only, so it runs with the GPU machine's python3.
"""
import argparse
import csv
import json
import pathlib
import shlex
import signal
import statistics
import subprocess
import sys
import time


def start(cmd, log):
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # monitor and heat end cleanly on Ctrl-C
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def one_run(a, exe, out, name, heated):
    """One measurement of J, with K heated or idle; returns the paths it wrote."""
    # The heater runs until stopped: however this run ends (the run failing to start, Ctrl-C,
    # SIGTERM from a time limit), it and the monitors are stopped before this returns.
    background = []
    with open(out / f"{name}.log", "w") as log:
        try:
            for d in (a.measured, a.heated):
                background.append(start([exe, "monitor", "--device", str(d), "--period", "200",
                                         "--csv", str(out / f"{name}.gpu{d}.csv")], log))
            if not heated:  # K idle and cool again after a heated run (J's gate waits for J)
                subprocess.run([exe, "wait-cool", "--below", str(a.cool_below), "--device",
                                str(a.heated), "--timeout", "600"],
                               stdout=log, stderr=subprocess.STDOUT)
            else:
                background.insert(0, start([exe, "heat", "--device", str(a.heated), "--seconds",
                                            "0", "--workload", a.heat_workload], log))
                time.sleep(a.preheat)
            run = [exe, "run", "--workload", a.workload, "--device", str(a.measured), "--quiet",
                   "--max-time", str(a.max_time), "--json", str(out / f"{name}.json")]
            run += shlex.split(a.run_args)
            started = time.time()
            done = subprocess.run(run, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            ended = time.time()
        finally:
            for process in background:  # the heater first
                stop(process)
    (out / f"{name}.txt").write_text(done.stdout)
    (out / f"{name}.window").write_text(json.dumps({"from": started, "to": ended,
                                                    "exit": done.returncode}))
    print(f"{name}: exit {done.returncode}", flush=True)


def monitor_stats(csv_path, window):
    """Median temperature and power of a monitor CSV within the run's wall-clock window."""
    temps, powers = [], []
    if not csv_path.exists():
        return None, None
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            t = float(row["unix_time_s"])
            if window["from"] <= t <= window["to"]:
                if row["temp_gpu_c"]:
                    temps.append(float(row["temp_gpu_c"]))
                if row["power_w"]:
                    powers.append(float(row["power_w"]))
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    return med(temps), med(powers)


def run_stats(doc):
    """J's figure, CI, start temperature, temperature and SM clock over the kept samples."""
    s = doc["summary"]
    contexts = s.get("contexts")
    # A run that kept nothing (its gate timed out, it failed) has no figure: n/a in the tables.
    figure = contexts["mean_ms"] if contexts else (s.get("latency") or {}).get("median_ms")
    ci = (contexts or {}).get("ci_ms") if contexts else s.get("median_ci_ms")
    kept = [x for x in doc["samples"] if x["kept"] and x["phase"] == "measure"]
    temps = [x["temp_c"] for x in kept if x["temp_c"] is not None]
    clocks = [x["sm_clock_mhz"] for x in kept if x["sm_clock_mhz"] is not None]
    return {
        "figure": figure, "ci": ci, "start": doc["environment"].get("start_temp_c"),
        "temp": statistics.median(temps) if temps else None,
        "clock": statistics.median(clocks) if clocks else None,
        "gating": s.get("seconds_gating"), "complete": doc.get("complete", False),
    }


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def table(a, exe, out):
    rows, pairs = [], {}
    for window_file in sorted(out.glob("*.window")):
        name = window_file.stem
        window = json.loads(window_file.read_text())
        condition, repeat = name.rsplit("_", 1)
        run_json = out / f"{name}.json"
        if not run_json.exists():
            rows.append(f"| {condition} | {repeat} | no run document (exit {window['exit']}) |")
            continue
        r = run_stats(json.loads(run_json.read_text()))
        k_temp, k_power = monitor_stats(out / f"{name}.gpu{a.heated}.csv", window)
        pairs.setdefault(repeat, {})[condition] = (r, run_json)
        ci = f"{r['ci'][0]:.5f}–{r['ci'][1]:.5f}" if r["ci"] else "n/a"
        rows.append(
            f"| {condition} | {repeat} | {fmt(k_temp, '.0f')} | {fmt(k_power, '.0f')} | "
            f"{fmt(r['start'], '.0f')} | {fmt(r['temp'], '.0f')} | {fmt(r['clock'], '.0f')} | "
            f"{fmt(r['gating'], '.1f')} | {fmt(r['figure'], '.5f')} | {ci} |"
            + ("" if r["complete"] else " incomplete |"))
    print(f"GPU {a.measured} measured ({a.workload}), GPU {a.heated} heated or idle\n")
    print("| condition | repeat | GPU K temp (C) | GPU K power (W) | GPU J start temp (C) | "
          "GPU J temp, kept (C) | GPU J SM clock, kept (MHz) | J gating (s) | J figure (ms) | "
          "J CI (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n| repeat | J figure change | J temp change (C) | J SM clock change (MHz) | "
          "compare heated vs baseline |\n|---|---|---|---|---|")
    for repeat, p in sorted(pairs.items()):
        if "baseline" not in p or "heated" not in p:
            continue
        (b, bj), (h, hj) = p["baseline"], p["heated"]
        verdict = "n/a"
        if exe is not None:
            done = subprocess.run([exe, "compare", str(bj), str(hj), "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if done.stdout.strip():
                verdict = json.loads(done.stdout)["comparisons"][0].get("verdict", "n/a")
        dt = None if b["temp"] is None or h["temp"] is None else h["temp"] - b["temp"]
        dc = None if b["clock"] is None or h["clock"] is None else h["clock"] - b["clock"]
        change = ("n/a" if h["figure"] is None or not b["figure"]
                  else f"{100 * (h['figure'] / b['figure'] - 1):+.2f}%")
        print(f"| {repeat} | {change} | {fmt(dt, '+.0f')} | "
              f"{fmt(dc, '+.0f')} | {verdict} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--measured", type=int, default=0, help="GPU J, measured")
    p.add_argument("--heated", type=int, default=1, help="GPU K, heated")
    p.add_argument("--workload", default="gemm:fp16:gpt2-small")
    p.add_argument("--heat-workload", default="gemm:bf16:8192:8192:8192:4")
    p.add_argument("--preheat", type=float, default=60, help="s of heating before the run")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--cool-below", type=float, default=45, help="K's temperature before a baseline")
    p.add_argument("--max-time", type=float, default=60)
    p.add_argument("--run-args", default="",
                   help="more coolbench run options, one string split as a shell would")
    p.add_argument("--out", type=pathlib.Path)
    p.add_argument("--from", dest="from_dir", type=pathlib.Path, help="tabulate a finished DIR")
    a = p.parse_args()
    exe = str(pathlib.Path(a.build) / "bin" / "coolbench")
    if a.from_dir is not None:
        args = json.loads((a.from_dir / "args.json").read_text())
        a.measured, a.heated, a.workload = args["measured"], args["heated"], args["workload"]
        table(a, exe if pathlib.Path(exe).exists() else None, a.from_dir)
        return 0
    if a.out is None or a.measured == a.heated:
        p.error("give --out DIR, and two different GPUs for --measured and --heated")
    # A time limit's SIGTERM unwinds like Ctrl-C, so the heater on K is stopped (one_run).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "args.json").write_text(json.dumps(vars(a), default=str))
    for i in range(1, a.repeats + 1):
        order = ("baseline", "heated") if i % 2 else ("heated", "baseline")
        for condition in order:
            one_run(a, exe, a.out, f"{condition}_{i}", condition == "heated")
    table(a, exe, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
