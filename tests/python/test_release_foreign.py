"""A release under another runtime's feet, on a GPU (docs/c_api.md, "Another
runtime in the process"): CuPy and PyTorch make the context and hold memory,
and libcoolbench.so's release, called through ctypes, must refuse exactly,
change nothing, and, forced, leave coolbench working whatever the other
runtime does next. Each case runs in a fresh interpreter
(foreign_runtime_cases.py). With COOLBENCH_EVIDENCE_DIR set, every case's
steps are written there too (docs/perf/release.md, "Foreign runtimes")."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.environ.get("COOLBENCH_SHARED_LIBRARY", "")


def run_case(name, clean_exit=True):
    if not os.path.exists(LIBRARY):
        pytest.skip(f"libcoolbench.so is not built (COOLBENCH_SHARED_LIBRARY={LIBRARY!r})")
    p = subprocess.run(
        [sys.executable, "-X", "faulthandler", os.path.join(HERE, "foreign_runtime_cases.py"),
         name, LIBRARY], capture_output=True, text=True, timeout=180)
    evidence = os.environ.get("COOLBENCH_EVIDENCE_DIR")
    if evidence:
        with open(os.path.join(evidence, "foreign-cases.jsonl"), "a") as f:
            f.write(p.stdout)
            f.write(json.dumps({"case": name, "exit": p.returncode, "stderr": p.stderr[-3000:]}) + "\n")
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "{}"
    result = json.loads(last)
    assert result.get("ok"), f"case {name} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    if p.returncode != 0:
        # After a forced reset the other runtime may fail in its own teardown
        # at exit; that is recorded, and is no failure of coolbench's.
        assert not clean_exit, f"case {name} exited {p.returncode}\n{p.stderr[-3000:]}"
        print(f"{name}: the interpreter exited {p.returncode} after every step ran: {p.stderr[-600:]}")
    return {s["step"]: s for s in result["steps"]}


def release_of(step):
    assert step["ok"], step
    return step["value"]


def assert_refused_exactly(release, runtime):
    assert release["rc"] == -1, release
    message = release["error"]
    for part in ("cannot release GPU 0", "foreign memory live", "NVML: process", "baseline",
                 "bare context", "cached in", "refused from 1 MiB", runtime, "Nothing was changed"):
        assert part in message, (part, message)
    assert release["report"]["released"] is False


def test_a_live_72_byte_cupy_array_is_refused_and_cupy_computes_the_same_again():
    pytest.importorskip("cupy", reason="CuPy is not installed")
    steps = run_case("cupy_live")
    assert steps["c = a + b, 72-byte arrays live"]["value"] is True
    assert_refused_exactly(release_of(steps["release, flags 0"]), "CuPy")
    assert steps["CuPy again: a + b"]["value"] is True


def test_a_live_4_byte_torch_tensor_is_refused_and_torch_carries_on():
    pytest.importorskip("torch", reason="PyTorch is not installed")
    steps = run_case("torch_live")
    assert_refused_exactly(release_of(steps["release, flags 0"]), "PyTorch")
    assert steps["PyTorch again: x.add_(1)"]["value"] == 3.0
    assert steps["PyTorch: 64x64 matmul"]["value"] == 64.0


def test_cupy_after_free_all_blocks_is_refused_while_its_kernel_stays_loaded():
    # free_all_blocks() returns the arrays' page, but CuPy keeps the add
    # kernel's module loaded: 2 MiB that NVML cannot tell from an array. A
    # reset under it made CuPy's next launch of that kernel crash the process
    # (SIGSEGV, docs/perf/release.md), so the refusal is the safe answer.
    pytest.importorskip("cupy", reason="CuPy is not installed")
    steps = run_case("cupy_freed")
    release = release_of(steps["release, flags 0"])
    assert_refused_exactly(release, "CuPy")
    assert steps["CuPy again: new arrays, x + y"]["value"] is True


def test_torch_after_empty_cache_is_refused_while_its_kernels_stay_loaded():
    # empty_cache() frees the cached segments, but PyTorch's kernels (92 MiB
    # on the H200 after one elementwise op) stay loaded and cannot be unloaded.
    pytest.importorskip("torch", reason="PyTorch is not installed")
    steps = run_case("torch_freed")
    assert steps["tensor deleted, empty_cache()"]["value"] == 0  # nothing reserved
    assert_refused_exactly(release_of(steps["release, flags 0"]), "PyTorch")
    assert steps["PyTorch again: ones(4) + 1"]["value"] == [2.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("runtime, case", [("CuPy", "cupy_forced"), ("PyTorch", "torch_forced")])
def test_force_releases_and_coolbench_survives_the_other_runtimes_errors(runtime, case):
    pytest.importorskip(runtime.lower().replace("pytorch", "torch"), reason=f"{runtime} is not installed")
    steps = run_case(case, clean_exit=False)
    forced = release_of(steps["release, force"])
    assert forced["rc"] == 0, forced
    report = forced["report"]
    assert report["forced"] is True and report["context_reset"] is True
    assert report["foreign_state"] == "foreign memory live"
    assert "of another runtime's device memory" in report["dangling"]
    assert runtime in report["dangling"]
    assert report["process_listed_after"] in (False, None)
    # The other runtime's next use fails in the other runtime, not in coolbench.
    after = [s for name, s in steps.items() if "after the reset" in name]
    assert after and after[0]["ok"] is False, after
    assert release_of(steps["coolbench_device_state"])["rc"] == 0
    # The other runtime's failed call made a new context: a bare one (CuPy:
    # released, its state without memory), or one with its kernels loaded
    # again (PyTorch: refused, then forced, which also clears the sticky error
    # its kernel on a dangling tensor may have left).
    again = release_of(steps["coolbench release again"])
    if again["rc"] == 0:
        assert again["report"]["foreign_state"] == "foreign context state without memory", again
    else:
        assert again["rc"] == -1 and "foreign memory live" in again["error"], again
        assert release_of(steps["coolbench release again, force"])["rc"] == 0
    gemm = steps["coolbench measures a GEMM afterwards"]
    if runtime == "CuPy":
        assert gemm["ok"] and gemm["value"]["complete"], gemm
    else:
        # After two forced resets under PyTorch (H200, driver 580.159.04, torch
        # 2.11) the CUDA runtime answered cudaErrorDevicesUnavailable to
        # coolbench's next cudaSetDevice: coolbench survives it and says so in
        # an exception naming the CUDA error; it does not crash (docs/c_api.md).
        assert gemm["ok"] or "cudaError" in gemm["error"], gemm
