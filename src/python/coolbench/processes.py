"""A callable measured in fresh processes: ``coolbench.measure(TARGET, processes=N)``.

A callable keeps its CUDA context (``release="keep"``), so a run in one process
measures one context's draw (docs/python.md). A callable that can be made again
by name runs instead under ``coolbench exec`` (docs/cli/exec.md), each context
a fresh process: ``python -m coolbench.processes TARGET`` imports it, calls it
in a loop and prints each call's latency as a ``latency_ms VALUE`` line.

TARGET is ``package.module:function`` or ``path/to/script.py:function``. Each
call is timed with CUDA events around it on PyTorch's current stream when
PyTorch and a GPU are there (the synchronize after the end event is outside
the span), else with the host clock.
"""
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def load_target(target):
    """The callable TARGET names; ValueError saying the form when it names none."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"processes= needs 'package.module:function' or 'script.py:function', "
                         f"got {target!r}")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(where).stem, where)
        if spec is None or not Path(where).is_file():
            raise ValueError(f"no script {where!r}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{target!r}: {name!r} is not a callable of {where!r}")
    return fn


def _timer():
    """A function that calls fn once and returns its latency in ms."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("COOLBENCH_DEVICE", "0")))
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)

            def cuda_events(fn):
                start.record()
                fn()
                end.record()
                end.synchronize()
                return start.elapsed_time(end)
            return cuda_events
    except ImportError:
        pass

    def host_clock(fn):
        began = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - began) / 1e6
    return host_clock


def serve(target):
    """Calls TARGET until stopped, printing `latency_ms VALUE` lines (the worker's loop)."""
    fn = load_target(target)
    time_once = _timer()
    while True:
        print(f"latency_ms {time_once(fn):.6f}", flush=True)


class ProcessesResult:
    """The figure over fresh processes: `figure_ms` (the mean of the processes' medians),
    `ci_ms` (lower, upper: the few-level CI across them, docs/stats.md), `processes` (how many
    counted), `per_process_ms`, `converged`, `summary` (the text `coolbench exec` printed) and
    `document` (its run JSON, docs/run-json.md)."""

    def __init__(self, document, summary):
        self.document = document
        self.summary = summary
        contexts = document["summary"].get("contexts") or {}
        self.figure_ms = contexts.get("mean_ms")
        self.ci_ms = tuple(contexts["ci_ms"]) if contexts.get("ci_ms") else None
        self.per_process_ms = [c["median_ms"] for c in contexts.get("per_context", [])]
        self.processes = len(self.per_process_ms)
        self.converged = document["summary"]["converged"]

    def __repr__(self):
        if self.figure_ms is None or self.ci_ms is None:
            return f"<coolbench.ProcessesResult: no figure, {self.processes} processes>"
        half = (self.ci_ms[1] - self.ci_ms[0]) / 2 / self.figure_ms
        return (f"<coolbench.ProcessesResult {self.figure_ms:.5g} ms ±{half * 100:.2f}% over "
                f"{self.processes} processes{', converged' if self.converged else ''}>")


def _flag(name):
    return "--" + name.replace("_", "-")


def measure_in_processes(target, processes, device=0, coolbench=None, **options):
    """Runs `coolbench exec --contexts processes` on the worker for TARGET; options are the
    protocol's keywords (as coolbench.measure's). Raises RuntimeError with exec's message when it
    fails."""
    load_target(target)  # a bad name is the caller's error, said here and not in N processes
    if not isinstance(processes, int) or processes < 2:
        raise ValueError(f"processes must be an integer of at least 2, got {processes!r}")
    if coolbench is None:
        from .__main__ import command_path
        coolbench = str(command_path())
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "run.json")
        command = [coolbench, "exec", "--device", str(device), "--contexts", str(processes),
                   "--json", path, "--quiet"]
        for name, value in options.items():
            if value is not None:
                command += [_flag(name), str(value)]
        command += ["--", sys.executable, "-m", "coolbench.processes", target]
        env = dict(os.environ)
        package_parent = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if not os.path.exists(path):
            raise RuntimeError(f"coolbench exec exited {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()}")
        with open(path) as f:
            document = json.load(f)
    result = ProcessesResult(document, done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"coolbench exec exited {done.returncode}: "
                           f"{document.get('error') or done.stderr.strip()}")
    return result


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m coolbench.processes package.module:function|script.py:function")
    serve(sys.argv[1])
