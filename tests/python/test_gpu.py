"""The Python module on a GPU: a named workload with the release between
contexts, a callable that survives a context reset (driver API through
ctypes, set up again in each context), and compare's pairs. Every test here
releases the GPU, so no other runtime may hold memory in this process: the
PyTorch callables are in test_gpu_torch.py, and ctest runs each file with
GPU tests in a process of its own (tests/python/CMakeLists.txt)."""
import ctypes

import pytest

import coolbench

pytestmark = pytest.mark.gpu

# These tests are about the release, the contexts and compare's pairs, not the gate: a target
# of 95 C lets a GPU that an earlier test left hot be measured at once (at the default target,
# after ctest's attention and release-cycle tests on an H100, all three gated until max_time
# and came back incomplete, 2026-12-07).
HOT_OK = dict(target_temp=95)


def test_a_named_gemm_chain_is_spread_over_contexts_and_the_gpu_handed_back():
    r = coolbench.measure("gemm:fp16:128:2304:768:4", device=0, max_time=30.0, rel_ci=0.01,
                          **HOT_OK)
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
                          name="memset 256 MiB", max_time=30.0, rel_ci=0.01, **HOT_OK)
    assert r.complete, r.error
    doc = r.to_dict()
    contexts = doc["summary"]["contexts"]["per_context"]
    assert len(contexts) >= 5
    assert w.setups == w.teardowns >= len(contexts)
    assert "context reset" in r.final_release
    # 256 MiB written at 2 to 5 TB/s: about 0.05 to 0.15 ms.
    assert 0.03 < r.figure_ms < 0.5, r.figure_ms
    assert coolbench.device_state(0)["context_active"] is False


def test_compare_calls_one_more_gemm_in_fifty_slower_and_a_workload_against_itself_same():
    a = "gemm:fp16:128:2304:768:50"
    slower = coolbench.compare(a, "gemm:fp16:128:2304:768:51", device=0, max_time=60.0,
                               **HOT_OK)
    assert slower["schema"] == "coolbench.ab/1"
    assert slower["complete"], slower["error"]
    assert [p["order"] for p in slower["pairs"][:2]] == ["AB", "BA"]
    assert slower["verdict"] == "SLOWER", slower["reason"]
    assert 1.01 < slower["time"]["ratio"] < 1.03
    same = coolbench.compare(a, a, device=0, max_time=60.0, **HOT_OK)
    assert same["verdict"] == "SAME", same["reason"]
    assert "context reset" in same["a"]["summary"]["release"]
