"""The Python module on the host: a callable measured under the protocol,
the result and its renderings, errors as Python exceptions, Ctrl-C.
GPU cases are in test_gpu.py."""
import json
import os
import signal
import time

import pytest

import coolbench

QUICK = dict(min_time=0.05, max_time=5.0, rel_ci=0.02, min_samples=20)


def spin(seconds):
    """Busy-waits: steadier on a loaded machine than a sleep."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_a_callable_is_measured_with_setup_and_teardown_once():
    calls = {"setup": 0, "run": 0, "teardown": 0}

    def setup():
        calls["setup"] += 1

    def run():
        assert calls["setup"] == 1 and calls["teardown"] == 0
        calls["run"] += 1
        spin(0.001)

    def teardown():
        calls["teardown"] += 1

    r = coolbench.measure(run, setup=setup, teardown=teardown, **QUICK)
    assert r.complete and r.converged, r.stop_reason
    assert calls["setup"] == 1 and calls["teardown"] == 1
    assert 1.0 <= r.figure_ms < 5.0
    assert r.figure_ms == r.median_ms  # one context on the host
    low, high = r.ci_ms
    assert low <= r.figure_ms <= high
    assert r.rel_ci <= 0.02
    assert len(r.latencies_ms) >= 20
    assert calls["run"] >= len(r.latencies_ms)  # and the warm-up
    assert r.workload == "callable test_a_callable_is_measured_with_setup_and_teardown_once.<locals>.run"
    assert r.final_release == ""  # nothing of a GPU to hand back
    assert "converged" in repr(r) and "ms" in repr(r)


def test_the_result_renders_as_the_command_does(tmp_path):
    r = coolbench.measure(lambda: spin(0.0005), name="spin 0.5 ms", flops=1e6, **QUICK)
    doc = r.to_dict()
    assert doc["schema"] == "coolbench.run/1"
    assert doc["workload"] == "spin 0.5 ms"
    assert doc["complete"] is True
    assert doc["summary"]["latency"]["count"] == len(r.latencies_ms)
    assert doc["summary"]["latency"]["median_ms"] == pytest.approx(r.median_ms)
    assert json.loads(r.to_json()) == doc
    assert "median" in r.summary()
    lines = r.csv().splitlines()
    assert len(lines) == 1 + len(doc["samples"])
    # One field list drives both: the CSV's columns are a JSON sample's members.
    assert lines[0].split(",")[12] == "context"
    assert sorted(lines[0].split(",")) == sorted(doc["samples"][0])

    path = tmp_path / "run.json"
    r.write_json(str(path))
    assert json.loads(path.read_text()) == doc
    assert not (tmp_path / "run.json.tmp").exists()
    r.write_csv(str(tmp_path / "run.csv"))
    assert (tmp_path / "run.csv").read_text() == r.csv()


def test_a_baseline_policy_runs_in_the_same_harness():
    r = coolbench.measure(lambda: spin(0.0005), policy="naive", **QUICK)
    assert r.complete
    assert r.to_dict()["configuration"]["policy"] == "naive"


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(mode="hot"), "unknown mode 'hot'"),
        (dict(policy="fastest"), "unknown policy"),
        (dict(release="sometimes"), "unknown release 'sometimes'"),
        (dict(min_samples=50, max_samples=10), "above max_samples"),
        (dict(min_time=10.0, max_time=1.0), "above max_time"),
        (dict(rel_ci=2.0), "rel_ci must be in (0, 1)"),
        (dict(max_time=-1.0), "non-negative number of seconds"),
        (dict(contexts=3), "needs release='reset'"),
        (dict(telemetry_period_ms=0), "telemetry_period_ms"),
    ],
)
def test_bad_options_raise_invalid_argument(options, words):
    with pytest.raises(coolbench.InvalidArgument) as e:
        coolbench.measure(lambda: None, **options)
    assert words in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, coolbench.Error)


def test_a_workload_that_is_neither_callable_nor_a_name_is_refused():
    with pytest.raises(coolbench.InvalidArgument, match="takes a callable"):
        coolbench.measure(42)
    with pytest.raises(coolbench.InvalidArgument, match="unknown workload"):
        coolbench.measure("resnet")
    # A build without the ONNX engine (the lent GPU machine's: its Debian
    # libraries are not there) cannot load any model, and says that instead.
    with pytest.raises((coolbench.InvalidArgument, coolbench.NotAvailable)) as e:
        coolbench.measure("missing.onnx")
    if isinstance(e.value, coolbench.NotAvailable):
        assert "built without the ONNX engine" in str(e.value)
    else:
        assert "no model file" in str(e.value)
    with pytest.raises(coolbench.InvalidArgument, match="setup, teardown and hold go with a callable"):
        coolbench.measure("gemm:fp16:128:128:128", setup=lambda: None)


def test_the_callables_exception_is_raised_again_as_it_was():
    runs = []

    def run():
        runs.append(1)
        if len(runs) == 7:
            raise ZeroDivisionError("the model divided by zero")

    with pytest.raises(ZeroDivisionError, match="the model divided by zero") as e:
        coolbench.measure(run, **QUICK)
    notes = getattr(e.value, "__notes__", [])
    assert any("after 6 completed runs" in n for n in notes), notes


def test_a_failing_setup_or_teardown_is_raised_too():
    def broken_setup():
        raise RuntimeError("cannot load the model")

    with pytest.raises(RuntimeError, match="cannot load the model"):
        coolbench.measure(lambda: None, setup=broken_setup, **QUICK)

    def broken_teardown():
        raise OSError("cannot free")

    with pytest.raises(OSError, match="cannot free"):
        coolbench.measure(lambda: spin(0.0002), teardown=broken_teardown, **QUICK)


def test_ctrl_c_in_the_callable_raises_interrupted_with_what_was_measured():
    runs = []

    def run():
        runs.append(1)
        spin(0.0002)
        if len(runs) == 40:
            raise KeyboardInterrupt

    with pytest.raises(coolbench.Interrupted) as e:
        coolbench.measure(run, min_time=60.0, max_time=120.0)
    assert isinstance(e.value, KeyboardInterrupt)
    r = e.value.result
    assert not r.complete
    assert r.stop_reason == "interrupted"
    assert r.to_dict()["complete"] is False
    assert len(r.to_dict()["samples"]) == 39


def test_sigint_between_samples_stops_the_run():
    runs = []

    def run():
        runs.append(1)
        spin(0.0002)
        if len(runs) == 30:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(coolbench.Interrupted) as e:
        coolbench.measure(run, min_time=60.0, max_time=120.0)
    assert e.value.result.stop_reason == "interrupted"
    assert len(runs) < 100  # it stopped, not at max time


def test_progress_receives_the_protocols_lines():
    lines = []
    coolbench.measure(lambda: spin(0.0002), progress=lines.append, **QUICK)
    assert all(isinstance(line, str) for line in lines)


def test_without_a_gpu_the_gpu_calls_say_so(has_gpu):
    if has_gpu:
        pytest.skip("a GPU is present: test_gpu.py covers these calls")
    assert coolbench.gpu_count() == 0
    with pytest.raises(coolbench.NotAvailable, match="GPU"):
        coolbench.measure(lambda: None, device=0)
    with pytest.raises(coolbench.NotAvailable):
        coolbench.measure("gemm:fp16:128:128:128", device=0)
    with pytest.raises(coolbench.NotAvailable):
        coolbench.release(0)
    with pytest.raises(coolbench.NotAvailable):
        coolbench.device_state(0)
    with pytest.raises(coolbench.NotAvailable):
        coolbench.compare("gemm:fp16:128:128:128", "gemm:fp16:128:128:128:2", device=0)


def test_compare_takes_the_protocols_keywords_and_says_what_it_takes():
    assert "ABBA" in coolbench.compare.__doc__
    with pytest.raises(TypeError):
        coolbench.compare("gemm:fp16:128:128:128", "gemm:fp16:128:128:128", bogus=1)


def test_the_module_says_what_it_is():
    assert coolbench.__version__.count(".") == 2
    assert "docs/python.md" in coolbench.__doc__
    assert "release" in coolbench.measure.__doc__
    assert issubclass(coolbench.ReleaseRefused, coolbench.Error)
    assert issubclass(coolbench.Timeout, TimeoutError)
    assert issubclass(coolbench.RunIncomplete, coolbench.Error)
