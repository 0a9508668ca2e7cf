#!/usr/bin/env python3
"""coolbench's CUDA backend against the best PyTorch can do, same weights and inputs.

Engines: coolbench (coolbench.Session on the ONNX export of the model),
torch_eager, torch_graph (torch.cuda.CUDAGraph around the same forward),
torch_compile_ro (torch.compile mode="reduce-overhead") and torch_compile_ma
(mode="max-autotune"). Models: transformers' GPT-2 small, BERT-base and
ViT-B/16 from their configurations, random weights from a fixed seed, in
.eval() and the configuration's dtype (no download). Each engine and
configuration runs in its own fresh processes (--processes, 5 by default),
each measured by coolbench.measure with the same settings (cold mode; the
stream held while PyTorch queues its work) and printing one record; the
figure is the mean of the processes' figures with a Student-t 95 % interval
over them. Engines take turns in a shuffled order in every round.

In the same run: ceilings per dtype (a 1 GiB device-to-device copy, an
8192³ GEMM through torch.matmul), the FLOPs and bytes of each configuration
against them, and for the profiled configurations (the headline by default)
the per-kernel time of every engine under torch.profiler.

  python3 bench/engine_vs_torch.py --build build [--configs headline] [--engines ...]
      [--processes 5] [--budget SECONDS] [--jsonl FILE] [--json FILE]
  python3 bench/engine_vs_torch.py --from A.jsonl B.jsonl [--json docs/perf/engine_vs_torch.json]
  python3 bench/engine_vs_torch.py --cpu-smoke --build build     # the plumbing, no GPU

Configurations are MODEL:DTYPE:BATCH[:SEQ[+PAST]] (gpt2:fp16:1:128;
gpt2:fp16:8:1+128 is one token decoded after a 128-token past; vit:fp16:32),
or a set: headline, gpt2-grid, encoders, all. Records go to the JSONL as each
process ends, so a run cut short keeps what it measured; --from rebuilds the
tables from such files. A grid too long for one call: run it again with
--skip-done on the earlier calls' JSONL, which leaves out every configuration
they hold --processes measures of for every engine (one cut short is measured
whole again, so each configuration's ratios come from one run; --from pools
every record it is given, so give it the files of whole configurations). Or
--top-up on the earlier calls' JSONL: it counts their measures taken on this
GPU (each record names its UUID) from this commit, runs only the processes
still missing for --processes of each engine, and prints the tables of both.
Needs PyTorch (CUDA), Triton, transformers, onnx and
coolbench's Python module built with the engine (--build puts BUILD/python on
PYTHONPATH).
"""
import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ENTERED = time.perf_counter()  # a child's setup_s counts from here (vs_torch_child.py)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import vs_torch_models as models  # noqa: E402
import vs_torch_report as report  # noqa: E402

ENGINES = ("coolbench", "torch_eager", "torch_graph", "torch_compile_ro", "torch_compile_ma")
COMPILED = ("torch_compile_ro", "torch_compile_ma")
HEADLINE = "gpt2:fp16:1:128"
SETS = {
    "headline": [HEADLINE],
    "gpt2-grid": [f"gpt2:{d}:{b}:{s}" for d in ("fp16", "bf16", "fp32") for b in (1, 8)
                  for s in ("1+128", "128", "1024")],
    "encoders": ["bert:fp16:1:128", "bert:fp16:32:128", "vit:fp16:1", "vit:fp16:32"],
}
SETS["all"] = SETS["gpt2-grid"] + SETS["encoders"]
SMOKE_CONFIGS = ["gpt2:fp32:1:8", "gpt2:fp32:2:1+8", "bert:fp32:1:8", "vit:fp32:1"]


def parse_configs(items, size):
    keys = []
    for item in items:
        for text in item.split(","):
            for key in SETS.get(text, [text]):
                if key not in keys:
                    keys.append(key)
    return [models.parse_config(k, size) for k in keys]


Step = collections.namedtuple("Step", "child label kw")  # kw: Runner.start's arguments


class Child:
    """A started child: its process, the file its stderr goes to, its log header, when it
    started (or was let go, where it was held) and how long it was held (None: never)."""

    def __init__(self, process, err, header, began, kw=None):
        self.process, self.err, self.header, self.began = process, err, header, began
        self.kw = kw or {}  # Runner.start's arguments: what the child was to do
        self.held_s = None


class Runner:
    """Starts the children, appends their records, keeps to the time budget."""

    def __init__(self, args, commit):
        self.args = args
        self.started = time.perf_counter()
        self.records = []
        self.durations = {}
        self.commit = commit  # report.commit(), which hashes a dirty tree: once a run
        self.env = dict(os.environ)
        paths = [HERE] + ([os.path.join(args.build, "python")] if args.build else [])
        self.env["PYTHONPATH"] = os.pathsep.join(paths + [self.env.get("PYTHONPATH", "")])
        # Inductor's and Triton's caches in the work folder: the first process
        # of a compiled engine fills them, the later ones load from them.
        self.env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(args.work, "inductor"))
        self.env.setdefault("TRITON_CACHE_DIR", os.path.join(args.work, "triton"))
        self.env.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
        self.stopped = None

    def elapsed(self):
        return time.perf_counter() - self.started

    def fits(self, what):
        """Whether a child of kind `what` is likely to end within the budget."""
        if self.args.budget is None:
            return True
        past = self.durations.get(what, []) or self.durations.get(what.split()[0], [])
        expected = max(past) if past else 30.0
        if self.elapsed() + expected > self.args.budget:
            self.stopped = (f"stopped at {self.elapsed():.0f} s of the {self.args.budget:.0f} s "
                            f"budget before a {what} child (expected {expected:.0f} s)")
            return False
        return True

    def command(self, child, engine=None, configs=(), dtype=None, profile=False, held=False):
        a = self.args
        cmd = [sys.executable, os.path.abspath(__file__), "--child", child, "--work", a.work,
               "--device", a.device, "--size", a.size, "--commit", self.commit,
               "--max-time", str(max_time_for(configs, a.max_time)), "--rel-ci", str(a.rel_ci)]
        if a.min_time is not None:
            cmd += ["--min-time", str(a.min_time)]
        if a.min_samples is not None:
            cmd += ["--min-samples", str(a.min_samples)]
        if engine:
            cmd += ["--engine", engine]
        if dtype:
            cmd += ["--dtype", dtype]
        if profile:
            cmd += ["--profile-after"]
        if held:
            cmd += ["--held"]
        if child == "prepare" and "coolbench" not in a.engines:
            cmd += ["--no-export"]  # the references only
        return cmd + [arg for c in configs for arg in ("--config", c.key)]

    def start(self, child, held=False, **kw):
        """Starts a child; held: it loads its imports and waits for go() (a measuring process
        started while the one before it measures). Its stderr goes to a file of its own, which
        finish() appends to the log, so that two children's lines do not interleave there."""
        header = (f"\n==== {child} {kw.get('engine') or ''} "
                  f"{' '.join(c.key for c in kw.get('configs', ()))} {kw.get('dtype') or ''}"
                  f"{' (started held)' if held else ''}\n")
        err = tempfile.TemporaryFile("w+", dir=self.args.work)
        process = subprocess.Popen(self.command(child, held=held, **kw), stdout=subprocess.PIPE,
                                   stderr=err, stdin=subprocess.PIPE if held else None,
                                   text=True, env=self.env)
        return Child(process, err, header, time.perf_counter(), kw)

    @staticmethod
    def go(handle):
        """A held child's turn: it starts its work now, and its process_s counts from here."""
        try:
            handle.process.stdin.write("go\n")
            handle.process.stdin.flush()  # finish()'s communicate() closes it
        except BrokenPipeError:
            pass  # it ended while held (its imports failed): finish() reads its error record
        handle.held_s = time.perf_counter() - handle.began
        handle.began = time.perf_counter()
        return handle

    @staticmethod
    def drop(handle):
        """A held child whose turn will not come (the budget stopped the run): ended unmeasured."""
        try:
            handle.process.stdin.close()  # it reads an empty line and leaves
            handle.process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            handle.process.kill()
            handle.process.wait()
        handle.err.close()

    def finish(self, child, handle, label, cooled_s=None):
        """The child's records, each appended to the JSONL with its process_s (from its start,
        or from its go where it was held; held_s: the seconds it was held) and the seconds
        waited for the GPU to cool before it (cooled_s, where it waited), the first returned."""
        process = handle.process
        timeout = 600
        if self.args.budget is not None:
            timeout = max(60, self.args.budget - self.elapsed() + 60)
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
            out += "\n"
        handle.err.seek(0)
        with open(self.args.log, "a") as log:
            log.write(handle.header)
            log.write(handle.err.read())
            log.write(out[-20000:])
        handle.err.close()
        records = [json.loads(ln[len("RECORD "):]) for ln in out.splitlines()
                   if ln.startswith("RECORD ")]
        if not records:  # it died: a record of what it was to do, so the tables count it
            configs = handle.kw.get("configs") or ()
            records = [{"kind": child, "engine": handle.kw.get("engine"),
                        "config": configs[0].key if configs else None,
                        "dtype": handle.kw.get("dtype"), "commit": self.commit,
                        "error": f"the child printed no record (exit {process.returncode}); "
                        f"its output is in {self.args.log}"}]
        seconds = time.perf_counter() - handle.began
        # What the budget expects a child of this kind to take: its cooling wait too.
        self.durations.setdefault(label, []).append(seconds + (cooled_s or 0.0))
        for record in records:
            record.setdefault("label", label)
            record["process_s"] = seconds
            if handle.held_s is not None:
                record["held_s"] = handle.held_s
            if cooled_s is not None:
                record["cooled_s"] = cooled_s
            self.append(record)
        return records[0]

    def run(self, child, label, **kw):
        """A child that measures nothing (a ceiling), run to its end; measuring processes go
        through run_steps, which cools the GPU before each and starts the next one held."""
        return self.finish(child, self.start(child, **kw), label)

    def wait_cool(self):
        """`coolbench wait-cool` (BUILD/bin) down to --cool-below before a measuring child, so
        that its gate, which counts towards its max_time, finds the GPU cool: after the
        ceilings (30 GEMMs of 8192^3) or max-autotune's tuning the gate waited out the
        child's 10 s and it measured nothing (the H200, 2026-12-06: the first process of 4
        engines of 5). At most 90 s: a GPU that idles above the mark costs that much a
        process, and the record's cooled_s shows it (lower --cool-below, or --no-cool).
        Seconds waited, or None where it does not apply."""
        a = self.args
        exe = os.path.join(a.build, "bin", "coolbench")
        if a.cool_below is None or not a.device.startswith("cuda") or not os.path.exists(exe):
            return None
        began = time.perf_counter()
        try:
            subprocess.run([exe, "wait-cool", "--below", str(a.cool_below), "--device",
                            a.device.split(":")[-1], "--timeout", "90", "--quiet"],
                           capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            pass  # the child's own gate still waits; its record says if that was too long
        return round(time.perf_counter() - began, 2)

    def check_hidden_state(self, label, engine, configs):
        """`coolbench hidden-state` right after a measuring process ended: whether that
        process left the GPU in a state no sensor shows (docs/perf/hidden-state.md §13).
        Its touch clears such a state, so the next process's own check as found tells what
        that process's preparation formed."""
        path = os.path.join(self.args.work, "hidden-state.json")
        exe = os.path.join(self.args.build, "bin", "coolbench")
        record = {"kind": "hidden_state_after", "after": label, "engine": engine,
                  "config": configs[0].key if configs else None, "commit": self.commit}
        began = time.perf_counter()
        try:
            done = subprocess.run([exe, "hidden-state", "--device",
                                   self.args.device.split(":")[-1], "--json", path],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                with open(path) as f:
                    found = json.load(f)
                record.update({k: found.get(k) for k in (
                    "gpu", "as_found_ms", "shift", "threshold", "moved", "sensors_unchanged",
                    "hidden_state", "summary")})
                record["level_ms"] = (found.get("calibration") or {}).get("median_ms")
            else:
                record["error"] = (done.stderr.strip() or done.stdout.strip())[-300:]
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            record["error"] = f"{type(e).__name__}: {e}"
        record["process_s"] = time.perf_counter() - began
        self.durations.setdefault("hidden-state", []).append(record["process_s"])
        self.append(record)

    def append(self, record):
        self.records.append(record)
        with open(self.args.jsonl, "a") as f:
            f.write(json.dumps(record, default=str) + "\n")
        status = record.get("error") or (f"{record['figure_ms']:.4f} ms" if record.get(
            "figure_ms") is not None else "ok")
        print(f"[{self.elapsed():6.0f} s] {record.get('kind')} {record.get('engine') or ''} "
              f"{record.get('config') or record.get('dtype') or record.get('family') or ''}: "
              f"{status}", flush=True)


def prepare(runner, configs, engines):
    """The ONNX exports and references (one child per family) and, at the
    same time, one compile per compiled engine and configuration, so that the
    measured processes load Inductor's cache. Nothing is measured meanwhile."""
    families = {}
    for c in configs:
        families.setdefault(c.family, []).append(c)
    handles = []
    for family, members in families.items():
        handles.append(("prepare", "prepare", runner.start("prepare", configs=members)))
    for c in configs:
        for engine in engines:
            if engine in COMPILED and runner.args.device.startswith("cuda"):
                handles.append(("warm", f"warm {engine}",
                                runner.start("warm", engine=engine, configs=[c])))
    for child, label, handle in handles:
        runner.finish(child, handle, label)


# A forward of this many tokens or more is power-bound on an H100: its cold bursts end after a
# few samples at the cap, so 10 s may hold none (BERT at 32 x 128, 2026-12-06: 2 of 4 PyTorch
# processes kept no sample in 10 s; coolbench's kept 31 and 41).
HEAVY_TOKENS = 2048
MAX_TIME, MAX_TIME_HEAVY = 10.0, 30.0


def profiled_keys(asked, configs, size):
    """The keys of the configurations --profile names: [] (--profile alone) every one of
    `configs`, ["none"] none, else those named (sets allowed)."""
    if not asked:
        return [c.key for c in configs]
    if asked == ["none"]:
        return []
    return [c.key for c in parse_configs(asked, size)]


def max_time_for(configs, asked=None):
    """coolbench.measure's max_time for a child: what --max-time asked, else 10 s, or 30 s when
    a configuration runs HEAVY_TOKENS tokens or more a forward (batch x sequence; ViT's
    patches)."""
    if asked is not None:
        return asked
    heavy = any(c.batch * c.seq >= HEAVY_TOKENS for c in configs)
    return MAX_TIME_HEAVY if heavy else MAX_TIME


def plan(args, configs, engines, need=None, profiled=frozenset()):
    """The children to run, in order, as Steps: --processes fresh processes of each engine and
    configuration, the engines in a shuffled order each round, after each dtype's ceiling;
    `need` (config key, engine) -> processes, where a top-up asks for fewer; `profiled`: the
    (config key, engine) pairs whose profile an earlier run holds."""
    rng = random.Random(args.seed)
    dtypes_done = set()
    steps = []
    for c in configs:
        wanted = {e: args.processes if need is None else need.get((c.key, e), 0)
                  for e in engines}
        if args.ceilings and c.dtype not in dtypes_done and args.device.startswith("cuda"):
            steps.append(Step("ceiling", "ceiling", {"dtype": c.dtype}))
            dtypes_done.add(c.dtype)
        for round_ in range(max(wanted.values(), default=0)):
            order = [e for e in engines if wanted[e] > round_]
            rng.shuffle(order)
            for engine in order:
                # The first process of each engine also profiles, after measuring.
                profile = (round_ == 0 and c.key in args.profile
                           and (c.key, engine) not in profiled)
                label = engine + (" profiled" if profile else "")
                steps.append(Step("measure", label,
                                  {"engine": engine, "configs": [c], "profile": profile}))
    return steps


def run_steps(runner, steps):
    """The steps in order, each measuring process after the GPU cooled. With --prestart (the
    default) the next measuring process is started held while one measures: it loads PyTorch
    and transformers' code meanwhile (no GPU work; its record's held.cuda_initialized says
    so) and starts measuring only after the one before it has ended. Stops where the budget
    would likely be passed."""
    a = runner.args
    spare = None  # (index of its step, the held child)
    try:
        for i, step in enumerate(steps):
            if not runner.fits(step.label):
                return
            if step.child != "measure":
                runner.run(step.child, step.label, **step.kw)
                continue
            cooled_s = runner.wait_cool()
            if spare is not None and spare[0] == i:
                handle, spare = runner.go(spare[1]), None
            else:
                handle = runner.start("measure", **step.kw)
            following = next((j for j in range(i + 1, len(steps))
                              if steps[j].child == "measure"), None)
            if a.prestart and following is not None:
                spare = (following, runner.start("measure", held=True, **steps[following].kw))
            runner.finish("measure", handle, step.label, cooled_s)
            if a.hidden_state_after:
                runner.check_hidden_state(step.label, step.kw["engine"], step.kw["configs"])
    finally:
        if spare is not None:
            runner.drop(spare[1])


def measure_all(runner, configs, engines, need=None, profiled=frozenset()):
    run_steps(runner, plan(runner.args, configs, engines, need, profiled))


def read_records(paths):
    """The records of each JSONL; PATH#CONFIG[,CONFIG...] keeps only those configurations'
    records of that file (and its records of no configuration: ceilings, prepares), so that
    one table can take each configuration from the run that measured it last, not pool
    several runs' processes of it."""
    records = []
    for path in paths:
        path, _, only = path.partition("#")
        keep = set(only.split(",")) if only else None
        with open(path) as f:
            read = [json.loads(line) for line in f if line.strip()]
        records += [r for r in read
                    if keep is None or r.get("config") is None or r["config"] in keep]
    return records


def poolable(records, uuid, commit, size, settings=None):
    """The error-free measures, profiles and ceilings among `records` that a top-up pools with
    its own: taken on this GPU (its UUID), from this commit, at this model size, and
    coolbench's with the engine switches (COOLBENCH_*) this run has, `settings`."""
    settings = settings or {}
    return [r for r in records if r.get("kind") in ("measure", "profile", "ceiling")
            and not r.get("error") and (r["kind"] != "measure" or r.get("figure_ms") is not None)
            and r.get("gpu_uuid") == uuid and r.get("commit") == commit
            and r.get("size", "full") == size and same_switches(r, settings)]


def same_switches(record, settings):
    """Whether `record` was run with the engine switches `settings` (a dict, {} for none): only
    coolbench's records carry them; PyTorch's always match."""
    return record.get("engine") != "coolbench" or (record.get("settings") or {}) == settings


def top_up_need(earlier, keys, engines, processes):
    """(config key, engine) -> the processes still missing for `processes` of each, counting
    the measures in `earlier`; and the (config key, engine) pairs already profiled."""
    have = collections.Counter((r.get("config"), r.get("engine")) for r in earlier
                               if r["kind"] == "measure")
    need = {(k, e): max(0, processes - have[(k, e)]) for k in keys for e in engines}
    profiled = {(r.get("config"), r.get("engine")) for r in earlier if r["kind"] == "profile"}
    return need, profiled


def done_configs(paths, keys, engines, processes, settings=None):
    """The configurations (of `keys`) that the JSONL files at `paths` already hold
    `processes` error-free measures of for every engine (coolbench's with the engine switches
    `settings`): a grid spread over several device calls runs each configuration whole in one
    of them (its ratios are of one run)."""
    settings = settings or {}
    counts = collections.Counter((r.get("config"), r.get("engine")) for r in read_records(paths)
                                 if r.get("kind") == "measure" and not r.get("error")
                                 and r.get("figure_ms") is not None
                                 and same_switches(r, settings))
    return [k for k in keys if all(counts[(k, e)] >= processes for e in engines)]


def print_tables(records, stopped=None):
    rows = report.aggregate(records)
    print("\n## Engines against PyTorch\n")
    print(report.table(rows))
    print(f"\nCI: {report.CI_METHOD}; ratio: figure / the best PyTorch mode's of the same "
          "configuration. FLOP/s and bytes/s: the configuration's FLOPs and least bytes "
          "(weights + inputs + outputs) over the figure. A coolbench row timed around host "
          "copies (session.run) is not comparable with the held PyTorch figures.")
    print("\n## Ceilings\n")
    print(report.ceilings_table(records))
    after = report.hidden_state_after_table(records)
    if after:
        print("\n## Hidden state right after each kind of process (coolbench hidden-state)\n")
        print(after)
    profiles = report.profiles_text(records)
    if profiles:
        print("\n## Per-kernel time\n")
        print(profiles)
    if stopped:
        print(f"\n{stopped}")
    return rows


def options():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--configs", nargs="+", default=["headline"],
                   help="configurations or sets (headline, gpt2-grid, encoders, all)")
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--processes", type=int, default=5, help="fresh processes per engine and "
                   "configuration (default 5)")
    p.add_argument("--build", default="build", help="coolbench's build folder (BUILD/python)")
    p.add_argument("--work", default=os.path.join("build", "engine_vs_torch"),
                   help="exports, references, Inductor's and Triton's caches")
    p.add_argument("--jsonl", help="append every record here (default WORK/records.jsonl)")
    p.add_argument("--log", help="every child's stderr and stdout (default WORK/children.log)")
    p.add_argument("--json", help="write the table's rows here (docs/perf/engine_vs_torch.json)")
    p.add_argument("--budget", type=float, help="seconds: start no child that would likely "
                   "end after this (a device call of 10 minutes: 540)")
    p.add_argument("--profile", nargs="*", metavar="CONFIG", default=[HEADLINE],
                   help="configurations profiled per kernel, by each engine's first process "
                   "after it measured (default the headline; --profile alone: every "
                   "configuration of the run; --profile none: none)")
    p.add_argument("--skip-done", nargs="+", metavar="JSONL", default=[],
                   help="skip the configurations these records already hold --processes "
                   "error-free measures of for every engine (a grid over several calls: a "
                   "configuration cut short is measured whole again in the next)")
    p.add_argument("--top-up", nargs="+", metavar="JSONL", default=[],
                   help="count the error-free measures these records hold of each engine and "
                   "configuration taken on this GPU (its UUID) from this commit, run only the "
                   "processes still missing for --processes, and print the tables of both "
                   "(a configuration spread over several device calls on one machine; the "
                   "file may be --jsonl itself)")
    p.add_argument("--no-ceilings", dest="ceilings", action="store_false")
    p.add_argument("--hidden-state-after", action="store_true",
                   help="run `coolbench hidden-state` (BUILD/bin) after each measuring process: "
                   "whether it left the GPU in a state no sensor shows; its touch clears it "
                   "for the next process (about a second each)")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--cool-below", type=int, default=45,
                   help="°C: before each measuring process, `coolbench wait-cool` (BUILD/bin) "
                   "until the GPU is this cool, outside the process's --max-time (default 45, "
                   "the protocol's gate target; --no-cool: none)")
    p.add_argument("--no-cool", dest="cool_below", action="store_const", const=None)
    p.add_argument("--max-time", type=float,
                   help="coolbench.measure's max_time per process, seconds (default 10, and 30 "
                   f"for configurations of {HEAVY_TOKENS} tokens or more a forward, which the "
                   "power cap cuts into short bursts; the warm-up may take up to 5 of them)")
    p.add_argument("--min-time", type=float, help="coolbench.measure's min_time")
    p.add_argument("--min-samples", type=int, help="coolbench.measure's min_samples")
    p.add_argument("--rel-ci", type=float, default=0.005)
    p.add_argument("--seed", type=int, default=1, help="of the engines' order in each round")
    p.add_argument("--from", dest="from_files", nargs="+", metavar="JSONL",
                   help="only print the tables of these records (and --json); "
                   "JSONL#CONFIG[,CONFIG...] takes only those configurations from that file; "
                   "records of several GPUs make a row per GPU")
    p.add_argument("--no-prestart", dest="prestart", action="store_false",
                   help="start each measuring process only after the one before it ended; by "
                   "default the next one is started meanwhile, held: it loads PyTorch and "
                   "transformers' code (about 12 s a process) with no GPU work, then waits")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="tiny models on the CPU, coolbench and torch_eager, 1 process each: the "
                   "plumbing without a GPU")
    p.add_argument("--child", choices=["prepare", "warm", "ceiling", "measure"],
                   help=argparse.SUPPRESS)
    p.add_argument("--profile-after", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--held", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-export", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--config", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--engine", help=argparse.SUPPRESS)
    p.add_argument("--dtype", help=argparse.SUPPRESS)
    p.add_argument("--size", default="full", choices=["full", "tiny"], help=argparse.SUPPRESS)
    p.add_argument("--commit", default="unknown", help=argparse.SUPPRESS)
    return p


def write_json(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(report.json_rows(rows), f, indent=1, default=str)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main():
    parser = options()
    args = parser.parse_args()
    if args.child:
        import vs_torch_child
        vs_torch_child.ENTERED = ENTERED
        vs_torch_child.run_child(args)  # does not return
    if args.from_files:
        rows = print_tables(read_records(args.from_files))
        if args.json:
            write_json(args.json, rows)
        return 0
    if args.cpu_smoke:
        args.size, args.device, args.processes = "tiny", "cpu", 1
        args.engines = ["coolbench", "torch_eager"]
        if args.configs == ["headline"]:
            args.configs = SMOKE_CONFIGS
        args.profile = [SMOKE_CONFIGS[0]] if args.profile == [HEADLINE] else args.profile
        # Loose, so a busy CPU still converges; max_time above the warm-up's 5 s
        # cap, so a warm-up that does not settle still leaves samples.
        args.max_time, args.min_time, args.min_samples, args.rel_ci = 8.0, 0.1, 5, 0.05
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    try:
        configs = parse_configs(args.configs, args.size)
        args.profile = profiled_keys(args.profile, configs, args.size)
    except ValueError as e:
        parser.error(str(e))
    import vs_torch_child
    switches = vs_torch_child.engine_settings()  # coolbench's records count only with these
    try:
        done = done_configs(args.skip_done, [c.key for c in configs], args.engines,
                            args.processes, switches)
    except (OSError, ValueError) as e:
        parser.error(f"--skip-done: {e}")
    if done:
        print(f"engine_vs_torch: skipping {len(done)} configurations done in "
              f"{', '.join(args.skip_done)}: {' '.join(done)}")
        configs = [c for c in configs if c.key not in done]
        if not configs:
            print("engine_vs_torch: nothing left to measure")
            return 0
    commit = report.commit()
    earlier, need, profiled = [], None, frozenset()
    if args.top_up:
        uuid = vs_torch_child.gpu_identity(args.device, with_uuid=True)[2]
        if uuid is None:
            parser.error(f"--top-up: no UUID from nvidia-smi for {args.device}: the records "
                         "pooled must come from this GPU")
        # A file not there yet (a fresh machine's first call) holds nothing to pool.
        missing = [path for path in args.top_up if not os.path.exists(path)]
        if missing:
            print(f"engine_vs_torch: --top-up: {', '.join(missing)} not there yet: nothing "
                  "earlier from it")
        try:
            earlier = poolable(read_records([p for p in args.top_up if p not in missing]),
                               uuid, commit, args.size, switches)
        except (OSError, ValueError) as e:
            parser.error(f"--top-up: {e}")
        need, profiled = top_up_need(earlier, [c.key for c in configs], args.engines,
                                     args.processes)
        measures = sum(r["kind"] == "measure" for r in earlier)
        print(f"engine_vs_torch: --top-up pools {measures} measures of {uuid} at "
              f"{commit}; {sum(need.values())} processes to go")
        configs = [c for c in configs if any(need[(c.key, e)] for e in args.engines)]
        if not configs:
            rows = print_tables(earlier)
            if args.json:
                write_json(args.json, rows)
            return 0
    os.makedirs(args.work, exist_ok=True)
    args.work = os.path.abspath(args.work)
    args.jsonl = args.jsonl or os.path.join(args.work, "records.jsonl")
    args.log = os.path.abspath(args.log or os.path.join(args.work, "children.log"))
    os.makedirs(os.path.dirname(os.path.abspath(args.jsonl)), exist_ok=True)
    print(f"engine_vs_torch: {len(configs)} configurations × {len(args.engines)} engines × "
          f"{args.processes} processes on {args.device}; records to {args.jsonl}", flush=True)
    models.write_work_counts(args.work, configs, args.size)
    runner = Runner(args, commit)
    prepare(runner, configs, args.engines)
    measure_all(runner, configs, args.engines, need, profiled)
    rows = print_tables(earlier + runner.records, runner.stopped)
    if args.json:
        write_json(args.json, rows)
    failed = [r for r in runner.records if r.get("error")]
    return 1 if failed and len(failed) == len(runner.records) else 0


if __name__ == "__main__":
    sys.exit(main())
