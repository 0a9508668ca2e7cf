"""coolbench.measure(TARGET, processes=N): a callable by name in fresh processes, through
`coolbench exec` over the doubles of NVML and the CUDA driver (no GPU needed)."""
import os
import subprocess
import sys
import textwrap

import pytest

import coolbench
from coolbench import processes


@pytest.fixture
def script(tmp_path):
    """A script whose function sleeps 1 or 2 ms, by the process id's parity: two levels."""
    path = tmp_path / "work.py"
    path.write_text(textwrap.dedent("""
        import os, time
        LEVEL = 0.001 if os.getpid() % 2 else 0.002
        def step():
            time.sleep(LEVEL)
        not_callable = 3
    """))
    return path


def test_a_target_is_found_by_module_or_script(script):
    assert processes.load_target(f"{script}:step").__name__ == "step"
    assert processes.load_target("os.path:join") is os.path.join
    for bad in ["step", f"{script}:", f"{script}:not_callable", "nowhere.py:step"]:
        with pytest.raises(ValueError):
            processes.load_target(bad)


def test_the_worker_prints_latency_lines_until_stopped(script):
    worker = subprocess.Popen([sys.executable, "-m", "coolbench.processes", f"{script}:step"],
                              stdout=subprocess.PIPE, text=True)
    try:
        lines = [worker.stdout.readline() for _ in range(3)]
    finally:
        worker.kill()
        worker.wait()
    for line in lines:
        word, value = line.split()
        assert word == "latency_ms"
        assert 0.5 < float(value) < 100


@pytest.mark.skipif(not os.environ.get("COOLBENCH_TEST_FAKE_NVML"),
                    reason="the NVML and CUDA doubles are not named (ctest names them)")
def test_processes_give_the_mean_of_fresh_processes(script, monkeypatch):
    monkeypatch.setenv("COOLBENCH_NVML_LIBRARY", os.environ["COOLBENCH_TEST_FAKE_NVML"])
    monkeypatch.setenv("COOLBENCH_CUDA_LIBRARY", os.environ["COOLBENCH_TEST_FAKE_CUDA"])
    # GPU 1 of the doubles (GPU 0 reports the power cap, which the gate waits out).
    r = coolbench.measure(f"{script}:step", processes=5, device=1, rel_ci=0.5,
                          context_min_samples=10, min_time=0.1)
    assert isinstance(r, coolbench.ProcessesResult)
    assert r.processes >= 5
    assert r.figure_ms == pytest.approx(sum(r.per_process_ms) / r.processes)
    assert r.ci_ms[0] <= r.figure_ms <= r.ci_ms[1]
    assert "processes" in repr(r)


def test_processes_need_a_name_and_no_feeds():
    with pytest.raises(TypeError):
        coolbench.measure(lambda: None, processes=3)
    with pytest.raises(ValueError):
        coolbench.measure("os.path:join", processes=1)
