"""bench/hidden_state_trials.py's table on recorded trials (no GPU): what counts as flagged as
found, back within noise after the touch, and flagged again after the run; --from prints it;
the paired child, with stand-ins for torch and coolbench."""
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "hidden_state_trials.py"


def load():
    spec = importlib.util.spec_from_file_location("hidden_state_trials", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(where, shift, threshold, moved=None, hidden=None):
    moved = abs(shift) > threshold if moved is None else moved
    return {"where": where, "shift": shift, "threshold": threshold, "moved": moved,
            "hidden_state": moved if hidden is None else hidden,
            "summary": f"sentinel {100 * shift:+.1f} %"}


def trial(kind, as_found, after_touch=0.002, after_run=0.05):
    return {"kind": kind, "hidden_state": {"checks": [
        check("start, as found", as_found, 0.025),
        check("before burst 1", after_touch, 0.025),
        check("after the run", after_run, 0.025)]}}


RECORDS = [
    trial("formed", 0.051), trial("formed", 0.047), trial("formed", 0.012),
    trial("clean", 0.009, after_run=0.01), trial("clean", 0.014, after_run=0.048),
    {"kind": "large", "error": "exit 1: CUDA error"},
    trial("large", -0.004),
]


def test_table_counts_each_kind():
    rows = load().table(RECORDS)
    assert rows[0].startswith("| kind | trials | hidden state as found")
    by_kind = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[1:-1]] for r in rows[2:]}
    assert list(by_kind) == ["formed", "large", "clean"]
    formed = by_kind["formed"]
    assert formed[1] == "3" and formed[2] == "2 of 3"
    assert formed[3] == "+5.1, +4.7, +1.2 %"
    assert formed[5] == "3 of 3" and formed[6] == "3 of 3" and formed[7] == "0"
    assert by_kind["clean"][2] == "0 of 2" and by_kind["clean"][6] == "1 of 2"
    large = by_kind["large"]
    assert large[1] == "2" and large[2] == "0 of 1" and large[7] == "1"


def test_a_moved_check_with_sensors_changed_is_not_hidden_state():
    record = trial("formed", 0.06)
    record["hidden_state"]["checks"][0]["hidden_state"] = False  # moved, sensors changed
    rows = load().table([record])
    assert rows[2].split("|")[3].strip() == "0 of 1"


def test_from_prints_the_table(tmp_path):
    path = tmp_path / "trials.json"
    path.write_text(json.dumps({"trials": RECORDS}))
    done = subprocess.run([sys.executable, str(SCRIPT), "--from", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| formed | 3 | 2 of 3 |" in done.stdout


def test_isolation_table_compares_each_arm_with_clean(tmp_path):
    module = load()

    def figure(arm, ms, as_found=0.01):
        record = trial(arm, as_found)
        record["figure_ms"] = ms
        return record

    records = [figure("clean/none", 0.2000), figure("clean/none", 0.2002),
               figure("formed/none", 0.2100, 0.05), figure("formed/none", 0.2104, 0.05),
               figure("formed/touch", 0.2001, 0.05), {"kind": "formed/touch", "error": "exit 1"}]
    rows = module.isolation_table(records)
    cells = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[1:-1]] for r in rows[2:]}
    assert list(cells) == ["clean/none", "formed/none", "formed/touch"]
    assert cells["clean/none"][1] == "2" and cells["clean/none"][3] == "+0.00 %"
    assert cells["formed/none"][2].startswith("0.2102 ± ")
    assert cells["formed/none"][3] == "+5.05 %" and cells["formed/none"][4] == "2 of 2"
    assert cells["formed/touch"][2] == "0.2001" and cells["formed/touch"][5] == "1"
    path = tmp_path / "iso.json"
    path.write_text(json.dumps({"part": "isolation", "trials": records}))
    done = subprocess.run([sys.executable, str(SCRIPT), "--from", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| formed/none | 2 | 0.2102 ± " in done.stdout


def test_paired_table_compares_each_arm_with_the_control(tmp_path):
    module = load()

    def pair(arm, first, second, as_found=0.01):
        record = trial(arm, as_found)
        record["first_ms"], record["figure_ms"] = first, second
        return record

    records = [pair("paired/control", 0.2000, 0.2002), pair("paired/control", 0.2100, 0.2098),
               pair("paired/none", 0.2000, 0.2066), pair("paired/none", 0.2100, 0.2170),
               pair("paired/touch", 0.2000, 0.2004, 0.045), {"kind": "paired/touch",
                                                             "error": "exit 1"}]
    rows = module.paired_table(records)
    cells = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[1:-1]] for r in rows[2:]}
    assert list(cells) == ["paired/control", "paired/none", "paired/touch"]
    # control: +0.10 % and -0.0952 %: mean +0.0024 %
    assert cells["paired/control"][1] == "2" and cells["paired/control"][2].startswith("+0.00 % ± ")
    assert cells["paired/control"][3] == "+0.00 %"
    # none: +3.30 % and +3.333 %: mean +3.317 %, against the control +3.31 %
    assert cells["paired/none"][2].startswith("+3.32 % ± ")
    assert cells["paired/none"][3] == "+3.31 %"
    assert cells["paired/touch"][2] == "+0.20 %" and cells["paired/touch"][4] == "1 of 1"
    assert cells["paired/touch"][5] == "1"
    path = tmp_path / "paired.json"
    path.write_text(json.dumps({"part": "paired", "trials": records}))
    done = subprocess.run([sys.executable, str(SCRIPT), "--from", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| paired/none | 2 | +3.32 % ± " in done.stdout


def test_arms_of_another_part_are_refused():
    done = subprocess.run([sys.executable, str(SCRIPT), "--part", "paired", "--arms",
                           "clean/none"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "none of them belongs to --part paired" in done.stderr


def test_paired_child_measures_before_and_after_in_order(monkeypatch, capsys):
    """The child of a paired arm with stand-ins for torch and coolbench: the victim first with
    the touch, the forming measurement unless it is the control, the victim again with the
    arm's isolation; its record carries both figures."""
    import types
    calls = []

    class Result:
        def __init__(self, figure):
            self.figure_ms, self.rel_ci, self.workload = figure, 0.001, "w"

        def to_dict(self):
            return {"summary": {"hidden_state": {"checks": []}},
                    "environment": {"gpu": {"name": "GPU", "uuid": "GPU-1",
                                            "driver_version": "1"}}}

    def measure(fn, **options):
        calls.append(("victim" if isinstance(fn, str) else "form", options["isolation"],
                      options["release"]))
        return Result(0.25 + 0.01 * len(calls))

    fake_torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(set_device=lambda device: None),
        Generator=lambda device: types.SimpleNamespace(manual_seed=lambda seed: None),
        randn=lambda *shape, **kw: None, matmul=lambda a, b: None, half="half")
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "coolbench", types.SimpleNamespace(measure=measure))
    module = load()
    for arm, expected in (
            ("paired/touch", [("victim", "touch"), ("form", "none"), ("victim", "touch")]),
            ("paired/none", [("victim", "touch"), ("form", "none"), ("victim", "none")]),
            ("paired/control", [("victim", "touch"), ("victim", "touch")])):
        calls.clear()
        module.child(arm, 0, 1.5, 5.0, "gemm:fp16:gpt2-small")
        assert [c[:2] for c in calls] == expected, arm
        assert all(c[2] == "keep" for c in calls)
        record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert record["kind"] == arm
        assert record["first_ms"] == pytest.approx(0.26)
        assert record["figure_ms"] == pytest.approx(0.25 + 0.01 * len(expected))
