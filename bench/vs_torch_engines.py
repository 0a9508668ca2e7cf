"""The engines of bench/engine_vs_torch.py, each made ready in a child process:
a callable that queues one inference on the GPU without waiting for it (so
coolbench.measure can hold the stream while it is queued), or coolbench's
session.

  torch_eager       the wrapped transformers model, called as it is
  torch_graph       the same forward captured once in a torch.cuda.CUDAGraph
                    on static inputs, replayed
  torch_compile_ro  torch.compile(mode="reduce-overhead"): Inductor's kernels
                    replayed through its CUDA graph trees
  torch_compile_ma  torch.compile(mode="max-autotune"): the same with GEMM and
                    kernel autotuning
  coolbench         coolbench.Session on the ONNX export of the same weights
"""
import time

import vs_torch_models as models

TORCH_ENGINES = ("torch_eager", "torch_graph", "torch_compile_ro", "torch_compile_ma")
ENGINES = ("coolbench",) + TORCH_ENGINES
COMPILE_MODES = {"torch_compile_ro": "reduce-overhead", "torch_compile_ma": "max-autotune"}


def synchronize(device):
    import torch
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def make_torch_engine(engine, config, size, device, warmup=3, weights=None):
    """Returns (fn, info): fn() queues one inference; info has build_s (the
    model on the device and the inputs; build_parts_s splits it: imports,
    model, to_device, inputs; weights says whether the model's tensors came
    from the weights file at `weights` or were drawn), compile_s (the first
    call of a compiled model, which compiles or loads Inductor's cache) and
    warm_s (the calls after it, until the CUDA graph is recorded). The outputs
    of fn are dropped by the caller."""
    import torch

    started = time.perf_counter()
    info = {}
    module = models.build_module(config, size, device, weights, info)
    began = time.perf_counter()
    inputs = models.to_torch(models.make_inputs(config, size), config, device)
    synchronize(device)
    info["build_parts_s"]["inputs"] = time.perf_counter() - began
    info["build_s"] = time.perf_counter() - started

    if engine == "torch_eager":
        def fn():
            with torch.inference_mode():
                return module(*inputs)
    elif engine == "torch_graph":
        fn = _capture(module, inputs, device)
    elif engine in COMPILE_MODES:
        compiled = torch.compile(module, mode=COMPILE_MODES[engine])

        def fn():
            # Each call a new step for the CUDA graph trees: the outputs of
            # the call before are not kept.
            torch.compiler.cudagraph_mark_step_begin()
            with torch.inference_mode():
                return compiled(*inputs)
    else:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")

    began = time.perf_counter()
    fn()
    synchronize(device)
    info["compile_s"] = time.perf_counter() - began if engine in COMPILE_MODES else None
    began = time.perf_counter()
    for _ in range(warmup):
        fn()
    synchronize(device)
    info["warm_s"] = time.perf_counter() - began
    return fn, info


def _capture(module, inputs, device):
    """The forward on static inputs captured in a CUDA graph (warmed on a side
    stream first, as torch.cuda.graphs asks); returns its replay."""
    import torch
    if not device.startswith("cuda"):
        raise RuntimeError("torch_graph needs a CUDA device (torch.cuda.CUDAGraph)")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode():
        with torch.cuda.stream(side):
            for _ in range(3):
                module(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_outputs = module(*inputs)
    def replay():
        graph.replay()
        return static_outputs
    return replay


def make_coolbench_session(config, size, device, onnx_path):
    """(session, feeds, outputs of a first run, info): build_s, split in
    build_parts_s into the session (coolbench.Session, the ONNX file read) and
    the inputs (numpy, the sizes from vs_torch_models.dims: no torch)."""
    import coolbench
    started = time.perf_counter()
    session = coolbench.Session(onnx_path, device=device, dims=models.onnx_dims(config))
    began = time.perf_counter()
    feeds = models.to_feeds(models.make_inputs(config, size), config, size)
    done = time.perf_counter()
    info = {"build_s": done - started,
            "build_parts_s": {"session": began - started, "inputs": done - began}}
    began = time.perf_counter()
    outputs = session.run(None, feeds)
    info["first_run_s"] = time.perf_counter() - began
    info["session"] = repr(session)
    # How the session runs (host, eager or one CUDA graph; its arena and
    # fusions), where the module says so.
    info["execution"] = getattr(session, "execution", None)
    return session, feeds, outputs, info


def measure_coolbench(session, feeds, protocol, device):
    """Measures the session the way the module offers: measure(session, feeds)
    (the same path as `coolbench run MODEL.onnx`: on a GPU, CUDA events
    around the session's launch with its stream held, inputs and outputs left
    on the device; a module before that timed run() on the host clock, host
    copies included) when it takes the session, else a callable around
    session.run, which copies through the host and waits, so it cannot be
    held. Returns (result, how it was timed)."""
    import coolbench
    try:
        # contexts=1: one CUDA context per process, as the torch engines have.
        return coolbench.measure(session, feeds, contexts=1, **protocol), "measure(session, feeds)"
    except TypeError:
        pass
    ordinal = int(device.partition(":")[2] or 0) if device.startswith("cuda") else None
    result = coolbench.measure(lambda: session.run(None, feeds), device=ordinal, hold=False,
                               **protocol)
    return result, "callable session.run (hold off)"


def measure_callable(fn, protocol, device):
    """coolbench.measure(fn) held on the legacy default stream (PyTorch's
    current stream here); a callable the hold refuses (it waits for the GPU
    itself) is measured without the hold, and the record says so."""
    import coolbench
    ordinal = int(device.partition(":")[2] or 0) if device.startswith("cuda") else None
    if ordinal is None:
        return coolbench.measure(fn, **protocol), None  # the host clock: nothing to hold
    try:
        held = coolbench.measure(fn, device=ordinal, hold=True, **protocol)
        # With check=False a refused hold ends the run with its message instead.
        refused = held.figure_ms is None and "hold" in (held.error or "")
    except coolbench.InvalidArgument as e:
        if "hold" not in str(e):
            raise
        refused = True
    if not refused:
        return held, True
    return coolbench.measure(fn, device=ordinal, hold=False, **protocol), False


def timer_kind(latencies_ms):
    """'device events' when every kept latency is a whole multiple of one tick
    of 16 ns or more (CUDA events tick in 32 ns on the H200; cudaEventElapsedTime
    gives float32 milliseconds, hence the tolerance), else 'host clock'
    (nanosecond steps): tells whether a session's samples were GPU time or its
    run() around host copies, whatever the module's version."""
    ns = [v * 1e6 for v in latencies_ms]
    if len({round(v, 1) for v in ns}) < 3:
        return "unknown"
    for tick in (1024, 1000, 512, 500, 256, 128, 64, 32, 16):
        if all(abs(v - tick * round(v / tick)) <= max(0.6, v * 1.2e-7) for v in ns):
            return "device events"
    return "host clock"


# ---- Per-kernel time -----------------------------------------------------------------------


def profile_kernels(fn, device, runs=20, top=15, leave_out=()):
    """Runs fn `runs` times under torch.profiler (CUPTI: every kernel and copy
    of the process, coolbench's own included) and returns the top entries by
    device time per run: name, calls per run, µs per run, share. Entries whose
    name starts with one of `leave_out` are summed apart (left_out_us_per_run),
    outside the total and the shares."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    on_gpu = device.startswith("cuda")
    # With the CPU's activity too on a GPU: the kernels are then tied to their
    # launches, the way torch.profiler is used most; only device time is summed.
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    for _ in range(3):
        fn()
    synchronize(device)
    with profile(activities=activities) as prof:
        for _ in range(runs):
            fn()
        synchronize(device)
    totals = {}
    left_out = {}
    wanted = torch.autograd.DeviceType.CUDA if on_gpu else torch.autograd.DeviceType.CPU
    for event in prof.events():
        if event.device_type != wanted:
            continue
        if not on_gpu and event.cpu_parent is not None:
            continue  # on the CPU, top-level operators only, so nothing counts twice
        aside = any(event.name.startswith(prefix) for prefix in leave_out)
        entry = (left_out if aside else totals).setdefault(event.name, [0, 0.0])
        entry[0] += 1
        entry[1] += event.time_range.elapsed_us()
    total_us = sum(us for _, us in totals.values())
    ranked = sorted(totals.items(), key=lambda item: -item[1][1])
    rows = [{"name": name, "calls_per_run": count / runs, "us_per_run": us / runs,
             "share": us / total_us if total_us else None} for name, (count, us) in ranked[:top]]
    rest = ranked[top:]
    return {"activity": "cuda" if on_gpu else "cpu", "runs": runs, "kinds": len(totals),
            "total_us_per_run": total_us / runs,
            "calls_per_run": sum(c for c, _ in totals.values()) / runs,
            "top": rows,
            "other_us_per_run": sum(us for _, (_, us) in rest) / runs,
            "left_out": sorted(left_out),
            "left_out_us_per_run": sum(us for _, us in left_out.values()) / runs}
