"""bench/neighbour_coupling.py against a stand-in `coolbench` (no GPU): whatever ends a run, the
heater it started on GPU K and the monitors are stopped; --run-args is split as a shell would.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "neighbour_coupling.py"

# monitor and heat run until SIGINT (as coolbench's do) and leave NAME-PID.started and
# NAME-PID.stopped; run records its arguments and, with a heater running and FAKE_TERM set,
# sends SIGTERM to the script (a time limit ending it), then waits to be killed.
FAKE = textwrap.dedent(
    """\
    import json, os, pathlib, signal, sys, time
    state = pathlib.Path(os.environ["FAKE_STATE"])
    command = sys.argv[1]
    if command in ("monitor", "heat"):
        mark = state / f"{command}-{os.getpid()}"
        signal.signal(signal.SIGINT, lambda *_: (mark.with_suffix(".stopped").touch(), sys.exit(0)))
        mark.with_suffix(".started").touch()
        for _ in range(600):
            time.sleep(0.1)
        sys.exit(3)
    if command == "run":
        with open(state / "run-args.jsonl", "a") as f:
            f.write(json.dumps(sys.argv[1:]) + "\\n")
        if os.environ.get("FAKE_EMPTY_RUN"):  # a run that kept nothing: no figure
            doc = {"complete": False, "samples": [], "environment": {"start_temp_c": 40},
                   "summary": {"latency": None, "median_ci_ms": None, "seconds_gating": 300}}
            path = sys.argv[sys.argv.index("--json") + 1]
            pathlib.Path(path).write_text(json.dumps(doc))
        if os.environ.get("FAKE_TERM") and list(state.glob("heat-*.started")):
            os.kill(os.getppid(), signal.SIGTERM)
            time.sleep(10)
        sys.exit(1)
    sys.exit(0)
    """
)


@pytest.fixture
def fake_build(tmp_path):
    exe = tmp_path / "build" / "bin" / "coolbench"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!{sys.executable}\n" + FAKE)
    exe.chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    yield tmp_path / "build", state
    for started in state.glob("*.started"):  # nothing left running, whatever the test found
        if not started.with_suffix(".stopped").exists():
            try:
                os.kill(int(started.stem.split("-")[1]), signal.SIGKILL)
            except ProcessLookupError:
                pass


def bench(build, state, out, *extra, term=False, empty=False):
    env = dict(os.environ, FAKE_STATE=str(state))
    if term:
        env["FAKE_TERM"] = "1"
    if empty:
        env["FAKE_EMPTY_RUN"] = "1"
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--build", str(build), "--measured", "0", "--heated", "1",
         "--repeats", "1", "--preheat", "0.5", "--out", str(out), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def test_a_sigterm_during_the_heated_run_stops_the_heater_and_the_monitors(fake_build, tmp_path):
    build, state = fake_build
    done = bench(build, state, tmp_path / "out", term=True)
    assert done.returncode == 128 + signal.SIGTERM, done.stdout
    started = sorted(p.stem for p in state.glob("*.started"))
    assert any(name.startswith("heat-") for name in started)
    assert sorted(p.stem for p in state.glob("*.stopped")) == started


def test_run_args_are_split_as_a_shell_would(fake_build, tmp_path):
    build, state = fake_build
    done = bench(build, state, tmp_path / "out", "--run-args", "--label 'GPU 0 next to a hot one'")
    assert done.returncode == 0, done.stdout
    runs = [json.loads(line) for line in (state / "run-args.jsonl").read_text().splitlines()]
    assert len(runs) == 2
    for args in runs:
        assert args[-2:] == ["--label", "GPU 0 next to a hot one"]
    assert sorted(p.stem for p in state.glob("*.stopped")) == sorted(
        p.stem for p in state.glob("*.started"))


def test_runs_without_a_figure_are_tabulated_as_n_a(fake_build, tmp_path):
    build, state = fake_build
    done = bench(build, state, tmp_path / "out", empty=True)
    assert done.returncode == 0, done.stdout
    assert "| baseline | 1 |" in done.stdout and "| heated | 1 |" in done.stdout
    assert "| 1 | n/a |" in done.stdout
