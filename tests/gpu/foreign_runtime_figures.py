#!/usr/bin/env python3
"""What NVML's per-process figure shows for another runtime's context and
memory, and what a release does to CuPy and PyTorch: the evidence behind
docs/device.md ("Foreign state") and docs/perf/release.md ("Foreign runtimes").

    python3 tests/gpu/foreign_runtime_figures.py --build build [--out DIR]

Every scenario runs in a fresh interpreter, so each process's NVML entry
holds that scenario alone. Prints one JSON object per step and a summary.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

MIB = 1 << 20


class NvmlProcessInfo(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gpu_instance", ctypes.c_uint), ("compute_instance", ctypes.c_uint)]


class Nvml:
    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.lib.nvmlInit_v2() == 0
        self.handle = ctypes.c_void_p()
        assert self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) == 0

    def own_bytes(self):
        """This process's figure, read twice 20 ms apart (the second is kept)."""
        value = None
        for attempt in range(2):
            if attempt:
                time.sleep(0.02)
            infos = (NvmlProcessInfo * 64)()
            count = ctypes.c_uint(64)
            rc = self.lib.nvmlDeviceGetComputeRunningProcesses_v3(
                self.handle, ctypes.byref(count), infos)
            if rc != 0:
                return None
            value = None
            for i in range(count.value):
                if infos[i].pid == os.getpid():
                    value = infos[i].used
        return value


class Coolbench:
    """libcoolbench.so through ctypes, as another runtime's user would call it."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.coolbench_release_device.argtypes = [
            ctypes.c_int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.coolbench_last_error.restype = ctypes.c_char_p

    def release(self, flags=0):
        buf = ctypes.create_string_buffer(8192)
        start = time.perf_counter()
        rc = self.lib.coolbench_release_device(0, flags, buf, len(buf))
        seconds = time.perf_counter() - start
        return {"rc": rc, "seconds": seconds, "report": json.loads(buf.value or b"{}"),
                "error": self.lib.coolbench_last_error().decode() if rc < 0 else ""}


class Recorder:
    def __init__(self, scenario):
        self.nvml = Nvml()
        self.scenario = scenario
        self.last = None

    def step(self, name, **extra):
        now = self.nvml.own_bytes()
        delta = None if now is None or self.last is None else now - self.last
        self.last = now if now is not None else self.last
        print(json.dumps({"scenario": self.scenario, "step": name, "process_bytes": now,
                          "process_mib": None if now is None else now / MIB,
                          "delta_bytes": delta, **extra}), flush=True)


def attempt(rec, name, fn):
    try:
        value = fn()
        rec.step(name, ok=True, value=repr(value)[:200])
        return True
    except Exception as e:  # the other runtime's error, recorded
        rec.step(name, ok=False, error=f"{type(e).__name__}: {e}"[:300])
        return False


def release(rec, lib, name, flags=0):
    r = Coolbench(lib).release(flags)
    rec.step(name, release=r)
    return r


# --- scenarios -----------------------------------------------------------

def cupy_add(rec, lib, free_first):
    import cupy
    import numpy as np
    cupy.cuda.Device(0).use()
    cupy.cuda.runtime.free(0)
    rec.step("context (cudaFree(0))")
    host = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    a = cupy.asarray(host)
    rec.step("a: 72 B array copied in")
    b = cupy.asarray(host * 2)
    rec.step("b: second 72 B array")
    c = a + b
    cupy.cuda.Device().synchronize()
    expected = (host * 3).tolist()
    rec.step("c = a + b (kernel loaded)", correct=c.get().tolist() == expected)
    if free_first:
        del a, b, c
        rec.step("arrays deleted (pool keeps them)")
        cupy.get_default_memory_pool().free_all_blocks()
        rec.step("free_all_blocks()")
    r = release(rec, lib, "release, flags 0")
    if r["rc"] < 0:
        release(rec, lib, "release, force", flags=1)
    if not free_first:
        def free():
            nonlocal a, b, c
            del a, b, c
            cupy.get_default_memory_pool().free_all_blocks()
        attempt(rec, "del a, b, c + free_all_blocks() after the reset", free)
    attempt(rec, "again: x + y on new arrays",
            lambda: (cupy.asarray(host) + cupy.asarray(host * 2)).get().tolist() == expected)
    attempt(rec, "after cupy._util.clear_memo(): x + y",
            lambda: (cupy._util.clear_memo(),
                     (cupy.asarray(host) + cupy.asarray(host * 2)).get().tolist() == expected)[1])
    attempt(rec, "matmul 64x64 (cuBLAS)",
            lambda: float(cupy.ones((64, 64), cupy.float32).dot(cupy.ones((64, 64), cupy.float32))[0, 0]))
    release(rec, lib, "coolbench release once more")


def cupy_live_forced(rec, lib):
    import cupy
    import numpy as np
    cupy.cuda.Device(0).use()
    host = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    a = cupy.asarray(host)
    b = cupy.asarray(host * 2)
    c = a + b
    cupy.cuda.Device().synchronize()
    rec.step("72 B arrays a, b, c live, kernel loaded")
    release(rec, lib, "release, flags 0")
    release(rec, lib, "release, force")
    attempt(rec, "c.get() after the reset", lambda: c.get().tolist())
    def free():
        nonlocal a, b, c
        del a, b, c
        cupy.get_default_memory_pool().free_all_blocks()
    attempt(rec, "del + free_all_blocks() after the reset", free)
    attempt(rec, "new arrays, x + y", lambda: (cupy.asarray(host) + cupy.asarray(host)).get().tolist())
    attempt(rec, "clear_memo, x + y", lambda: (cupy._util.clear_memo(), (cupy.asarray(host) + cupy.asarray(host)).get().tolist())[1])
    release(rec, lib, "coolbench release once more (force)", flags=1)


def cupy_granularity(rec, lib):
    import cupy
    cupy.cuda.Device(0).use()
    cupy.cuda.runtime.free(0)
    rec.step("context")
    keep = []
    for n in [1, 1, 512, 4096, 65536, MIB - 512, MIB, MIB + 1, 2 * MIB, 2 * MIB + 1, 3 * MIB,
              4 * MIB, 5 * MIB, 8 * MIB, 10 * MIB, 20 * MIB, 64 * MIB]:
        keep.append(cupy.cuda.runtime.malloc(n))
        rec.step(f"cudaMalloc {n} B (through CuPy's runtime)", bytes=n)
    small = [cupy.cuda.runtime.malloc(4096) for _ in range(600)]
    rec.step("600 more of 4 KiB", bytes=600 * 4096)
    for p in keep + small:
        cupy.cuda.runtime.free(p)
    rec.step("all freed")
    pool = []
    for n in [1, MIB, 2 * MIB, 3 * MIB]:
        pool.append(cupy.empty(n, dtype=cupy.uint8))
        rec.step(f"cupy.empty({n}) (memory pool)", bytes=n)
    del pool
    cupy.get_default_memory_pool().free_all_blocks()
    rec.step("pool freed")


def torch_steps(rec, lib, free_first):
    import torch
    torch.cuda.init()
    rec.step("torch.cuda.init()")
    torch.cuda.synchronize()
    rec.step("context (synchronize)")
    x = torch.tensor([1.0], device="cuda")
    rec.step("x: 4 B tensor copied in", reserved=torch.cuda.memory_reserved())
    x.add_(1)
    torch.cuda.synchronize()
    rec.step("x.add_(1) (kernel loaded)", value=x.item())
    if free_first:
        m = torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda")
        torch.cuda.synchronize()
        rec.step("64x64 matmul (cuBLAS)", reserved=torch.cuda.memory_reserved())
        del x, m
        rec.step("deleted (cache keeps them)", reserved=torch.cuda.memory_reserved())
        torch.cuda.empty_cache()
        rec.step("empty_cache()", reserved=torch.cuda.memory_reserved())
    r = release(rec, lib, "release, flags 0")
    if r["rc"] < 0:
        release(rec, lib, "release, force", flags=1)
    attempt(rec, "again: ones(4) + 1", lambda: (torch.ones(4, device="cuda") + 1).cpu().tolist())
    attempt(rec, "matmul 64x64 (cuBLAS) after", lambda: float((torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda"))[0, 0]))
    attempt(rec, "synchronize", torch.cuda.synchronize)
    if not free_first:
        attempt(rec, "x.item() after", lambda: x.item())
    release(rec, lib, "coolbench release once more")


def torch_granularity(rec, lib):
    import torch
    torch.cuda.init()
    torch.cuda.synchronize()
    rec.step("context")
    keep = []
    for n in [1, 4, MIB, 2 * MIB, 3 * MIB, 4 * MIB, 10 * MIB, 11 * MIB, 64 * MIB]:
        keep.append(torch.empty(n, dtype=torch.uint8, device="cuda"))
        rec.step(f"torch.empty({n}) (caching allocator)", bytes=n,
                 reserved=torch.cuda.memory_reserved())
    del keep
    torch.cuda.empty_cache()
    rec.step("empty_cache()", reserved=torch.cuda.memory_reserved())


SCENARIOS = {
    "cupy_live": lambda rec, lib: cupy_add(rec, lib, free_first=False),
    "cupy_freed": lambda rec, lib: cupy_add(rec, lib, free_first=True),
    "cupy_live_forced": cupy_live_forced,
    "cupy_granularity": cupy_granularity,
    "torch_live": lambda rec, lib: torch_steps(rec, lib, free_first=False),
    "torch_freed": lambda rec, lib: torch_steps(rec, lib, free_first=True),
    "torch_granularity": torch_granularity,
}


def run_probe(build, api, loading, allocate=None):
    exe = os.path.join(build, "bin", "coolbench-context-probe")
    cmd = [exe, "--ordinal", "0", "--api", api] + (["--allocate", allocate] if allocate else [])
    env = dict(os.environ, CUDA_MODULE_LOADING=loading)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {"error": p.stderr}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--scenario")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    lib = os.path.abspath(os.path.join(a.build, "lib", "libcoolbench.so"))
    if a.scenario:
        SCENARIOS[a.scenario](Recorder(a.scenario), lib)
        return
    out = open(os.path.join(a.out, "foreign-figures.jsonl"), "w")
    sizes = ",".join(str(n) for n in [1, 1, 512, MIB, MIB + 1, 2 * MIB, 2 * MIB + 1, 3 * MIB, 64 * MIB])
    for rep in range(3):
        for api in ["runtime", "driver"]:
            for loading in ["LAZY", "EAGER"]:
                r = run_probe(a.build, api, loading, sizes if rep == 0 else None)
                r.update(scenario="probe", rep=rep)
                print(json.dumps(r), flush=True)
                out.write(json.dumps(r) + "\n")
    for name in a.only or SCENARIOS:
        start = time.perf_counter()
        p = subprocess.run([sys.executable, __file__, "--build", a.build, "--scenario", name],
                           capture_output=True, text=True, timeout=300)
        for line in p.stdout.splitlines():
            print(line, flush=True)
            out.write(line + "\n")
        if p.returncode != 0:
            print(f"scenario {name} exited {p.returncode}: {p.stderr[-1500:]}", flush=True)
        print(f"# {name}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
