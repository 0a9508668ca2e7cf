"""coolbench.measure(..., devices=...): several GPUs at once (docs/python.md, "Several GPUs").

On the CPU: what devices= takes and refuses, and that without a GPU it says so. With a GPU
(marker gpu): a named workload and a callable made per GPU, on every GPU the machine has (one
GPU gives a MultiResult of one, without a spread), each GPU handed back at the end.
"""
import ctypes
import json

import pytest

import coolbench

# These tests are about the GPUs' plumbing, not the gate: a target of 95 C lets a GPU that an
# earlier test left hot be measured at once (at the default target, a no-op callable on an H100
# after 70 s of load gated until max_time and came back incomplete).
QUICK = dict(min_time=0.2, max_time=20.0, rel_ci=0.02, contexts=1, target_temp=95)


def measure_or_say_why(*args, **kwargs):
    """coolbench.measure(devices=...), failing the test with each GPU's failure where one failed
    (RunIncomplete's own message does not name them)."""
    try:
        return coolbench.measure(*args, **kwargs)
    except coolbench.RunIncomplete as e:
        pytest.fail(f"measure(devices=...) failed on some GPUs: {e.result.failures}")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(devices=[0, 1], device=0), "devices= goes without device="),
        (dict(devices=[0, 1], setup=lambda: None), "setup="),
        (dict(devices=[0, 1], stream=7), "stream="),
        (dict(devices="some"), "\"all\" or a list"),
        (dict(devices=["a"]), "\"all\" or a list"),
        (dict(devices=[]), "is empty"),
        # As for one GPU, refused before any GPU is looked for.
        (dict(devices=[0, 1], telemetry_period_ms=0), "telemetry_period_ms"),
        (dict(devices=[0, 1], isolation="process"), "process of its own"),
        (dict(devices=[0, 1], contexts=3, release="keep"), "needs release='reset'"),
    ],
)
def test_devices_refuses_what_does_not_go_with_it(kwargs, words):
    with pytest.raises(coolbench.InvalidArgument, match=words):
        coolbench.measure("gemm:fp16:128:128:128", **kwargs)


def test_devices_and_processes_do_not_go_together():
    with pytest.raises(TypeError, match="processes="):
        coolbench.measure("pkg.mod:fn", processes=3, devices=[0, 1])


def test_devices_refuses_a_workload_that_is_neither_name_nor_callable():
    with pytest.raises(coolbench.InvalidArgument, match="make\\(device\\)"):
        coolbench.measure(42, devices=[0])


def test_without_a_gpu_devices_says_so(has_gpu):
    if has_gpu:
        pytest.skip("a GPU is present: the gpu cases below cover devices=")
    with pytest.raises(coolbench.NotAvailable, match="GPU"):
        coolbench.measure("gemm:fp16:128:128:128", devices="all")
    with pytest.raises(coolbench.NotAvailable):
        coolbench.measure(lambda device: (lambda: None), devices=[0, 1])


def test_the_docstring_and_type_say_what_devices_does():
    assert "devices=" in coolbench.measure.__doc__
    assert "MultiResult" in coolbench.measure.__doc__
    assert "spread" in coolbench.MultiResult.__doc__


@pytest.mark.gpu
def test_a_named_workload_on_every_gpu_gives_a_result_each():
    count = coolbench.gpu_count()
    r = measure_or_say_why("gemm:fp16:128:2304:768:4", devices="all", **QUICK)
    assert isinstance(r, coolbench.MultiResult)
    assert len(r) == count
    assert r.complete and r.failures == {}
    assert sorted(r.results) == list(range(count))
    for ordinal, result in r.results.items():
        assert result.complete, result.error
        assert r.figures_ms[ordinal] == pytest.approx(result.figure_ms)
        assert "context reset" in result.final_release
        assert coolbench.device_state(ordinal)["context_active"] is False
    doc = json.loads(r.to_json())
    assert doc["schema"] == "coolbench.multi/1"
    assert [g["run"]["schema"] for g in doc["gpus"]] == ["coolbench.run/1"] * count
    if count >= 2:
        assert len(r.spread) == 1
        assert r.spread[0]["max_over_min"] >= 0
    else:
        assert r.spread == []
    assert "=== GPU 0 ===" in r.summary()


@pytest.mark.gpu
def test_a_callable_is_made_once_per_gpu_on_its_gpu():
    made = []

    def make(device):
        made.append(device)
        return lambda: None

    r = measure_or_say_why(make, devices=[0], hold=False, **QUICK)
    assert made == [0]
    assert r[0].complete, r[0].error


@pytest.mark.gpu
def test_the_factory_and_its_callable_run_with_their_gpu_current():
    # The driver's current context in the calling thread: (0, its device), or an error code
    # (201, CUDA_ERROR_INVALID_CONTEXT) in a thread where none is current.
    cuda = ctypes.CDLL("libcuda.so.1")

    def current():
        device = ctypes.c_int(-1)
        return cuda.cuCtxGetDevice(ctypes.byref(device)), device.value

    seen = {}

    def make(device):
        seen[("factory", device)] = current()

        def run():
            seen[("callable", device)] = current()

        return run

    ordinals = list(range(coolbench.gpu_count()))
    measure_or_say_why(make, devices=ordinals, hold=False, **QUICK)
    for ordinal in ordinals:
        assert seen[("factory", ordinal)] == (0, ordinal)
        assert seen[("callable", ordinal)] == (0, ordinal)


@pytest.mark.gpu
def test_a_failing_gpu_leaves_the_others_and_raises_run_incomplete():
    def make(device):
        if device == 0:
            raise RuntimeError("no model for GPU 0")
        return lambda: None

    ordinals = list(range(coolbench.gpu_count()))
    with pytest.raises(coolbench.RunIncomplete) as caught:
        coolbench.measure(make, devices=ordinals, hold=False, **QUICK)
    r = caught.value.result
    assert "no model for GPU 0" in r.failures[0]
    for ordinal in ordinals[1:]:
        assert r.results[ordinal].complete


@pytest.mark.gpu
def test_an_exception_of_progress_stops_every_gpu_and_is_raised_again():
    def progress(line):
        raise ValueError("progress broke")

    with pytest.raises(ValueError, match="progress broke"):
        coolbench.measure("gemm:fp16:128:128:128", devices="all", progress=progress, **QUICK)
