"""The child processes of bench/engine_vs_torch.py. Each does one thing and
prints one line `RECORD {json}` last (PyTorch and Inductor print on stdout
too): the parent appends it to the run's JSONL as soon as the child ends.

  prepare   draw the model's weights once into the work folder (the other
            processes take them from there), export the family's ONNX file
            once (cached there too) and write PyTorch eager's reference
            outputs of each configuration
  warm      compile one torch.compile engine once, filling Inductor's cache
  ceiling   a large device-to-device copy and a large GEMM in the dtype
  measure   one engine on one configuration under coolbench.measure; with
            --profile-after, then its per-kernel time under torch.profiler (a
            second record)
"""
import datetime
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

import vs_torch_engines as engines
import vs_torch_models as models


def emit(record):
    print("RECORD " + json.dumps(record, default=str), flush=True)


def one_line(error):
    text = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {text[0][:300]}"


def onnx_path(work, config, size):
    return os.path.join(work, "onnx", f"{config.family}-{size}.onnx")


def weights_path(work, config, size):
    return models.weights_path(work, config.model, size)


def reference_path(work, config, size):
    return os.path.join(work, "reference", f"{config.key.replace(':', '_')}-{size}.npy")


def base_record(kind, args, config=None):
    record = {"kind": kind, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "commit": args.commit, "device": args.device, "size": args.size}
    if config is not None:
        record.update(config=config.key, model=config.model, dtype=config.dtype,
                      batch=config.batch, seq=config.seq, past=config.past)
        record.update(models.work_counted(args.work, config, args.size))
    if "torch" in sys.modules:  # not imported for coolbench's engine alone
        record["torch"] = sys.modules["torch"].__version__
    if kind in ("measure", "profile") and getattr(args, "engine", None) == "coolbench":
        settings = engine_settings()
        if settings:
            record["settings"] = settings
    return record


def engine_settings():
    """The COOLBENCH_* variables this process runs with (the engine's switches, such as
    COOLBENCH_GEMM_ROW_PHASES or COOLBENCH_ATTENTION_KERNEL), but for NOT_ENGINE_SWITCHES: a
    figure taken with a kernel forced is not the default's, so coolbench's records name them,
    the tables keep them apart and a top-up pools only those of the same switches. PyTorch's
    processes do not use them and their records do not carry them."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("COOLBENCH_") and k not in NOT_ENGINE_SWITCHES}


# COOLBENCH_* variables that name where things are, or what to trace, not how the engine runs.
NOT_ENGINE_SWITCHES = frozenset({"COOLBENCH_COMMIT", "COOLBENCH_CUDA_LIBRARY",
                                 "COOLBENCH_NVML_LIBRARY", "COOLBENCH_DEVICE",
                                 "COOLBENCH_DEVICE_TRACE", "COOLBENCH_CONTEXT_PROBE"})


def gpu_identity(device="cuda:0", with_uuid=False):
    """(name, driver) of the device from nvidia-smi, or (None, None); with_uuid:
    (name, driver, uuid)."""
    index = device.partition(":")[2] or "0"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,uuid",
                              "--format=csv,noheader", "-i", index],
                             capture_output=True, text=True, timeout=20)
        name, driver, uuid = [p.strip() for p in out.stdout.strip().splitlines()[0].split(",")]
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        name = driver = uuid = None
    return (name, driver, uuid) if with_uuid else (name, driver)


def protocol(args):
    options = {"mode": "cold", "max_time": args.max_time, "rel_ci": args.rel_ci, "check": False}
    if args.min_time is not None:
        options["min_time"] = args.min_time
    if args.min_samples is not None:
        options["min_samples"] = args.min_samples
    return options


def difference(outputs, work, config, size):
    """max |this engine's reference slice − PyTorch eager's|, or None without a reference."""
    path = reference_path(work, config, size)
    if outputs is None or not os.path.exists(path):
        return None
    first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
    if hasattr(first, "detach"):
        first = first.detach().float().cpu().numpy()
    got = models.reference_slice([first], config)
    want = np.load(path)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


# ---- prepare, warm, ceiling ------------------------------------------------------------------


def child_prepare(args):
    configs = [models.parse_config(c, args.size) for c in args.config]
    record = base_record("prepare", args)
    record.update(family=configs[0].family, configs=[c.key for c in configs])
    # The model's weights, drawn once for every later process (and the export and
    # references below): seconds, or None where an earlier call left them.
    weights = weights_path(args.work, configs[0], args.size)
    try:
        record["weights_s"] = models.ensure_weights(configs[0].model, args.size, weights)
    except Exception as e:  # every process then draws the weights itself, as before
        record.update(weights_s=None, weights_error=one_line(e))
    path = onnx_path(args.work, configs[0], args.size)
    if args.no_export:
        record["export_s"] = None  # no coolbench engine in this run
    elif os.path.exists(path):
        record["export_s"] = None  # cached from an earlier call
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        record["export_s"] = models.export_onnx(configs[0], args.size, args.device, path,
                                                weights)
    record["onnx_bytes"] = os.path.getsize(path) if os.path.exists(path) else None
    import torch
    os.makedirs(os.path.join(args.work, "reference"), exist_ok=True)
    for config in configs:
        module = models.build_module(config, args.size, args.device, weights)
        inputs = models.to_torch(models.make_inputs(config, args.size), config, args.device)
        with torch.inference_mode():
            outputs = module(*inputs)
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        np.save(reference_path(args.work, config, args.size),
                models.reference_slice([first.float().cpu().numpy()], config))
        del module, outputs
    return record


def child_warm(args):
    config = models.parse_config(args.config[0], args.size)
    record = base_record("warm", args, config)
    record["engine"] = args.engine
    _, info = engines.make_torch_engine(args.engine, config, args.size, args.device,
                                        weights=weights_path(args.work, config, args.size))
    record.update(info)
    return record


def child_ceiling(args):
    """Best and median of `runs` timed calls (CUDA events, after 5 warm-ups):
    a 1 GiB device-to-device copy (2 GiB moved) and an 8192³ GEMM in the
    dtype (4096³ in fp32, which runs without TF32, as the models do)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    record = base_record("ceiling", args)
    record["dtype"] = args.dtype
    record["gpu"], record["driver"], record["gpu_uuid"] = gpu_identity(args.device, True)
    runs = 30

    def timed(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(5):
            fn()
        times = []
        for _ in range(runs):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return min(times), float(np.median(times))

    size = 1 << 30
    src = torch.empty(size, dtype=torch.uint8, device=args.device).random_(0, 255)
    dst = torch.empty_like(src)
    best, median = timed(lambda: dst.copy_(src))
    record.update(copy_bytes=2 * size, copy_bytes_per_s=2 * size / best,
                  copy_bytes_per_s_median=2 * size / median, runs=runs)
    src = dst = None  # 2 GiB back before the GEMM's operands
    n = 4096 if args.dtype == "fp32" else 8192
    dtype = getattr(torch, models.DTYPES[args.dtype])
    a = torch.randn(n, n, device=args.device, dtype=dtype)
    b = torch.randn(n, n, device=args.device, dtype=dtype)
    c = torch.empty(n, n, device=args.device, dtype=dtype)
    best, median = timed(lambda: torch.matmul(a, b, out=c))
    record.update(gemm_shape=f"{n}x{n}x{n} {args.dtype}", gemm_flop_per_s=2 * n ** 3 / best,
                  gemm_flop_per_s_median=2 * n ** 3 / median)
    return record


# ---- measure and profile ---------------------------------------------------------------------


def result_fields(result):
    doc = result.to_dict()
    summary = doc.get("summary") or {}
    environment = doc.get("environment") or {}
    gpu = environment.get("gpu") or {}
    hidden = summary.get("hidden_state") or {}
    return {
        "figure_ms": result.figure_ms, "median_ms": result.median_ms, "rel_ci": result.rel_ci,
        "run_ci_ms": list(result.ci_ms) if result.ci_ms else None,
        "converged": result.converged, "stop_reason": result.stop_reason,
        "complete": result.complete, "run_error": result.error or None,
        "kept": (summary.get("latency") or {}).get("count"),
        "bursts": summary.get("bursts"), "seconds_total": summary.get("seconds_total"),
        "temp_range_c": summary.get("temp_range_c"),
        "sm_clock_range_mhz": summary.get("sm_clock_range_mhz"),
        "timer_step_ms": summary.get("timer_step_ms"),
        "timer": engines.timer_kind(result.latencies_ms),
        "warnings": list(result.warnings) + list(environment.get("warnings") or []),
        "hidden_state": hidden.get("summary"),
        "workload": result.workload,
        "gpu_from_run": gpu.get("name"),
        "driver_from_run": gpu.get("driver_version") or environment.get("driver_version"),
    }


# When the child's script began (engine_vs_torch.py sets it): a record's setup_s is the time
# from there to the start of its measure (imports, the configuration, the GPU's identity); with
# wall_s it tells where a process's time goes (about 12 s of a 15 s coolbench process on the
# H200 were outside wall_s, 2026-12-06).
ENTERED = None


def preload(engine, config, size):
    """The imports a measuring process of ENGINE needs, and nothing that touches the GPU: what a
    held process (--held) does before its turn. For PyTorch's engines: torch, and transformers'
    code of the model (about 12 s of a 16-30 s process on the H100, 2026-12-07), which
    build_module and make_torch_engine then find loaded."""
    if engine == "coolbench":
        import coolbench  # noqa: F401  (its library; the session is made after the go)
        return None
    import torch
    models.preload(config, size)
    # Whether anything imported made PyTorch's CUDA context: a context held while another
    # process measures changes that GPU's state (docs/facts-h200.md), so the record says.
    return torch.cuda.is_initialized()


def driver_libraries():
    """Which of the NVIDIA driver's libraries this process has loaded (libcuda, the driver API;
    libnvidia-ml, NVML), from /proc/self/maps; None off Linux. Loaded is not initialised:
    cuBLASLt 13 loads libcuda as PyTorch is imported (LD_DEBUG, 2026-12-07), with no cuInit
    that we know of; the held process's context is what cuda_initialized tells."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return None
    return sorted(name for name in ("libcuda.so", "libnvidia-ml.so") if name in maps)


def wait_for_turn(args, config):
    """--held: preload, then block until the parent writes a line on stdin (its turn: the
    process before it has ended and the GPU has cooled). The seconds of each, for the record."""
    began = time.perf_counter()
    cuda_initialized = preload(args.engine, config, args.size)
    loaded = time.perf_counter()
    line = sys.stdin.readline()
    held = {"preload_s": loaded - began, "waited_s": time.perf_counter() - loaded,
            "cuda_initialized": cuda_initialized, "driver_libraries": driver_libraries()}
    if line.strip() != "go":  # the parent ended or gave up on this process
        raise SystemExit(0)
    return held


def child_measure(args):
    config = models.parse_config(args.config[0], args.size)
    held = wait_for_turn(args, config) if args.held else None
    marks = [time.perf_counter()]  # where setup_s goes: imports, the work's count, nvidia-smi
    record = base_record("measure", args, config)
    if held is not None:
        record["held"] = held
    marks.append(time.perf_counter())
    record.update(engine=args.engine, gpu=None, driver=None)
    if args.device.startswith("cuda"):
        record["gpu"], record["driver"], record["gpu_uuid"] = gpu_identity(args.device, True)
    started = time.perf_counter()
    # A held process's setup counts from its go: its preload and wait are in record["held"].
    entered = marks[0] if held is not None else ENTERED
    record["setup_s"] = None if entered is None else started - entered
    if entered is not None:
        record["setup_parts_s"] = {"imports": marks[0] - entered, "config": marks[1] - marks[0],
                                   "gpu_identity": started - marks[1]}
    try:
        if args.engine == "coolbench":
            session, feeds, outputs, info = engines.make_coolbench_session(
                config, args.size, args.device, onnx_path(args.work, config, args.size))
            record.update(info)
            record["max_abs_diff"] = difference(outputs, args.work, config, args.size)
            result, record["timing"] = engines.measure_coolbench(session, feeds, protocol(args),
                                                                 args.device)
            record["hold"] = None
        else:
            began = time.perf_counter()
            import torch
            record["torch_import_s"] = time.perf_counter() - began  # in wall_s, not build_s
            torch.backends.cuda.matmul.allow_tf32 = False
            fn, info = engines.make_torch_engine(
                args.engine, config, args.size, args.device,
                weights=weights_path(args.work, config, args.size))
            record.update(info)
            record["max_abs_diff"] = difference(fn(), args.work, config, args.size)
            engines.synchronize(args.device)
            result, record["hold"] = engines.measure_callable(fn, protocol(args), args.device)
            record["timing"] = "measure(callable)" + {True: ", held", False: ", not held",
                                                      None: ", host clock"}[record["hold"]]
        record.update(result_fields(result))
        if result.figure_ms is None:
            record["error"] = "no figure: " + (result.error or result.stop_reason or "unknown")
    except Exception as e:  # the record says what failed; the other processes go on
        record.update(error=one_line(e), traceback=traceback.format_exc()[-4000:])
    record["wall_s"] = time.perf_counter() - started
    if not args.profile_after or record.get("error"):
        return record
    # The per-kernel profile in the same process, after its figure is taken:
    # one process start less per engine.
    emit(record)
    profiled = base_record("profile", args, config)
    profiled.update(engine=args.engine, gpu_uuid=record.get("gpu_uuid"))
    try:
        if args.engine == "coolbench":
            # session.run copies the feeds in and the outputs out through the host; the
            # measured figure replays the graph on the GPU without them, so the table
            # leaves them out to show the same kernels as the figure.
            profiled["kernels"] = engines.profile_kernels(
                lambda: session.run(None, feeds), args.device,
                leave_out=("Memcpy HtoD", "Memcpy DtoH"))
            profiled["note"] = "session.run's copies to and from the host left out"
        else:
            profiled["kernels"] = engines.profile_kernels(fn, args.device)
    except Exception as e:
        profiled.update(error=one_line(e), traceback=traceback.format_exc()[-4000:])
    return profiled


CHILDREN = {"prepare": child_prepare, "warm": child_warm, "ceiling": child_ceiling,
            "measure": child_measure}


def run_child(args):
    """Runs the child `args.child`; a failure still ends in a RECORD line."""
    try:
        record = CHILDREN[args.child](args)
    except Exception as e:
        record = {"kind": args.child, "engine": args.engine, "dtype": args.dtype,
                  "config": args.config[0] if args.config else None, "error": one_line(e),
                  "traceback": traceback.format_exc()[-4000:]}
    emit(record)
    sys.stdout.flush()
    # Leave without running PyTorch's and Inductor's exit handlers, which can
    # hang on worker pools; everything the parent needs is printed.
    os._exit(0)
