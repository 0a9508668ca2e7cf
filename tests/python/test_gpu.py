"""The Python module on a GPU: a named workload with the release between
contexts, a callable that survives a context reset (driver API through
ctypes, set up again in each context), PyTorch callables that keep their
context, one that synchronizes (no hold), and the refusal to reset one under
PyTorch's memory."""
import ctypes
import statistics

import pytest

import coolbench

pytestmark = pytest.mark.gpu


def test_a_named_gemm_chain_is_spread_over_contexts_and_the_gpu_handed_back():
    r = coolbench.measure("gemm:fp16:128:2304:768:4", device=0, max_time=30.0, rel_ci=0.01)
    assert r.complete, r.error
    doc = r.to_dict()
    assert doc["configuration"]["contexts"] == 5
    assert len(doc["summary"]["contexts"]["per_context"]) >= 5
    assert doc["summary"]["releases"] >= 5
    assert "context reset" in r.final_release
    state = coolbench.device_state(0)
    assert state["context_active"] is False
    assert state["live_bytes"] == 0


class DriverMemset:
    """A workload on the CUDA driver API alone: a 256 MiB memset on the
    legacy default stream, its memory made by setup and freed by teardown,
    so it lives through any number of context resets."""

    bytes = 256 << 20

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.cuda.cuMemsetD8Async.argtypes = [
            ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
        self.pointer = None
        self.setups = 0
        self.teardowns = 0
        self.value = 0

    def check(self, rc, call):
        assert rc == 0, f"{call} returned CUresult {rc}"

    def setup(self):
        p = ctypes.c_uint64()
        self.check(self.cuda.cuMemAlloc_v2(ctypes.byref(p), self.bytes), "cuMemAlloc")
        self.pointer = p.value
        self.setups += 1

    def run(self):
        self.value = (self.value + 1) % 251  # not zeros, and never the same twice running
        self.check(self.cuda.cuMemsetD8Async(self.pointer, self.value, self.bytes, None),
                   "cuMemsetD8Async")

    def teardown(self):
        self.check(self.cuda.cuMemFree_v2(self.pointer), "cuMemFree")
        self.pointer = None
        self.teardowns += 1


def test_a_callable_that_survives_a_reset_is_set_up_again_in_each_context():
    w = DriverMemset()
    r = coolbench.measure(w.run, setup=w.setup, teardown=w.teardown, device=0, release="reset",
                          name="memset 256 MiB", max_time=30.0, rel_ci=0.01)
    assert r.complete, r.error
    doc = r.to_dict()
    contexts = doc["summary"]["contexts"]["per_context"]
    assert len(contexts) >= 5
    assert w.setups == w.teardowns >= len(contexts)
    assert "context reset" in r.final_release
    # 256 MiB written at 2 to 5 TB/s: about 0.05 to 0.15 ms.
    assert 0.03 < r.figure_ms < 0.5, r.figure_ms
    assert coolbench.device_state(0)["context_active"] is False


def torch_event_median_ms(torch, fn, stream, runs=200):
    """PyTorch's own CUDA-event timing of single calls, after a warm-up: the
    host's launch time is in it, as in coolbench's hold=False."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(runs + 20):
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        if i >= 20:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_queued_median_ms(torch, fn, stream, batch=50, rounds=20):
    """GPU time per call from events around `batch` calls queued back to
    back (the GPU never waits for the host once the queue is ahead, as with
    coolbench's hold): the median over rounds of the batch's time / batch."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(batch):
        fn()
    times = []
    for _ in range(rounds):
        start.record(stream)
        for _ in range(batch):
            fn()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def test_a_torch_callable_keeps_its_context_and_agrees_with_torchs_own_timing():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.float16, generator=g)
    c = torch.empty(2048, 2048, device="cuda", dtype=torch.float16)

    def run():
        torch.matmul(a, b, out=c)

    r = coolbench.measure(run, device=0, max_time=30.0, rel_ci=0.005)
    assert r.complete, r.error
    assert "context is kept" in r.final_release
    assert any("context was kept" in w for w in r.warnings)
    assert r.to_dict()["configuration"]["contexts"] == 1
    # PyTorch carries on in its context, its tensors intact.
    torch.cuda.synchronize()
    assert torch.isfinite(c).all().item()
    stream = torch.cuda.current_stream()
    # Held, the figure is GPU time: on the H200 26.6 us against 36.6 us for
    # single calls timed with their launch (a 27 us kernel, ~10 us to launch).
    queued = torch_queued_median_ms(torch, run, stream)
    assert 0.85 < r.figure_ms / queued < 1.15, (r.figure_ms, queued)
    # Without the hold it is what a loop of single timed calls sees.
    unheld = coolbench.measure(run, device=0, hold=False, max_time=30.0, rel_ci=0.01)
    single = torch_event_median_ms(torch, run, stream)
    assert 0.85 < unheld.figure_ms / single < 1.15, (unheld.figure_ms, single)


def test_a_torch_callable_on_a_side_stream_is_timed_on_that_stream():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.randn(64 << 20, device="cuda")  # 256 MiB of fp32
    side = torch.cuda.Stream()

    def run():
        with torch.cuda.stream(side):
            x.mul_(1.0001)

    r = coolbench.measure(run, device=0, stream=side.cuda_stream, max_time=30.0, rel_ci=0.01)
    assert r.complete, r.error
    theirs = torch_queued_median_ms(torch, run, side)
    assert 0.8 < r.figure_ms / theirs < 1.25, (r.figure_ms, theirs)


def test_a_callable_that_synchronizes_cannot_be_held_and_is_told_so():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.randn(16 << 20, device="cuda")

    def run():
        x.mul_(1.0001)
        torch.cuda.synchronize()

    with pytest.raises(coolbench.InvalidArgument, match="hold=False"):
        coolbench.measure(run, device=0, max_time=20.0)
    r = coolbench.measure(run, device=0, hold=False, max_time=20.0, rel_ci=0.01)
    assert r.complete, r.error
    assert r.figure_ms > 0


def test_a_reset_under_torchs_memory_is_refused_and_torch_carries_on():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.ones(256 << 20, dtype=torch.uint8, device="cuda")

    with pytest.raises(coolbench.RunIncomplete) as e:
        coolbench.measure(lambda: x.add_(1), device=0, release="reset", max_time=20.0)
    assert "cannot release GPU 0" in str(e.value)
    assert e.value.result.complete is False
    # Nothing was reset: PyTorch's tensor is still there and right.
    torch.cuda.synchronize()
    x.add_(1)
    assert x.float().mean().item() > 1.0


def test_compare_calls_one_more_gemm_in_fifty_slower_and_a_workload_against_itself_same():
    a = "gemm:fp16:128:2304:768:50"
    slower = coolbench.compare(a, "gemm:fp16:128:2304:768:51", device=0, max_time=60.0)
    assert slower["schema"] == "coolbench.ab/1"
    assert slower["complete"], slower["error"]
    assert [p["order"] for p in slower["pairs"][:2]] == ["AB", "BA"]
    assert slower["verdict"] == "SLOWER", slower["reason"]
    assert 1.01 < slower["time"]["ratio"] < 1.03
    same = coolbench.compare(a, a, device=0, max_time=60.0)
    assert same["verdict"] == "SAME", same["reason"]
    assert "context reset" in same["a"]["summary"]["release"]
