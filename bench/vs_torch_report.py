"""Tables and the JSON of bench/engine_vs_torch.py, from its JSONL records
(no GPU, no torch: `--from` runs anywhere).

Records (one JSON object a line, `kind`):
  measure   one process's figure for one engine and configuration
  ceiling   the copy bandwidth and GEMM FLOP/s of one dtype, measured in that run
  prepare   the ONNX export and PyTorch's reference outputs of a configuration
  profile   one engine's per-kernel time on one configuration
Records with `error` say what failed; the table lists them and goes on.
"""
import math
import os
import statistics
import subprocess

# Student's t quantile t(0.975, df), df 1..30 (scipy.stats.t.ppf, 4 decimals).
_T975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423]
CI_METHOD = "Student-t 95 % over processes (mean of the processes' figures)"


def commit():
    """COOLBENCH_COMMIT, or `git describe --always --dirty` of this folder's checkout; a dirty
    tree adds the hash of its files as git would store them ("5123fbd-dirty-1a2b3c4"), so two
    trees over one commit (two device calls with a change between them) are told apart and
    --top-up pools neither with the other."""
    if os.environ.get("COOLBENCH_COMMIT"):
        return os.environ["COOLBENCH_COMMIT"]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10, cwd=here)
        described = out.stdout.strip() or "unknown"
        if described.endswith("-dirty"):
            described += tree_suffix(here)
        return described
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def tree_suffix(folder):
    """"-" and 7 digits of the working tree's hash (tracked and untracked files, not ignored
    ones), through a scratch index so the checkout's own index stays as it is (the files'
    blobs go to git's object store, as `git stash` puts them); "" where git cannot."""
    import tempfile
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                         timeout=10, cwd=folder).stdout.strip()
    if not top:
        return ""
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(scratch, "index"))
        added = subprocess.run(["git", "add", "-A"], capture_output=True, text=True, timeout=60,
                               cwd=top, env=env)
        tree = subprocess.run(["git", "write-tree"], capture_output=True, text=True, timeout=30,
                              cwd=top, env=env).stdout.strip()
    return f"-{tree[:7]}" if added.returncode == 0 and tree else ""


def t975(df):
    if df < 1:
        raise ValueError("a t interval needs two values at least")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964  # Cornish-Fisher expansion beyond the table (error < 1e-4 from df 30)
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def mean_ci(values):
    """(mean, half-width) of the 95 % Student-t interval; half-width None for one value."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    return mean, t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def aggregate(records):
    """One row per (configuration, engine): the mean over its processes with
    the CI, the ratio to the best PyTorch mode of the same configuration, the
    work against the ceilings of the record's dtype."""
    measures = [r for r in records if r.get("kind") == "measure"]
    # A mean over processes of different GPUs is no one GPU's figure: a row per GPU, its ratio
    # against the PyTorch modes on that GPU and its shares of that GPU's ceilings.
    ceilings = {}
    for r in records:
        if r.get("kind") == "ceiling" and not r.get("error"):
            # The newest of each GPU (by UUID, which tells two machines' H100s apart, and by
            # name for records that have no UUID) and dtype wins.
            for gpu in (r.get("gpu_uuid"), r.get("gpu"), None):
                ceilings[(gpu, r["dtype"])] = r
    # Nor is a mean over processes run with different engine switches (COOLBENCH_*) one figure.
    groups = {}
    for r in measures:
        settings = tuple(sorted((r.get("settings") or {}).items()))
        groups.setdefault((r["config"], r["engine"], r.get("gpu"), settings), []).append(r)
    rows = []
    for (config, engine, gpu, settings), group in groups.items():
        ok = [r for r in group if r.get("figure_ms") is not None and not r.get("error")]
        first = group[0]
        row = {k: first.get(k) for k in ("engine", "config", "model", "dtype", "batch", "seq",
                                         "past", "size", "flops", "parameters", "weight_bytes",
                                         "bytes_min")}
        row.update(processes=len(ok), failed=len(group) - len(ok),
                   errors=sorted({r["error"] for r in group if r.get("error")}))
        if ok:
            figures = [r["figure_ms"] for r in ok]
            mean, half = mean_ci(figures)
            row.update(figure_ms=mean, ci_ms=half, ci_method=CI_METHOD,
                       ci_low_ms=None if half is None else mean - half,
                       ci_high_ms=None if half is None else mean + half,
                       per_process_ms=figures,
                       cv_over_processes=(statistics.stdev(figures) / mean
                                          if len(figures) > 1 else None),
                       converged=sum(bool(r.get("converged")) for r in ok),
                       hold=sorted({str(r.get("hold")) for r in ok}),
                       timing=sorted({r.get("timing") for r in ok if r.get("timing")}),
                       timer=sorted({r.get("timer") for r in ok if r.get("timer")}),
                       execution=_execution(ok),
                       compile_s=_mean_of(ok, "compile_s"), build_s=_mean_of(ok, "build_s"),
                       max_abs_diff=_max_of(ok, "max_abs_diff"),
                       **_hidden_state(ok),
                       date=max(r.get("date", "") for r in ok),
                       gpu=first.get("gpu"), driver=first.get("driver"),
                       commit=first.get("commit"), torch=first.get("torch"))
        else:
            row.update(figure_ms=None, ci_ms=None)
        row["comparable"] = comparable(row)
        row["gpu"] = gpu
        if settings:
            row["settings"] = dict(settings)
        uuid = first.get("gpu_uuid")
        _against_ceilings(row, (uuid and ceilings.get((uuid, row["dtype"])))
                          or ceilings.get((gpu, row["dtype"])))
        rows.append(row)
    for r in records:  # the first compile, from a cold cache, per engine and configuration
        if r.get("kind") == "warm" and r.get("compile_s") is not None:
            for row in rows:
                if (row["config"], row["engine"]) == (r["config"], r["engine"]):
                    row["compile_cold_s"] = r["compile_s"]
    _ratios(rows)
    order = {e: i for i, e in enumerate(("coolbench", "torch_eager", "torch_graph",
                                         "torch_compile_ro", "torch_compile_ma"))}
    rows.sort(key=lambda r: (r["config"], r["gpu"] or "", order.get(r["engine"], 99)))
    return rows


def comparable(row):
    """coolbench's figure is comparable with the held PyTorch ones only when
    its samples were GPU time (device events): a session.run timed around its
    host copies is not."""
    if row["engine"] != "coolbench":
        return True
    return row.get("timer") == ["device events"]


def _execution(records):
    """coolbench's execution modes (host, eager, graph) over the processes."""
    modes = {(r.get("execution") or {}).get("mode") for r in records}
    modes.discard(None)
    return sorted(modes) or None


def _hidden_state(records):
    """How many processes' sentinel saw hidden state (docs/measure.md, "Hidden state"), and
    how many of those the isolation cleared, of the processes that ran the sentinel."""
    checked = [r.get("hidden_state") for r in records if r.get("hidden_state")]
    seen = [h for h in checked if h.startswith("hidden state: sentinel")]
    return dict(hidden_state_checked=len(checked), hidden_state_seen=len(seen),
                hidden_state_cleared=sum("cleared by" in h and "not cleared" not in h
                                         for h in seen))


def _mean_of(records, key):
    values = [r[key] for r in records if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def _max_of(records, key):
    values = [r[key] for r in records if r.get(key) is not None]
    return max(values) if values else None


def _against_ceilings(row, ceiling):
    row["flop_ceiling"] = ceiling.get("gemm_flop_per_s") if ceiling else None
    row["bw_ceiling"] = ceiling.get("copy_bytes_per_s") if ceiling else None
    figure = row.get("figure_ms")
    if figure:
        row["flop_per_s"] = row["flops"] / (figure / 1e3) if row.get("flops") else None
        row["bytes_per_s"] = row["bytes_min"] / (figure / 1e3) if row.get("bytes_min") else None
    for kind, work, ceiling_key in (("bw", "bytes_min", "bw_ceiling"),
                                    ("flops", "flops", "flop_ceiling")):
        limit = row.get(ceiling_key)
        row[f"floor_{kind}_ms"] = row[work] / limit * 1e3 if limit and row.get(work) else None
    if row.get("weight_bytes") and row.get("bw_ceiling"):
        row["floor_weights_ms"] = row["weight_bytes"] / row["bw_ceiling"] * 1e3


def _ratios(rows):
    """ratio = figure / the best (lowest) PyTorch mode's figure of the configuration."""
    best = {}
    for r in rows:
        key = (r["config"], r.get("gpu"))
        if r["engine"].startswith("torch_") and r.get("figure_ms"):
            if key not in best or r["figure_ms"] < best[key][1]:
                best[key] = (r["engine"], r["figure_ms"])
    for r in rows:
        engine, figure = best.get((r["config"], r.get("gpu")), (None, None))
        r["best_torch"] = engine
        r["ratio_to_best_torch"] = (r["figure_ms"] / figure
                                    if figure and r.get("figure_ms") else None)


def _si(value, unit):
    if value is None:
        return "–"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _share(value, limit):
    return f" ({value / limit:.1%})" if value and limit else ""


def table(rows):
    head = ("| engine | model | dtype | batch | seq | processes | figure (ms) ± CI | "
            "ratio to best torch | FLOP/s (of GEMM ceiling) | bytes/s (of copy ceiling) | "
            "floor: least bytes / copy bw | compile, cached | note |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    several_gpus = len({r.get("gpu") for r in rows}) > 1
    for r in rows:
        figure = "failed" if r.get("figure_ms") is None else (
            f"{r['figure_ms']:.4f}" + (f" ± {r['ci_ms']:.4f}" if r.get("ci_ms") else " (1 process)"))
        ratio = f"{r['ratio_to_best_torch']:.3f}×" if r.get("ratio_to_best_torch") else "–"
        seq = f"{r['seq']}+{r['past']} past" if r.get("past") else str(r["seq"])
        notes = [f"on {r.get('gpu') or 'an unnamed GPU'}"] if several_gpus else []
        if r.get("settings"):
            notes.append("with " + " ".join(f"{k}={v}" for k, v in r["settings"].items()))
        if not r["comparable"]:
            notes.append("host copies, not comparable")
        if r.get("execution"):
            notes.append("runs as " + ", ".join(r["execution"]))
        if r.get("hold") and "False" in r["hold"]:
            notes.append("not held (the callable waits for the GPU)")
        if r.get("failed"):
            notes.append(f"{r['failed']} failed: " + "; ".join(e[:120] for e in r["errors"]))
        if r.get("max_abs_diff") is not None:
            notes.append(f"max abs Δ vs eager {r['max_abs_diff']:.2g}")
        if r.get("hidden_state_seen"):
            notes.append(f"hidden state seen in {r['hidden_state_seen']} of "
                         f"{r['hidden_state_checked']} processes, {r['hidden_state_cleared']} "
                         "cleared before measuring")
        floor = "–"
        if r.get("floor_bw_ms"):
            floor = f"{r['floor_bw_ms']:.4f} ms" + (
                f" ({r['figure_ms'] / r['floor_bw_ms']:.1f}× it)" if r.get("figure_ms") else "")
        compile_s = "–"
        if r.get("compile_s") is not None:
            compile_s = f"{r['compile_s']:.1f} s" + (
                f" (cold {r['compile_cold_s']:.0f} s)" if r.get("compile_cold_s") else "")
        lines.append(
            f"| {r['engine']} | {r['model']} | {r['dtype']} | {r['batch']} | {seq} | "
            f"{r['processes']} | {figure} | {ratio} | "
            f"{_si(r.get('flop_per_s'), 'FLOP/s')}{_share(r.get('flop_per_s'), r.get('flop_ceiling'))} | "
            f"{_si(r.get('bytes_per_s'), 'B/s')}{_share(r.get('bytes_per_s'), r.get('bw_ceiling'))} | "
            f"{floor} | {compile_s} | {'; '.join(notes)} |")
    return "\n".join(lines)


def ceilings_table(records):
    rows = [r for r in records if r.get("kind") == "ceiling"]
    if not rows:
        return "No ceilings measured (a CPU run has none)."
    lines = ["| dtype | device-to-device copy | GEMM (torch.matmul) | GPU | note |",
             "|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['dtype']} | – | – | {r.get('gpu')} | failed: {r['error'][:200]} |")
            continue
        lines.append(f"| {r['dtype']} | {_si(r['copy_bytes_per_s'], 'B/s')} ({r['copy_bytes'] / 2**30:.0f} GiB "
                     f"read + written, best of {r['runs']}) | {_si(r['gemm_flop_per_s'], 'FLOP/s')} "
                     f"({r['gemm_shape']}, best of {r['runs']}) | {r.get('gpu')} | "
                     f"median: {_si(r['copy_bytes_per_s_median'], 'B/s')}, "
                     f"{_si(r['gemm_flop_per_s_median'], 'FLOP/s')} |")
    return "\n".join(lines)


def profiles_text(records):
    parts = []
    for r in records:
        if r.get("kind") != "profile":
            continue
        title = f"### {r['engine']} on {r['config']}"
        if r.get("error"):
            parts.append(f"{title}\n\nfailed: {r['error'][:400]}")
            continue
        p = r["kernels"]
        if not p["top"]:
            parts.append(f"{title}\n\nno {p['activity']} activity recorded by torch.profiler"
                         + (f" ({r['note']})" if r.get("note") else ""))
            continue
        lines = [title, "",
                 f"{p['total_us_per_run']:.1f} µs of {p['activity']} time per run in "
                 f"{p['calls_per_run']:.0f} kernels and copies ({p['kinds']} kinds), "
                 f"{p['runs']} runs under torch.profiler"
                 + (f"; left out: {', '.join(p['left_out'])}, {p['left_out_us_per_run']:.1f} µs "
                    f"per run ({r.get('note') or 'not the model'})"
                    if p.get("left_out_us_per_run") else ""), "",
                 "| kernel | calls per run | µs per run | share |", "|---|---|---|---|"]
        for k in p["top"]:
            share = f"{k['share']:.1%}" if k.get("share") is not None else "–"
            lines.append(f"| `{k['name'][:110]}` | {k['calls_per_run']:.1f} | "
                         f"{k['us_per_run']:.1f} | {share} |")
        if p.get("other_us_per_run"):
            lines.append(f"| (the rest) | | {p['other_us_per_run']:.1f} | |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def hidden_state_after_table(records):
    """One row per kind of process: how many `coolbench hidden-state` checks right after it
    found hidden state, and their shifts (empty when the run made none)."""
    groups = {}
    for r in records:
        if r.get("kind") == "hidden_state_after":
            groups.setdefault((r.get("config"), r.get("engine")), []).append(r)
    if not groups:
        return ""
    lines = ["| after | configuration | checks | hidden state | shifts as found | failed |",
             "|---|---|---|---|---|---|"]
    for (config, engine), group in sorted(groups.items(), key=lambda kv: (str(kv[0][0]),
                                                                         str(kv[0][1]))):
        ok = [r for r in group if not r.get("error") and r.get("shift") is not None]
        seen = sum(bool(r.get("hidden_state")) for r in ok)
        shifts = ", ".join(f"{100 * r['shift']:+.1f} %" for r in ok)
        failed = len(group) - len(ok)
        lines.append(f"| {engine} | {config} | {len(ok)} | {seen} of {len(ok)} | "
                     f"{shifts or '–'} | {failed or ''} |")
    return "\n".join(lines)


def json_rows(rows):
    """The records of docs/perf/engine_vs_torch.json: the issue's fields first."""
    keys = ("engine", "model", "dtype", "batch", "seq", "processes", "figure_ms", "ci_ms",
            "date", "gpu", "driver", "commit")
    out = []
    for r in rows:
        record = {k: r.get(k) for k in keys}
        record.update({k: v for k, v in r.items() if k not in record})
        out.append(record)
    return out
