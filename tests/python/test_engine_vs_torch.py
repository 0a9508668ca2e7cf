"""bench/engine_vs_torch.py's plumbing on the CPU (--cpu-smoke): tiny GPT-2
exports (without and with a past), coolbench's CPU session and PyTorch eager
each in a fresh process under coolbench.measure, the per-kernel profile, the
table, the JSON, and --from rebuilding the same rows from the JSONL.

The smoke needs PyTorch, transformers and onnx, which the project's venv and
CI do not install (tools/requirements-export.txt has them): skipped without
them. The configuration and interval checks run everywhere.
"""
import json
import os
import subprocess
import sys
import time

import pytest

import coolbench

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
SCRIPT = os.path.join(ROOT, "bench", "engine_vs_torch.py")
CONFIGS = ["gpt2:fp32:1:8", "gpt2:fp32:2:1+8"]
FIELDS = ("engine", "model", "dtype", "batch", "seq", "processes", "figure_ms", "ci_ms", "date",
          "gpu", "driver", "commit")


def run(*args):
    done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    for name in ("torch", "transformers", "onnx"):
        pytest.importorskip(name, reason=f"{name} is not installed (tools/requirements-export.txt)")
    if not hasattr(coolbench, "Session"):
        pytest.skip("the module was built without the engine (no coolbench.Session)")
    work = tmp_path_factory.mktemp("engine_vs_torch")
    out = run("--cpu-smoke", "--work", str(work), "--configs", *CONFIGS,
              "--json", str(work / "rows.json"))
    with open(work / "records.jsonl") as f:
        records = [json.loads(line) for line in f]
    with open(work / "rows.json") as f:
        rows = json.load(f)
    return work, out, records, rows


def test_every_engine_and_configuration_measured(smoke):
    _, _, records, _ = smoke
    measured = [r for r in records if r["kind"] == "measure"]
    assert sorted((r["config"], r["engine"]) for r in measured) == sorted(
        (c, e) for c in CONFIGS for e in ("coolbench", "torch_eager"))
    for r in measured:
        assert r.get("error") is None, r.get("traceback") or r["error"]
        assert r["figure_ms"] > 0 and r["kept"] >= 5
        # The same weights and inputs reached both engines: the outputs agree.
        assert r["max_abs_diff"] is not None and r["max_abs_diff"] < 1e-4, r
        assert r["flops"] > 0 and r["weight_bytes"] > 0 and r["bytes_min"] > r["weight_bytes"]
    coolbench_rows = [r for r in measured if r["engine"] == "coolbench"]
    assert all(r["timing"] == "measure(session, feeds)" for r in coolbench_rows)
    prepared = [r for r in records if r["kind"] == "prepare"]
    assert len(prepared) == 2 and all(r["export_s"] is not None for r in prepared)
    # --prestart: every measuring process but the first was started held, loaded its imports
    # with no CUDA context, and measured only after its go. (Which driver libraries it loaded is
    # information: where there is a driver, importing PyTorch loads libcuda through cuBLASLt.)
    held = [r for r in measured if "held" in r]
    assert len(held) == len(measured) - 1
    for r in held:
        # (its go may come before its preload ends: then it reads the go at once)
        assert r["held"]["preload_s"] > 0 and r["held_s"] > 0 and r["held"]["waited_s"] >= 0
        assert r["held"]["cuda_initialized"] in (None, False)  # None: coolbench's process
        assert r["held"]["driver_libraries"] is None or isinstance(
            r["held"]["driver_libraries"], list)


def test_profile_lists_operators(smoke):
    _, out, records, _ = smoke
    profiles = [r for r in records if r["kind"] == "profile"]
    assert sorted(r["engine"] for r in profiles) == ["coolbench", "torch_eager"]
    for r in profiles:
        assert r.get("error") is None, r.get("traceback")
    # On the CPU the profiler sees PyTorch's operators; coolbench's CPU backend
    # runs none (on a GPU, CUPTI records its kernels).
    eager = next(r for r in profiles if r["engine"] == "torch_eager")
    assert eager["kernels"]["top"] and eager["kernels"]["total_us_per_run"] > 0
    assert any(k["name"] == "aten::addmm" for k in eager["kernels"]["top"])
    assert "## Per-kernel time" in out


def test_table_and_json(smoke):
    work, out, _, rows = smoke
    assert "| engine | model | dtype |" in out
    assert len(rows) == 4
    for row in rows:
        assert list(row)[:len(FIELDS)] == list(FIELDS)
        assert row["processes"] == 1 and row["ci_ms"] is None  # one process: no interval
        assert row["best_torch"] == "torch_eager"
    eager = [r for r in rows if r["engine"] == "torch_eager"]
    assert all(r["ratio_to_best_torch"] == pytest.approx(1.0) for r in eager)
    # A session timed on the host clock is marked as not comparable.
    assert all(not r["comparable"] for r in rows if r["engine"] == "coolbench")


def test_from_rebuilds_the_rows(smoke):
    work, _, _, rows = smoke
    again = work / "again.json"
    run("--from", str(work / "records.jsonl"), "--json", str(again))
    with open(again) as f:
        assert json.load(f) == rows


def test_bad_configuration_is_refused():
    done = subprocess.run([sys.executable, SCRIPT, "--configs", "gpt3:fp16:1:128"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "MODEL:DTYPE:BATCH[:SEQ[+PAST]]" in done.stderr


def test_ci_over_processes():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_report as report
    mean, half = report.mean_ci([1.0, 1.2, 1.1, 0.9, 1.3])
    # numpy/scipy: mean 1.1, sd 0.1581, t(0.975, 4) = 2.7764
    assert mean == pytest.approx(1.1)
    assert half == pytest.approx(2.7764 * 0.158114 / 5 ** 0.5, rel=1e-4)
    assert report.t975(60) == pytest.approx(2.0003, abs=2e-4)
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 4, 9, 29, 30, 31, 45, 100, 1000):
        assert report.t975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-4)


def test_rows_against_ceilings_from_records():
    """GPU-shaped records (as a run on the H200 writes them) through the table
    and the JSON rows: means, ratios, shares of the ceilings, floors, notes."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_report as report
    base = dict(kind="measure", config="gpt2:fp16:1:128", model="gpt2", dtype="fp16", batch=1,
                seq=128, past=0, size="full", flops=32.2e9, parameters=124439808,
                weight_bytes=248879616, bytes_min=261746432, gpu="NVIDIA H200",
                driver="580.159.04", commit="abc1234", date="2026-12-05T10:00:00+00:00")
    records = [dict(kind="ceiling", dtype="fp16", copy_bytes=2 << 30, runs=30,
                    copy_bytes_per_s=4.0e12, copy_bytes_per_s_median=3.9e12,
                    gemm_shape="8192x8192x8192 fp16", gemm_flop_per_s=800e12,
                    gemm_flop_per_s_median=700e12, gpu="NVIDIA H200"),
               dict(kind="warm", config="gpt2:fp16:1:128", engine="torch_compile_ma",
                    compile_s=95.0)]
    figures = {"torch_graph": [0.82, 0.83, 0.825, 0.822, 0.828],
               "torch_compile_ma": [0.52, 0.53, 0.525, 0.522, 0.528],
               "coolbench": [0.40, 0.41, 0.405, 0.402, 0.408]}
    seen = "hidden state: sentinel +5.3 %, sensors unchanged; cleared by touch (start, as found)"
    none = "hidden state: none seen, the sentinel within its noise in 3 checks (isolation touch)"
    for engine, values in figures.items():
        for i, value in enumerate(values):
            records.append(dict(base, engine=engine, figure_ms=value, hold=True,
                                timer="device events", compile_s=9.0 if "compile" in engine
                                else None,
                                hidden_state=seen if engine == "torch_graph" and i < 2 else none))
    records.append(dict(base, engine="torch_eager", figure_ms=None, error="RuntimeError: boom"))
    rows = {r["engine"]: r for r in report.aggregate(records)}
    ma, cb = rows["torch_compile_ma"], rows["coolbench"]
    assert ma["figure_ms"] == pytest.approx(0.525) and ma["processes"] == 5
    # scipy.stats.ttest_1samp(x, 0).confidence_interval(0.95): (0.519880, 0.530120)
    assert ma["ci_ms"] == pytest.approx(0.530119511816121 - 0.525, rel=1e-4)
    assert cb["best_torch"] == "torch_compile_ma"
    assert cb["ratio_to_best_torch"] == pytest.approx(0.405 / 0.525)
    assert cb["comparable"] and ma["compile_cold_s"] == 95.0
    assert cb["flop_per_s"] == pytest.approx(32.2e9 / 0.405e-3)
    assert cb["floor_bw_ms"] == pytest.approx(261746432 / 4.0e12 * 1e3)
    assert cb["floor_weights_ms"] == pytest.approx(0.0622, abs=1e-4)
    assert rows["torch_eager"]["processes"] == 0 and rows["torch_eager"]["failed"] == 1
    text = report.table(report.aggregate(records))
    assert "| coolbench | gpt2 | fp16 | 1 | 128 | 5 | 0.4050 ± " in text
    assert "0.771×" in text and "79.5 TFLOP/s (9.9%)" in text  # of 800 TFLOP/s
    assert "1 failed: RuntimeError: boom" in text and "(cold 95 s)" in text
    assert "4 TB/s" in report.ceilings_table(records)
    graph = rows["torch_graph"]
    assert (graph["hidden_state_seen"], graph["hidden_state_checked"]) == (2, 5)
    assert graph["hidden_state_cleared"] == 2 and cb["hidden_state_seen"] == 0
    assert "hidden state seen in 2 of 5 processes, 2 cleared before measuring" in text


def test_rows_per_gpu_and_configurations_taken_per_file(tmp_path):
    """Records of two GPUs make a row per GPU and configuration, each ratio against the
    PyTorch modes on its GPU and each share against its GPU's ceilings; FILE#CONFIG keeps
    that file's records of those configurations (and its ceilings)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    import vs_torch_report as report

    def run(gpu, figures, flop_ceiling):
        base = dict(kind="measure", config="gpt2:fp16:1:128", model="gpt2", dtype="fp16",
                    batch=1, seq=128, past=0, flops=32.2e9, gpu=gpu, timer="device events")
        records = [dict(kind="ceiling", dtype="fp16", gpu=gpu, gemm_flop_per_s=flop_ceiling,
                        copy_bytes_per_s=3e12)]
        for engine, values in figures.items():
            records += [dict(base, engine=engine, figure_ms=v) for v in values]
        records.append(dict(base, config="gpt2:fp16:8:128", engine="coolbench", batch=8,
                            figure_ms=9.0))
        return records

    h200 = run("NVIDIA H200", {"coolbench": [0.40, 0.42], "torch_compile_ro": [0.50, 0.52]},
               800e12)
    h100 = run("NVIDIA H100", {"coolbench": [0.45, 0.47], "torch_compile_ro": [0.60, 0.62]},
               700e12)
    rows = report.aggregate(h200 + h100)
    headline = [r for r in rows if r["config"] == "gpt2:fp16:1:128" and r["engine"] == "coolbench"]
    assert {r["gpu"]: round(r["ratio_to_best_torch"], 4) for r in headline} == {
        "NVIDIA H200": round(0.41 / 0.51, 4), "NVIDIA H100": round(0.46 / 0.61, 4)}
    assert {r["gpu"]: r["flop_ceiling"] for r in headline} == {
        "NVIDIA H200": 800e12, "NVIDIA H100": 700e12}
    assert "on NVIDIA H100" in report.table(rows)
    assert "on NVIDIA" not in report.table(report.aggregate(h200))
    for name, records in (("h200", h200), ("h100", h100)):
        with open(tmp_path / f"{name}.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    taken = evt.read_records([f"{tmp_path / 'h200.jsonl'}#gpt2:fp16:8:128",
                              str(tmp_path / "h100.jsonl")])
    assert sum(r.get("gpu") == "NVIDIA H200" and r["kind"] == "measure" for r in taken) == 1
    assert sum(r["kind"] == "ceiling" for r in taken) == 2
    assert len(taken) == 1 + 1 + len(h100)


def test_engine_switches_make_rows_of_their_own(monkeypatch):
    """Processes run with a COOLBENCH_* switch (a kernel forced, say) are not pooled with the
    default's: each gets its row, its ratio and a note naming the switch; the commit's name
    and a library's place are not switches."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_child as child
    import vs_torch_report as report
    for name in [k for k in os.environ if k.startswith("COOLBENCH_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COOLBENCH_COMMIT", "abc1234")
    monkeypatch.setenv("COOLBENCH_NVML_LIBRARY", "/somewhere/libnvidia-ml.so.1")
    monkeypatch.setenv("COOLBENCH_GEMM_ROW_PHASES", "force")
    assert child.engine_settings() == {"COOLBENCH_GEMM_ROW_PHASES": "force"}
    base = dict(kind="measure", config="gpt2:fp16:8:1024", model="gpt2", dtype="fp16", batch=8,
                seq=1024, past=0, gpu="NVIDIA H200", timer="device events")
    records = [dict(base, engine="torch_compile_ro", figure_ms=v) for v in (5.5, 5.52)]
    records += [dict(base, engine="coolbench", figure_ms=v) for v in (6.5, 6.52)]
    records += [dict(base, engine="coolbench", figure_ms=v,
                     settings={"COOLBENCH_GEMM_ROW_PHASES": "force"}) for v in (6.0, 6.02)]
    rows = [r for r in report.aggregate(records) if r["engine"] == "coolbench"]
    assert sorted((round(r["figure_ms"], 2), r["processes"]) for r in rows) == [(6.01, 2),
                                                                             (6.51, 2)]
    forced = next(r for r in rows if r.get("settings"))
    assert forced["ratio_to_best_torch"] == pytest.approx(6.01 / 5.51)
    assert "with COOLBENCH_GEMM_ROW_PHASES=force" in report.table(rows)


def test_hidden_state_after_table():
    """The checks `--hidden-state-after` records, one row per kind of process."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_report as report
    assert report.hidden_state_after_table([{"kind": "measure"}]) == ""
    base = dict(kind="hidden_state_after", config="gpt2:fp16:1:128")
    records = [dict(base, engine="torch_compile_ma", shift=0.053, hidden_state=True),
               dict(base, engine="torch_compile_ma", shift=0.001, hidden_state=False),
               dict(base, engine="coolbench", shift=-0.002, hidden_state=False),
               dict(base, engine="coolbench", error="no GPU here")]
    text = report.hidden_state_after_table(records)
    assert "| torch_compile_ma | gpt2:fp16:1:128 | 2 | 1 of 2 | +5.3 %, +0.1 % |  |" in text
    assert "| coolbench | gpt2:fp16:1:128 | 1 | 0 of 1 | -0.2 % | 1 |" in text


def test_profile_text_names_what_was_left_out():
    """coolbench's profile leaves session.run's host copies out of the kernels' table."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_report as report
    kernels = {"activity": "cuda", "runs": 20, "kinds": 2, "total_us_per_run": 430.0,
               "calls_per_run": 90, "other_us_per_run": 0,
               "top": [{"name": "nvjet_gemm", "calls_per_run": 49, "us_per_run": 315.0,
                        "share": 315 / 430},
                       {"name": "split_keys_kernel", "calls_per_run": 12, "us_per_run": 115.0,
                        "share": 115 / 430}],
               "left_out": ["Memcpy DtoH (Device -> Pageable)"], "left_out_us_per_run": 1205.6}
    record = dict(kind="profile", engine="coolbench", config="gpt2:fp16:1:128",
                  kernels=kernels, note="session.run's copies to and from the host left out")
    text = report.profiles_text([record])
    assert "430.0 µs of cuda time per run" in text
    assert ("left out: Memcpy DtoH (Device -> Pageable), 1205.6 µs per run "
            "(session.run's copies to and from the host left out)") in text
    assert "| `nvjet_gemm` | 49.0 | 315.0 | 73.3% |" in text
    del kernels["left_out"], kernels["left_out_us_per_run"]  # records from before: no such line
    assert "left out" not in report.profiles_text([record])


def test_skip_done_needs_every_engine_at_the_count(tmp_path):
    """--skip-done: a configuration is done when the records hold --processes error-free
    measures of every engine asked for; one cut short is measured again."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch
    records = []
    for engine in ("coolbench", "torch_graph"):
        records += [dict(kind="measure", config="gpt2:fp16:1:128", engine=engine,
                         figure_ms=0.5)] * 2
    records.append(dict(kind="measure", config="gpt2:fp16:8:128", engine="coolbench",
                        figure_ms=0.9))
    records.append(dict(kind="measure", config="gpt2:fp16:8:128", engine="torch_graph",
                        error="out of memory"))
    records.append(dict(kind="measure", config="gpt2:fp16:8:128", engine="torch_graph",
                        figure_ms=None))
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")
    keys = ["gpt2:fp16:1:128", "gpt2:fp16:8:128", "bert:fp16:1:128"]
    engines = ["coolbench", "torch_graph"]
    assert engine_vs_torch.done_configs([str(path)], keys, engines, 2) == ["gpt2:fp16:1:128"]
    assert engine_vs_torch.done_configs([str(path)], keys, engines, 3) == []
    assert engine_vs_torch.done_configs([str(path)], keys, ["coolbench"], 1) == keys[:2]
    assert engine_vs_torch.done_configs([], keys, engines, 1) == []


def test_max_time_longer_for_power_bound_configurations():
    """A forward of 2,048 tokens or more gets 30 s (the power cap cuts its cold bursts short:
    BERT 32 x 128 kept no sample in 10 s in 2 of 4 PyTorch processes); --max-time wins."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch
    import vs_torch_models as models
    light = [models.parse_config(k) for k in ("gpt2:fp16:1:128", "gpt2:fp16:8:128",
                                              "gpt2:fp16:1:1024", "gpt2:fp16:8:1+128")]
    heavy = [models.parse_config(k) for k in ("bert:fp16:32:128", "gpt2:bf16:8:1024",
                                              "vit:fp16:32")]
    for c in light:
        assert engine_vs_torch.max_time_for([c]) == 10.0, c.key
    for c in heavy:
        assert engine_vs_torch.max_time_for([c]) == 30.0, c.key
    assert engine_vs_torch.max_time_for([]) == 10.0
    assert engine_vs_torch.max_time_for(heavy, 12.5) == 12.5
    assert engine_vs_torch.max_time_for(light + heavy[:1]) == 30.0


def test_vit_parses_without_transformers():
    """ViT's sequence comes from its image and patch sizes, written in SIZES: a child parses
    its configuration without importing transformers."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    assert models.parse_config("vit:fp16:32") == models.Config("vit", "fp16", 32, 197)
    assert models.parse_config("vit:fp16:1:197").seq == 197
    assert models.parse_config("vit:fp32:1", "tiny").seq == 5
    with pytest.raises(ValueError, match="197 tokens"):
        models.parse_config("vit:fp16:1:100")


def test_configurations_past_the_positions_are_refused():
    """A sequence and past beyond the model's positions is refused when parsed, saying so, not
    by an index error in every engine's process; the tiny models take the grid's longest."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    for size in ("full", "tiny"):
        assert models.parse_config("gpt2:fp16:8:1024", size).seq == 1024
        assert models.parse_config("gpt2:fp16:1:1+1023", size).past == 1023
        assert models.parse_config("bert:fp16:1:512", size).seq == 512
        with pytest.raises(ValueError, match="1025 positions, but gpt2"):
            models.parse_config("gpt2:fp16:1:1+1024", size)
        with pytest.raises(ValueError, match="513 positions, but bert"):
            models.parse_config("bert:fp16:1:513", size)


def test_children_read_the_work_counts_the_parent_wrote(tmp_path, monkeypatch):
    """The parent counts each configuration's work once (work_counts.json in the work folder);
    a child takes its configuration's from there, and counts it itself where it is missing."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    config = models.parse_config("gpt2:fp16:1:128")
    fake = {"flops": 1, "parameters": 2, "weight_bytes": 3, "bytes_min": 4}
    monkeypatch.setattr(models, "work", lambda c, size="full": dict(fake, key=c.key, size=size))
    models.write_work_counts(str(tmp_path), [config], "full")
    assert (tmp_path / models.WORK_COUNTS).exists()
    monkeypatch.setattr(models, "work", lambda c, size="full": {"counted": "here"})
    assert models.work_counted(str(tmp_path), config, "full") == dict(fake, key=config.key,
                                                                       size="full")
    # Another size, another configuration, or no file: counted in the child.
    assert models.work_counted(str(tmp_path), config, "tiny") == {"counted": "here"}
    other = models.parse_config("gpt2:fp16:8:128")
    assert models.work_counted(str(tmp_path), other, "full") == {"counted": "here"}
    assert models.work_counted(str(tmp_path / "none"), config, "full") == {"counted": "here"}


def test_a_measure_record_carries_its_cooling_wait(tmp_path):
    """The seconds waited for the GPU to cool before a measuring child are in its JSONL line (the
    line is written as the child ends, so they must be on the record before that), and count
    towards what the budget expects the next child of its kind to take."""
    import argparse
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    args = argparse.Namespace(build=None, work=str(tmp_path), log=str(tmp_path / "children.log"),
                              jsonl=str(tmp_path / "records.jsonl"), budget=None)
    runner = evt.Runner(args, "abc")
    line = 'RECORD {"kind": "measure", "engine": "coolbench", "figure_ms": 1.5}'

    def child():
        process = subprocess.Popen([sys.executable, "-c", f"print({line!r})"],
                                   stdout=subprocess.PIPE, text=True)
        return evt.Child(process, open(tmp_path / "err", "w+"), "==== m\n", time.perf_counter())

    record = runner.finish("measure", child(), "measure coolbench", cooled_s=12.5)
    assert record["cooled_s"] == 12.5
    with open(args.jsonl) as f:
        written = [json.loads(x) for x in f]
    assert [r["cooled_s"] for r in written] == [12.5]
    assert runner.durations["measure coolbench"][0] >= 12.5
    # A child that waited for nothing (not a measure, or no GPU) has no cooled_s.
    record = runner.finish("measure", child(), "m")
    assert "cooled_s" not in record and "held_s" not in record
    # A child that died without a record leaves one of what it was to do, which the tables
    # count as a failed process of its engine and configuration.
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    import vs_torch_report as report
    config = models.parse_config("gpt2:fp16:1:128")
    died = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"],
                            stdout=subprocess.PIPE, text=True)
    record = runner.finish("measure", evt.Child(died, open(tmp_path / "err2", "w+"), "==== d\n",
                                                time.perf_counter(),
                                                {"engine": "coolbench", "configs": [config]}),
                           "coolbench")
    assert (record["engine"], record["config"]) == ("coolbench", "gpt2:fp16:1:128")
    assert "exit 3" in record["error"]
    rows = report.aggregate([dict(record, model="gpt2", dtype="fp16", batch=1, seq=128)])
    assert rows[0]["failed"] == 1 and rows[0]["processes"] == 0


def test_top_up_pools_this_gpu_and_commit_only():
    """--top-up counts the earlier measures taken on this GPU (UUID) from this commit at this
    model size, error-free with a figure; profiles and ceilings pooled alike."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    base = {"kind": "measure", "config": "gpt2:fp16:1:128", "engine": "coolbench",
            "figure_ms": 0.42, "gpu_uuid": "GPU-a", "commit": "abc", "size": "full"}
    records = [
        base,
        dict(base, engine="torch_graph"),
        dict(base, gpu_uuid="GPU-b"),            # another GPU
        dict(base, commit="def"),                # another commit
        dict(base, size="tiny"),                 # another model size
        dict(base, error="ImportError: ..."),    # failed
        dict(base, figure_ms=None),              # no figure
        {k: v for k, v in base.items() if k != "gpu_uuid"},  # before records named the UUID
        dict(base, kind="profile", figure_ms=None),
        dict(base, kind="ceiling", dtype="fp16", figure_ms=None),
        dict(base, kind="prepare"),
    ]
    kept = evt.poolable(records, "GPU-a", "abc", "full")
    assert [(r["kind"], r["engine"]) for r in kept] == [
        ("measure", "coolbench"), ("measure", "torch_graph"), ("profile", "coolbench"),
        ("ceiling", "coolbench")]
    need, profiled = evt.top_up_need(kept, ["gpt2:fp16:1:128", "gpt2:fp16:8:128"],
                                     ["coolbench", "torch_graph", "torch_eager"], 3)
    assert need == {("gpt2:fp16:1:128", "coolbench"): 2, ("gpt2:fp16:1:128", "torch_graph"): 2,
                    ("gpt2:fp16:1:128", "torch_eager"): 3, ("gpt2:fp16:8:128", "coolbench"): 3,
                    ("gpt2:fp16:8:128", "torch_graph"): 3, ("gpt2:fp16:8:128", "torch_eager"): 3}
    assert profiled == {("gpt2:fp16:1:128", "coolbench")}
    # coolbench's measures pool only with those of the same engine switches; PyTorch's do
    # not carry any.
    forced = dict(base, settings={"COOLBENCH_ATTENTION_KERNEL": "wgmma64"})
    switched = [base, forced, dict(base, engine="torch_graph")]
    assert evt.poolable(switched, "GPU-a", "abc", "full") == [base, switched[2]]
    assert evt.poolable(switched, "GPU-a", "abc", "full",
                        {"COOLBENCH_ATTENTION_KERNEL": "wgmma64"}) == [forced, switched[2]]


def test_profile_alone_profiles_every_configuration():
    """--profile alone profiles every configuration of the run (the grid's loop in
    docs/perf/engine.md passes it so; it once meant none, and a night's run took no profile),
    --profile none none, and named ones (or sets) those."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    configs = evt.parse_configs(["gpt2:fp16:8:1024", "bert:fp16:32:128"], "full")
    assert evt.profiled_keys([], configs, "full") == ["gpt2:fp16:8:1024", "bert:fp16:32:128"]
    assert evt.profiled_keys(["none"], configs, "full") == []
    assert evt.profiled_keys(["bert:fp16:32:128"], configs, "full") == ["bert:fp16:32:128"]
    assert evt.profiled_keys(["headline"], configs, "full") == ["gpt2:fp16:1:128"]
    args = evt.options().parse_args(["--configs", "gpt2:fp16:8:1024", "--profile"])
    assert args.profile == []
    assert evt.options().parse_args([]).profile == [evt.HEADLINE]


def test_plan_runs_only_the_missing_processes():
    """With a top-up's need, each engine runs its missing processes, in shuffled rounds; the
    first process of an engine profiles unless an earlier run holds its profile."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import argparse as ap
    import engine_vs_torch as evt
    import vs_torch_models as models

    args = ap.Namespace(seed=1, ceilings=False, device="cuda:0", processes=5,
                        profile=["gpt2:fp16:1:128"])
    configs = [models.parse_config("gpt2:fp16:1:128")]
    engines = ["coolbench", "torch_graph", "torch_compile_ro"]
    need = {("gpt2:fp16:1:128", "coolbench"): 1, ("gpt2:fp16:1:128", "torch_graph"): 0,
            ("gpt2:fp16:1:128", "torch_compile_ro"): 3}
    ran = [(s.kw["engine"], s.kw["profile"])
           for s in evt.plan(args, configs, engines, need, {("gpt2:fp16:1:128", "coolbench")})]
    assert sorted(e for e, _ in ran) == ["coolbench"] + ["torch_compile_ro"] * 3
    assert [(e, p) for e, p in ran if p] == [("torch_compile_ro", True)]
    # Without a need every engine runs --processes times, each profiled once; with the
    # ceilings, one for the dtype comes first.
    args.ceilings = True
    steps = evt.plan(args, configs, engines)
    assert steps[0].child == "ceiling" and steps[0].kw == {"dtype": "fp16"}
    ran = [(s.kw["engine"], s.kw["profile"]) for s in steps[1:]]
    assert sorted(e for e, _ in ran) == sorted(engines * 5)
    assert sorted(e for e, p in ran if p) == sorted(engines)


class StepRunner:
    """Runner's step methods, logged: which child started (held or not), was let go, ended or
    was dropped, in what order; `budget` steps fit, the rest do not."""

    def __init__(self, prestart, budget=99):
        import argparse as ap
        self.args = ap.Namespace(prestart=prestart, hidden_state_after=False)
        self.log, self.budget, self.count = [], budget, 0

    def fits(self, label):
        self.count += 1
        return self.count <= self.budget

    def run(self, child, label, **kw):
        self.log.append(("run", label))

    def wait_cool(self):
        self.log.append(("cool",))
        return 0.0

    def start(self, child, held=False, **kw):
        name = kw["engine"] + str(len(self.log))
        self.log.append(("start held" if held else "start", name))
        return name

    def go(self, handle):
        self.log.append(("go", handle))
        return handle

    def finish(self, child, handle, label, cooled_s=None):
        self.log.append(("finish", handle))

    def drop(self, handle):
        self.log.append(("drop", handle))


def test_the_next_process_is_started_held_while_one_measures():
    """--prestart: while a process measures, the next measuring step's process is already
    started, held; it is let go only after the GPU cooled, once the one before it has ended;
    a ceiling between them runs while it waits; where the budget stops the run, the held
    process is dropped, never measured."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    steps = [evt.Step("measure", "a", {"engine": "a"}), evt.Step("ceiling", "ceiling", {}),
             evt.Step("measure", "b", {"engine": "b"}), evt.Step("measure", "c", {"engine": "c"})]
    runner = StepRunner(prestart=True)
    evt.run_steps(runner, steps)
    assert runner.log == [
        ("cool",), ("start", "a1"), ("start held", "b2"), ("finish", "a1"),
        ("run", "ceiling"),
        ("cool",), ("go", "b2"), ("start held", "c7"), ("finish", "b2"),
        ("cool",), ("go", "c7"), ("finish", "c7")]
    # Without --prestart each process starts after the one before it ended.
    runner = StepRunner(prestart=False)
    evt.run_steps(runner, steps)
    assert [e for e in runner.log if e[0] != "cool"] == [
        ("start", "a1"), ("finish", "a1"), ("run", "ceiling"), ("start", "b5"),
        ("finish", "b5"), ("start", "c8"), ("finish", "c8")]
    # The budget stops the run before b: b, started held, is dropped.
    runner = StepRunner(prestart=True, budget=2)
    evt.run_steps(runner, steps)
    assert runner.log[-2:] == [("run", "ceiling"), ("drop", "b2")]
    assert ("go", "b2") not in runner.log


def test_a_held_child_waits_for_its_go_and_leaves_without_one(tmp_path):
    """A real held child (the parent's go() and drop() on a measuring child of this script):
    without a go it measures nothing and leaves when its stdin closes; the Runner's start()
    keeps its stderr out of the log until it ends."""
    import argparse
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import engine_vs_torch as evt
    args = evt.options().parse_args(["--work", str(tmp_path), "--device", "cpu",
                                     "--engines", "coolbench"])
    args.work, args.log = str(tmp_path), str(tmp_path / "children.log")
    args.build = None  # coolbench from this test's PYTHONPATH
    args.jsonl = str(tmp_path / "records.jsonl")
    assert isinstance(args, argparse.Namespace) and args.prestart
    runner = evt.Runner(args, "abc")
    config = evt.parse_configs(["gpt2:fp32:1:8"], "tiny")[0]
    handle = runner.start("measure", held=True, engine="coolbench", configs=[config])
    time.sleep(3)  # long enough to import coolbench and reach its wait
    assert handle.process.poll() is None, "it did not wait for its turn"
    runner.drop(handle)
    assert handle.process.returncode == 0
    # Let go, it would have printed a record (an error one here: no export in the work folder).
    assert "RECORD" not in handle.process.stdout.read()
    assert not os.path.exists(args.log)  # nothing in the log: it never ended as a child
    # A held child that ended before its go (its imports failed: here an engine's module that
    # is not there) is let go without a broken pipe, and its error record is read as any.
    runner.env["PYTHONPATH"] = str(tmp_path)  # neither coolbench nor the benchmark's modules
    handle = runner.start("measure", held=True, engine="coolbench", configs=[config])
    handle.process.wait(timeout=60)
    record = runner.finish("measure", runner.go(handle), "coolbench")
    assert "coolbench" in record.get("error", "") and "held_s" in record, record


def test_top_up_without_a_gpu_uuid_is_refused(tmp_path):
    """Where nvidia-smi gives no UUID (no GPU, no driver) nothing can be pooled safely."""
    if subprocess.run(["sh", "-c", "command -v nvidia-smi"], capture_output=True).returncode == 0:
        pytest.skip("nvidia-smi is here: the refusal is for a machine without it")
    records = tmp_path / "records.jsonl"
    records.write_text("")
    done = subprocess.run([sys.executable, SCRIPT, "--top-up", str(records)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert "--top-up: no UUID from nvidia-smi" in done.stderr


def test_a_dirty_tree_is_named_by_its_files(tmp_path):
    """Two working trees over one commit get two names (what --top-up pools by), and naming
    them leaves the checkout's own index as it was."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_report as report

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-qm", "first")
    (tmp_path / "a.txt").write_text("two\n")
    first = report.tree_suffix(str(tmp_path))
    assert len(first) == 8 and first.startswith("-")
    assert report.tree_suffix(str(tmp_path)) == first  # the same files, the same name
    (tmp_path / "new.txt").write_text("untracked\n")
    second = report.tree_suffix(str(tmp_path))
    assert second != first
    assert git("status", "--porcelain").splitlines() == [" M a.txt", "?? new.txt"]


def test_dims_are_transformers_defaults():
    """dims() (the sizes written out, so a coolbench process never imports transformers) agree
    with transformers' configurations at both sizes."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    built = {"gpt2": models.gpt2_config, "bert": models.bert_config, "vit": models.vit_config}
    for size in ("full", "tiny"):
        for model, make in built.items():
            cfg = make(size)
            models.check_dims(model, size, cfg)  # raises where they differ
            for name, value in vars(models.dims(model, size)).items():
                assert getattr(cfg, name) == value, (model, size, name)
    cfg = models.gpt2_config("tiny")
    cfg.n_layer += 1
    with pytest.raises(ValueError, match="n_layer"):
        models.check_dims("gpt2", "tiny", cfg)


def test_coolbench_process_needs_neither_torch_nor_transformers():
    """What a coolbench process and the parent compute (inputs, feeds, names, work) comes from
    dims(): neither imports torch nor transformers."""
    code = ("import sys; sys.path.insert(0, 'bench'); import vs_torch_models as m\n"
            "for key in ('gpt2:fp16:1:128', 'gpt2:fp16:8:1+128', 'bert:fp16:1:128', "
            "'vit:fp16:1'):\n"
            "    c = m.parse_config(key)\n"
            "    m.to_feeds(m.make_inputs(c, 'full'), c, 'full'); m.output_names(c, 'full')\n"
            "    m.work(c)\n"
            "print(sorted(n for n in ('torch', 'transformers') if n in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _torch_models():
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"{name} is not installed (tools/requirements-export.txt)")
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import vs_torch_models as models
    return models


def _bits(tensor):
    import torch
    if not tensor.is_floating_point():
        return tensor
    return tensor.detach().contiguous().view({2: torch.int16, 4: torch.int32}[
        tensor.element_size()])


@pytest.mark.parametrize("model", ["gpt2", "bert", "vit"])
def test_weights_file_gives_the_drawn_model_bit_for_bit(tmp_path, model):
    """The model built from the prepare process's weights file holds the tensors the seeded
    draw gives, bit for bit: every parameter and buffer (non-persistent ones too), tied where
    the drawn one is; the generator ends where the draw left it; and the wrapped module, cast
    or not, computes the same outputs."""
    models = _torch_models()
    import torch
    path = models.weights_path(str(tmp_path), model, "tiny")
    assert models.ensure_weights(model, "tiny", path) is not None  # drawn and written
    assert models.ensure_weights(model, "tiny", path) is None  # there: not again
    drawn = models.seeded_model(model, "tiny")
    after_draw = torch.get_rng_state()
    torch.manual_seed(7)
    loaded, why = models.load_weights(model, "tiny", path)
    assert why is None
    assert torch.equal(torch.get_rng_state(), after_draw)
    for kind in ("named_parameters", "named_buffers"):
        want = dict(getattr(drawn, kind)(remove_duplicate=False))
        got = dict(getattr(loaded, kind)(remove_duplicate=False))
        assert list(got) == list(want)
        for name, tensor in want.items():
            other = got[name]
            assert not other.is_meta, name
            assert (other.dtype, other.shape, other.stride(), other.requires_grad) == (
                tensor.dtype, tensor.shape, tensor.stride(), tensor.requires_grad), name
            assert torch.equal(_bits(other), _bits(tensor)), name
    if model == "gpt2":
        assert loaded.lm_head.weight is loaded.transformer.wte.weight
    if model == "bert":  # non-persistent: state_dict has neither
        assert {"embeddings.position_ids", "embeddings.token_type_ids"} <= set(
            dict(loaded.named_buffers()))
    assert models.weights_differ(drawn, loaded) is None
    # The same model around them (transformers' bookkeeping of its own initialisation aside).
    assert repr(loaded) == repr(drawn)
    assert loaded.config.to_dict() == drawn.config.to_dict()
    keys = {"gpt2": ["gpt2:fp32:2:8", "gpt2:fp16:2:1+8"], "bert": ["bert:fp32:2:8"],
            "vit": ["vit:bf16:2"]}[model]
    for key in keys:
        config = models.parse_config(key, "tiny")
        info = {}
        from_file = models.build_module(config, "tiny", "cpu", path, info)
        assert info["weights"] == "file"
        assert set(info["build_parts_s"]) == {"imports", "model", "to_device"}
        seeded = models.build_module(config, "tiny", "cpu")
        assert models.weights_differ(seeded, from_file) is None, key
        inputs = models.to_torch(models.make_inputs(config, "tiny"), config, "cpu")
        with torch.inference_mode():
            a, b = seeded(*inputs), from_file(*inputs)
        for x, y in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
            assert torch.equal(_bits(x), _bits(y)), key


def test_weights_differ_sees_values_and_ties():
    """weights_differ, which save_weights checks the file with, sees one bit and a tie."""
    models = _torch_models()
    import torch
    a, b = models.seeded_model("gpt2", "tiny"), models.seeded_model("gpt2", "tiny")
    assert models.weights_differ(a, b) is None
    with torch.no_grad():
        weight = b.transformer.h[1].mlp.c_fc.weight
        weight.view(-1)[5] = torch.nextafter(weight.view(-1)[5], torch.tensor(1.0))
    assert "c_fc.weight: other values" in models.weights_differ(a, b)
    c = models.seeded_model("gpt2", "tiny")
    c.lm_head.weight = torch.nn.Parameter(c.lm_head.weight.detach().clone())  # untied
    assert models.weights_differ(a, c) is not None


def test_weights_file_of_another_recipe_is_not_used(tmp_path, monkeypatch):
    """A missing, cut or foreign file, or one drawn by another seed, sizes or version, is
    not used: the model's weights are drawn, and build_module says why."""
    models = _torch_models()
    config = models.parse_config("gpt2:fp32:1:8", "tiny")
    path = models.weights_path(str(tmp_path), "gpt2", "tiny")
    info = {}
    models.build_module(config, "tiny", "cpu", path, info)
    assert info["weights"] == "drawn (no weights file of this recipe)"
    models.save_weights("gpt2", "tiny", path)
    monkeypatch.setattr(models, "SEED", models.SEED + 1)
    assert models.load_weights("gpt2", "tiny", path) == (None, "no weights file of this recipe")
    monkeypatch.undo()
    assert models.load_weights("gpt2", "tiny", path)[1] is None
    assert models.load_weights("bert", "tiny", path)[0] is None  # another model's
    with open(path, "r+b") as f:
        f.truncate(1000)
    assert models.load_weights("gpt2", "tiny", path)[0] is None
    assert not [p for p in os.listdir(os.path.dirname(path)) if p.endswith(".partial")]
