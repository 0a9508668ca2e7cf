"""Another runtime in the process, and libcoolbench.so's release called
through ctypes as that runtime's user would (docs/c_api.md). Each case runs
in a fresh interpreter (test_release_foreign.py starts it), so that NVML's
figure for the process is the case's alone and a forced reset cannot harm
the test process:

    python3 -X faulthandler foreign_runtime_cases.py CASE LIBCOOLBENCH

It prints one JSON object per step, and a last one {"case", "steps", "ok"}.
"""
import ctypes
import json
import os
import sys
import time

RELEASE_FORCE = 0x1
MIB = 1 << 20


class Coolbench:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.coolbench_release_device.argtypes = [
            ctypes.c_int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.coolbench_device_state.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.coolbench_last_error.restype = ctypes.c_char_p

    def release(self, flags=0):
        buf = ctypes.create_string_buffer(16384)
        start = time.perf_counter()
        rc = self.lib.coolbench_release_device(0, flags, buf, len(buf))
        seconds = time.perf_counter() - start
        return {"rc": rc, "seconds": seconds, "report": json.loads(buf.value),
                "error": self.lib.coolbench_last_error().decode() if rc < 0 else ""}

    def state(self):
        buf = ctypes.create_string_buffer(4096)
        rc = self.lib.coolbench_device_state(0, buf, len(buf))
        return {"rc": rc, "state": json.loads(buf.value) if rc == 0 else None}


class Case:
    def __init__(self, name, library):
        self.name = name
        self.coolbench = Coolbench(library)
        self.steps = []

    def nvml_mib(self):
        """NVML's figure for this process (what coolbench reads too)."""
        nvml = ctypes.CDLL("libnvidia-ml.so.1")

        class Info(ctypes.Structure):
            _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                        ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
        nvml.nvmlInit_v2()
        handle = ctypes.c_void_p()
        nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
        infos, count = (Info * 64)(), ctypes.c_uint(64)
        if nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), infos) != 0:
            return None
        return next((i.used / MIB for i in infos[:count.value] if i.pid == os.getpid()), None)

    def step(self, name, fn=None, **extra):
        """Runs fn, recording its value or the other runtime's error, and NVML's figure."""
        print(json.dumps({"case": self.name, "begin": name}), flush=True)
        record = {"case": self.name, "step": name, **extra}
        if fn is not None:
            try:
                record["value"] = fn()
                record["ok"] = True
            except Exception as e:  # the other runtime's error, recorded
                record["ok"] = False
                record["error"] = f"{type(e).__name__}: {e}"[:400]
        record["nvml_mib"] = self.nvml_mib()
        self.steps.append(record)
        print(json.dumps(record, default=str), flush=True)
        return record

    def release(self, name, flags=0):
        return self.step(name, lambda: self.coolbench.release(flags))["value"]


# --- CuPy ----------------------------------------------------------------

def cupy_arrays():
    import cupy
    import numpy as np
    host = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)  # the report's Add: 72 bytes
    return cupy, host, cupy.asarray(host), cupy.asarray(host * 2), (host * 3).tolist()


def cupy_live(case):
    cupy, host, a, b, expected = cupy_arrays()
    case.step("c = a + b, 72-byte arrays live",
              lambda: (a + b).get().tolist() == expected)
    case.release("release, flags 0")
    case.step("CuPy again: a + b", lambda: (a + b).get().tolist() == expected)


def cupy_freed(case):
    cupy, host, a, b, expected = cupy_arrays()
    case.step("c = a + b", lambda: (a + b).get().tolist() == expected)
    del a, b
    case.step("arrays deleted, free_all_blocks()",
              lambda: cupy.get_default_memory_pool().free_all_blocks())
    case.release("release, flags 0")
    case.step("CuPy again: new arrays, x + y",
              lambda: (cupy.asarray(host) + cupy.asarray(host * 2)).get().tolist() == expected)


def cupy_forced(case):
    cupy, host, a, b, expected = cupy_arrays()
    case.step("c = a + b, 72-byte arrays live", lambda: (a + b).get().tolist() == expected)
    case.release("release, flags 0")
    case.release("release, force", RELEASE_FORCE)
    case.step("CuPy reads a after the reset", lambda: a.get().tolist())

    def drop():
        nonlocal a, b
        del a, b
        cupy.get_default_memory_pool().free_all_blocks()
    case.step("CuPy frees its arrays", drop)
    coolbench_survives(case)


# --- PyTorch ---------------------------------------------------------------

def torch_live(case):
    import torch
    x = torch.tensor([1.0], device="cuda")  # 4 bytes
    case.step("x.add_(1), a 4-byte tensor live", lambda: x.add_(1).item())
    case.release("release, flags 0")
    case.step("PyTorch again: x.add_(1)", lambda: x.add_(1).item())
    case.step("PyTorch: 64x64 matmul",
              lambda: float((torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda"))[0, 0]))


def torch_freed(case):
    import torch
    x = torch.tensor([1.0], device="cuda")
    case.step("x.add_(1)", lambda: x.add_(1).item())
    del x
    case.step("tensor deleted, empty_cache()",
              lambda: (torch.cuda.empty_cache(), torch.cuda.memory_reserved())[1])
    case.release("release, flags 0")
    case.step("PyTorch again: ones(4) + 1",
              lambda: (torch.ones(4, device="cuda") + 1).cpu().tolist())


def torch_forced(case):
    import torch
    x = torch.tensor([1.0], device="cuda")
    case.step("x.add_(1), a 4-byte tensor live", lambda: x.add_(1).item())
    case.release("release, flags 0")
    case.release("release, force", RELEASE_FORCE)
    case.step("PyTorch after the reset: ones(4) + 1",
              lambda: (torch.ones(4, device="cuda") + 1).cpu().tolist())
    coolbench_survives(case)


def coolbench_survives(case):
    """coolbench's state and a release in whatever the other runtime left (it
    may have made a new context since, and even broken it: PyTorch's next
    kernel on a dangling tensor leaves a sticky illegal-address error), a
    forced one where that is refused, then coolbench's own work on the GPU."""
    case.step("coolbench_device_state", case.coolbench.state)
    again = case.release("coolbench release again")
    if again["rc"] < 0:
        case.release("coolbench release again, force", RELEASE_FORCE)
    build = os.path.dirname(os.path.dirname(os.path.abspath(case.coolbench.lib._name)))
    sys.path.insert(0, os.path.join(build, "python"))
    import coolbench

    def gemm():
        # The context is kept: the other runtime may have made a new one since
        # (and loaded kernels into it), which coolbench must not reset.
        r = coolbench.measure("gemm:fp16:128:128:128:1", device=0, release="keep",
                              max_time=10.0, rel_ci=0.05)
        return {"complete": r.complete, "figure_ms": r.figure_ms, "final_release": r.final_release}
    case.step("coolbench measures a GEMM afterwards", gemm)


# --- experiments: recorded for docs/perf/release.md, not asserted ------------

def cupy_cooperating(case):
    """Can CuPy drop everything it holds in the context, so that a release
    goes through without force, and then carry on?"""
    import gc
    cupy, host, a, b, expected = cupy_arrays()
    case.step("c = a + b", lambda: (a + b).get().tolist() == expected)
    del a, b
    case.step("free_all_blocks()", lambda: cupy.get_default_memory_pool().free_all_blocks())
    case.step("cupy.clear_memo()", cupy.clear_memo)

    def clear_ufunc_kernels():
        cleared = 0
        for name in dir(cupy):
            memo = getattr(getattr(cupy, name), "_kernel_memo", None)
            if isinstance(memo, dict) and memo:
                memo.clear()
                cleared += 1
        gc.collect()
        return cleared
    case.step("each ufunc's _kernel_memo cleared, gc.collect()", clear_ufunc_kernels)
    case.release("release, flags 0")
    case.step("CuPy again: new arrays, x + y",
              lambda: (cupy.asarray(host) + cupy.asarray(host * 2)).get().tolist() == expected)


def torch_cublas_after_release(case):
    """PyTorch's cuBLAS after a reset: in a new thread (a new handle)."""
    import threading
    import torch
    ones = lambda: torch.ones(64, 64, device="cuda")  # noqa: E731
    case.step("64x64 matmul", lambda: float((ones() @ ones())[0, 0]))
    case.step("empty_cache()", lambda: (torch.cuda.empty_cache(), torch.cuda.memory_reserved())[1])
    case.release("release, flags 0")
    case.release("release, force", RELEASE_FORCE)
    case.step("ones(4) + 1", lambda: (torch.ones(4, device="cuda") + 1).cpu().tolist())
    result = {}

    def in_thread():
        try:
            result["value"] = float((ones() @ ones())[0, 0])
        except Exception as e:  # recorded
            result["error"] = f"{type(e).__name__}: {e}"[:300]
    case.step("matmul in a new thread", lambda: (lambda t: (t.start(), t.join(), result)[2])(
        threading.Thread(target=in_thread)))


CASES = {f.__name__: f for f in
         [cupy_live, cupy_freed, cupy_forced, torch_live, torch_freed, torch_forced,
          cupy_cooperating, torch_cublas_after_release]}


def main():
    name, library = sys.argv[1], sys.argv[2]
    case = Case(name, library)
    CASES[name](case)
    print(json.dumps({"case": name, "steps": case.steps, "ok": True}, default=str), flush=True)


if __name__ == "__main__":
    main()
