#!/usr/bin/env python3
"""Issue 21's detection table, with a state that forms inside the measuring process
(docs/perf/hidden-state.md §14).

On H100s the state did not form from the reference program's disturbances in coolbench's own
processes, and did not outlive the process that formed it; but 1.5 s of a small fp16
torch.matmul measured by coolbench.measure left the sentinel +4.5 to +5.6 % in 6 of 6 runs.
So each trial here is one fresh process that prepares the GPU one way, then measures the same
small GEMM with coolbench.measure(isolation="touch"), whose sentinel checks the GPU as found,
touches, calibrates and judges:

  formed  coolbench.measure of the small GEMM first (isolation "none", --form-seconds): the
          state should be there, the check "start, as found" should flag it and the touch
          clear it;
  large   three bf16 8192^3 torch.matmul first (the reference program's disturbance, which
          through PyTorch did not form the state: 0 of 2): heavy work, no state expected;
  clean   nothing first.

The kinds alternate in a shuffled order each round. The table gives, per kind, how many
trials flagged hidden state as found, the shifts and thresholds, whether the check before
the first burst (after the touch) was back within its noise, and how many checks after the
run flagged it again (the small GEMM forms it while it is measured). Target (issue 21 §2):
formed flagged in at least 9 of 10, clean and large in none.

--part isolation (issue 21 §4): each trial a fresh process that prepares `clean` or `formed`
as above, then measures a victim (--victim, coolbench's GPT-2-shaped GEMM chain by default,
the sentinel's kind: it read +4 to +6 % in the state) with one isolation:
  clean/none     the reference figure
  formed/none    the state left in place (release="keep": one context throughout)
  formed/touch   another process makes a context and exits first (release="keep")
(No release arm: PyTorch's memory is live in these processes, and a release refuses to reset
a context under another runtime's memory; that is why the protocol's default is the touch.)
The table gives each arm's mean over its processes with a Student-t 95 % interval and its
ratio to clean/none. Target: each isolated arm within 0.3 % of clean.

--part paired: the same comparison inside one context, which the per-context lottery (one
process's figure scatters by 1.7 % around its arm's, §15) cannot blur. Each trial a fresh process
measures the victim (isolation "touch"), then prepares, then measures it again in the same
context; its figure is the second measurement over the first:
  paired/control  nothing in between, the second measured with "touch": what measuring twice does
  paired/none     the state formed in between, the second with "none"
  paired/touch    the state formed in between, the second with "touch"
The table gives each arm's mean ratio with a Student-t 95 % interval and its difference from the
control's. Target: paired/touch within 0.3 % of paired/control.

  python3 bench/hidden_state_trials.py --build build [--trials 10] [--json FILE]
  python3 bench/hidden_state_trials.py --build build --part isolation [--trials 10] [--json FILE]
  python3 bench/hidden_state_trials.py --build build --part paired [--trials 10] [--json FILE]
  python3 bench/hidden_state_trials.py --from FILE     # the table again, no GPU

Needs PyTorch with CUDA and coolbench's Python module (--build puts BUILD/python on the path).
"""
import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import time

KINDS = ("formed", "large", "clean")
ARMS = ("clean/none", "formed/none", "formed/touch")
PAIRED = ("paired/control", "paired/none", "paired/touch")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vs_torch_report import commit, mean_ci  # noqa: E402  (as engine_vs_torch gives them)


# ---- the child: one trial ------------------------------------------------------------------


def child(kind, device, form_seconds, measure_seconds, victim=None):
    """One trial. `kind` is a detection kind, an isolation arm 'PREP/ISOLATION' that
    measures `victim` instead of the small GEMM, or a paired arm that measures `victim` before
    and after (its record's first_ms and figure_ms)."""
    import torch
    import coolbench

    torch.cuda.set_device(device)
    generator = torch.Generator(device=f"cuda:{device}").manual_seed(1)
    x = torch.randn(128, 768, device=f"cuda:{device}", dtype=torch.half, generator=generator)
    w = torch.randn(768, 3072, device=f"cuda:{device}", dtype=torch.half, generator=generator)

    def small_gemm():
        torch.matmul(x, w)

    prepare, _, arm = kind.partition("/")
    first = None
    if prepare == "paired":
        # The victim once clean, in the context the second measurement keeps.
        first = coolbench.measure(victim, device=device, release="keep", isolation="touch",
                                  max_time=measure_seconds)
        if arm != "control":
            coolbench.measure(small_gemm, device=device, release="keep", isolation="none",
                              max_time=form_seconds)
        result = coolbench.measure(victim, device=device, release="keep",
                                   isolation="none" if arm == "none" else "touch",
                                   max_time=measure_seconds)
    else:
        if prepare == "formed":
            coolbench.measure(small_gemm, device=device, release="keep", isolation="none",
                              max_time=form_seconds)
        elif kind == "large":
            a = torch.randn(8192, 8192, device=f"cuda:{device}", dtype=torch.bfloat16)
            b = torch.randn_like(a)
            for _ in range(3):
                torch.matmul(a, b)
            torch.cuda.synchronize()
            del a, b
        if not arm:
            result = coolbench.measure(small_gemm, device=device, release="keep",
                                       isolation="touch", max_time=measure_seconds)
        else:
            result = coolbench.measure(victim, device=device, release="keep", isolation=arm,
                                       max_time=measure_seconds)
    doc = result.to_dict()
    summary = doc.get("summary") or {}
    gpu = (doc.get("environment") or {}).get("gpu") or {}
    print(json.dumps({"kind": kind, "hidden_state": summary.get("hidden_state"),
                      "gpu": gpu.get("name"), "uuid": gpu.get("uuid"),
                      "driver": gpu.get("driver_version"), "figure_ms": result.figure_ms,
                      "rel_ci": result.rel_ci, "workload": result.workload,
                      "first_ms": first.figure_ms if first is not None else None}))


# ---- the parent: trials and the table ------------------------------------------------------


def check_at(record, where):
    """The sentinel check of a trial at `where` ("start, as found", ...), or None."""
    for c in ((record.get("hidden_state") or {}).get("checks") or []):
        if c.get("where", "").startswith(where):
            return c
    return None


def percent(values):
    return ", ".join(f"{100 * v:+.1f}" for v in values) + " %" if values else "–"


def table(records):
    """The detection table: one row per kind, in KINDS' order, as markdown lines."""
    lines = ["| kind | trials | hidden state as found | shifts as found | thresholds | "
             "back within noise after the touch | hidden state after the run | failed |",
             "|---|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        mine = [r for r in records if r.get("kind") == kind]
        if not mine:
            continue
        ok = [r for r in mine if not r.get("error") and r.get("hidden_state")]
        found = [check_at(r, "start, as found") for r in ok]
        found = [c for c in found if c]
        flagged = sum(1 for c in found if c.get("hidden_state"))
        after_touch = [check_at(r, "before burst 1") for r in ok]
        back = sum(1 for c in after_touch if c and not c.get("moved"))
        after_run = [check_at(r, "after the run") for r in ok]
        again = sum(1 for c in after_run if c and c.get("hidden_state"))
        lines.append(
            f"| {kind} | {len(mine)} | {flagged} of {len(found)} | "
            f"{percent([c['shift'] for c in found])} | "
            f"{percent([c['threshold'] for c in found]).replace('+', '')} | "
            f"{back} of {sum(1 for c in after_touch if c)} | "
            f"{again} of {sum(1 for c in after_run if c)} | {len(mine) - len(ok)} |")
    return lines


def arm_rows(records, arms, header, value, cells):
    """A table of one row per arm (the first the reference): its processes' mean of
    `value(record)` with a 95 % interval, and `cells(mean, half, reference)`, the row's figure
    and its comparison with the reference arm's mean."""
    lines = [header, "|---|---|---|---|---|---|"]
    means = {}
    for arm in arms:
        values = [value(r) for r in records if r.get("kind") == arm and not r.get("error")]
        values = [v for v in values if v is not None]
        if values:
            means[arm] = mean_ci(values)
    reference = means.get(arms[0], (None, None))[0]
    for arm in arms:
        mine = [r for r in records if r.get("kind") == arm]
        if not mine:
            continue
        found = [check_at(r, "start, as found") for r in mine if not r.get("error")]
        found = [c for c in found if c]
        flagged = sum(1 for c in found if c.get("hidden_state"))
        figure, against = cells(*means[arm], reference) if arm in means else ("–", "–")
        processes = len(mine) - sum(1 for r in mine if r.get("error"))
        lines.append(f"| {arm} | {processes} | {figure} | {against} | {flagged} of {len(found)} | "
                     f"{len(mine) - processes} |")
    return lines


def isolation_table(records):
    """One row per arm: its processes' mean figure with a 95 % interval, and the ratio to the
    clean arm's mean."""
    def cells(mean, half, clean):
        figure = f"{mean:.4f}" + (f" ± {half:.4f}" if half is not None else "")
        return figure, f"{100 * (mean / clean - 1):+.2f} %" if clean else "–"

    return arm_rows(records, ARMS, "| arm | processes | figure (ms) ± 95 % CI | against "
                    "clean/none | hidden state as found | failed |",
                    lambda r: r.get("figure_ms") or None, cells)


def paired_table(records):
    """One row per paired arm: the mean of its processes' second/first ratios with a 95 %
    interval, and that mean's difference from the control arm's."""
    def ratio(r):
        return r["figure_ms"] / r["first_ms"] - 1 if r.get("figure_ms") and r.get("first_ms") \
            else None

    def cells(mean, half, control):
        cell = f"{100 * mean:+.2f} %" + (f" ± {100 * half:.2f}" if half is not None else "")
        return cell, f"{100 * (mean - control):+.2f} %" if control is not None else "–"

    return arm_rows(records, PAIRED, "| arm | processes | second / first − 1, ± 95 % CI | "
                    "against paired/control | hidden state as found (second) | failed |",
                    ratio, cells)


TABLES = {"detect": table, "isolation": isolation_table, "paired": paired_table}
TITLES = {"detect": "detection", "isolation": "isolation", "paired": "isolation in one context"}


def run_trial(a, kind, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--device", str(a.device),
           "--form-seconds", str(a.form_seconds), "--measure-seconds", str(a.measure_seconds),
           "--victim", a.victim]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "error": f"no answer in {a.timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return {"kind": kind, "error": f"exit {done.returncode}: " + " / ".join(tail)}
    record = json.loads(lines[-1])
    record["process_s"] = round(time.perf_counter() - started, 2)
    return record


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", help="the build folder (its python/ holds the coolbench module)")
    p.add_argument("--device", type=int, default=0, help="CUDA ordinal (default 0)")
    p.add_argument("--trials", type=int, default=10, help="trials of each kind (default 10)")
    p.add_argument("--part", choices=tuple(TABLES), default="detect",
                   help="the detection table (default), the isolation table, or the isolation "
                   "table in one context")
    p.add_argument("--kinds", nargs="+", choices=KINDS,
                   help="detection kinds to run (default: all)")
    p.add_argument("--arms", nargs="+", choices=ARMS + PAIRED,
                   help="arms of --part isolation or paired to run (default: the part's all)")
    p.add_argument("--victim", default="gemm:fp16:gpt2-small",
                   help="the isolation and paired parts' workload name (default gemm:fp16:gpt2-small)")
    p.add_argument("--form-seconds", type=float, default=1.5,
                   help="the forming measurement's max_time (default 1.5)")
    p.add_argument("--measure-seconds", type=float,
                   help="the judged measurement's max_time (default 1.5; 5 for --part isolation "
                   "and paired)")
    p.add_argument("--timeout", type=float, default=120, help="seconds a trial may take")
    p.add_argument("--budget", type=float, default=0,
                   help="stop starting trials after this many seconds (0: no limit)")
    p.add_argument("--seed", type=int, default=21, help="the shuffle's seed")
    p.add_argument("--json", help="write the trials and the table here")
    p.add_argument("--from", dest="from_file", help="print the table of an earlier --json")
    p.add_argument("--child", choices=KINDS + ARMS + PAIRED, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.measure_seconds is None:
        a.measure_seconds = 1.5 if a.part == "detect" else 5.0
    if a.child:
        child(a.child, a.device, a.form_seconds, a.measure_seconds, a.victim)
        return 0
    if a.from_file:
        with open(a.from_file) as f:
            doc = json.load(f)
        print("\n".join(TABLES[doc.get("part") or "detect"](doc["trials"])))
        return 0
    if a.trials < 1:
        p.error("--trials must be at least 1")
    env = dict(os.environ)
    if a.build:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.join(os.path.abspath(a.build), "python"), env.get("PYTHONPATH", "")])
    order = random.Random(a.seed)
    started = time.perf_counter()
    records = []
    if a.part == "detect":
        kinds = a.kinds or list(KINDS)
    else:
        arms = ARMS if a.part == "isolation" else PAIRED
        kinds = [arm for arm in (a.arms or arms) if arm in arms]
        if not kinds:
            p.error(f"--arms: none of them belongs to --part {a.part} ({', '.join(arms)})")
    schedule = []  # (round, kind): every kind once a round, in a shuffled order
    for round_ in range(1, a.trials + 1):
        schedule += [(round_, kind) for kind in order.sample(kinds, len(kinds))]
    for round_, kind in schedule:
        if a.budget and time.perf_counter() - started > a.budget:
            print(f"stopped by the {a.budget:.0f} s budget in round {round_}")
            break
        record = run_trial(a, kind, env)
        record["round"] = round_
        records.append(record)
        found = check_at(record, "start, as found")
        figure = f"{record['figure_ms']:.4f} ms; " if record.get("figure_ms") else ""
        if record.get("first_ms") and record.get("figure_ms"):
            figure = f"{record['first_ms']:.4f} -> {record['figure_ms']:.4f} ms; "
        print(f"[{time.perf_counter() - started:6.0f} s] {kind:12s} " + figure
              + (record.get("error") or (found or {}).get("summary", "no sentinel check")),
              flush=True)
    lines = TABLES[a.part](records)
    first = next((r for r in records if r.get("gpu")), {})
    title = TITLES[a.part]
    print(f"\n## Hidden-state {title} (bench/hidden_state_trials.py)\n")
    print(f"GPU {first.get('gpu')} ({first.get('uuid')}), driver {first.get('driver')}, "
          f"commit {commit()}\n")
    print("\n".join(lines))
    if a.json:
        doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "gpu": first.get("gpu"), "uuid": first.get("uuid"),
               "driver": first.get("driver"), "commit": commit(), "part": a.part,
               "victim": a.victim if a.part != "detect" else None,
               "form_seconds": a.form_seconds, "measure_seconds": a.measure_seconds,
               "trials": records, "table": lines}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 1 if any(r.get("error") for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
