#!/usr/bin/env python3
"""The figures behind the foreign-state check (docs/perf/release.md,
"Foreign runtimes"): the bare context as coolbench-context-probe measures it
(runtime and driver API, lazy and eager loading, three times each, with NVML's
step for allocations of 1 B to 64 MiB), the same step for allocations made
through CuPy and PyTorch, and two experiments on what those runtimes can drop
and recover (tests/python/foreign_runtime_cases.py).

    python3 tests/gpu/foreign_runtime_figures.py --build build [--out DIR]

Every scenario runs in a fresh interpreter, so each process's NVML entry
holds that scenario alone. Prints one JSON object per step, and writes them
to DIR/foreign-figures.jsonl.
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


# --- scenarios -----------------------------------------------------------

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
    "cupy_granularity": cupy_granularity,
    "torch_granularity": torch_granularity,
}
# Recorded, not asserted: can CuPy drop what it holds so that a release goes
# through without force, and does PyTorch's cuBLAS work in a new thread after one.
EXPERIMENTS = ["cupy_cooperating", "torch_cublas_after_release"]
CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                     "foreign_runtime_cases.py")


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
    ap.add_argument("--no-probe", action="store_true", help="leave out the probe's runs")
    a = ap.parse_args()
    lib = os.path.abspath(os.path.join(a.build, "lib", "libcoolbench.so"))
    if a.scenario:
        SCENARIOS[a.scenario](Recorder(a.scenario), lib)
        return
    out = open(os.path.join(a.out, "foreign-figures.jsonl"), "w")
    sizes = ",".join(str(n) for n in [1, 1, 512, MIB, MIB + 1, 2 * MIB, 2 * MIB + 1, 3 * MIB, 64 * MIB])
    for rep in range(0 if a.no_probe else 3):
        for api in ["runtime", "driver"]:
            for loading in ["LAZY", "EAGER"]:
                r = run_probe(a.build, api, loading, sizes if rep == 0 else None)
                r.update(scenario="probe", rep=rep)
                print(json.dumps(r), flush=True)
                out.write(json.dumps(r) + "\n")
    for name in a.only or list(SCENARIOS) + EXPERIMENTS:
        start = time.perf_counter()
        command = ([sys.executable, "-X", "faulthandler", CASES, name, lib] if name in EXPERIMENTS
                   else [sys.executable, __file__, "--build", a.build, "--scenario", name])
        p = subprocess.run(command, capture_output=True, text=True, timeout=300)
        for line in p.stdout.splitlines():
            print(line, flush=True)
            out.write(line + "\n")
        if p.returncode != 0:
            print(f"scenario {name} exited {p.returncode}: {p.stderr[-1500:]}", flush=True)
        print(f"# {name}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
