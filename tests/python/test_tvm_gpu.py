"""The report's scenario inside TVM on a GPU (examples/tvm_cuda_reset.py): the Add
compiled for CUDA, run, released through device_api.cuda_reset, run again; refused
while a TVM array lives. Needs scripts/stage-tvm-runtime.sh's folder (compiled
where apache-tvm is installed), found at $COOLBENCH_TVM_STAGE or build/tvm-runtime."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
STAGE = pathlib.Path(os.environ.get("COOLBENCH_TVM_STAGE", ROOT / "build" / "tvm-runtime"))


@pytest.mark.gpu
def test_the_reports_call_releases_tvms_gpu_and_tvm_runs_again():
    library = STAGE / "add_cuda.so"
    if not library.exists():
        pytest.skip(f"no {library}: run scripts/stage-tvm-runtime.sh where apache-tvm is installed")
    command = [sys.executable, str(ROOT / "examples" / "tvm_cuda_reset.py"), "--library", str(library)]
    if (STAGE / "site" / "tvm").is_dir():
        command += ["--runtime-dir", str(STAGE / "site")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    for step in ("1. ", "2. ", "3. ", "4. refused", "5. TVM carried on"):
        assert step in done.stdout
