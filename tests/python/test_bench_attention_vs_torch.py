"""bench/attention_vs_torch.py's plumbing on the CPU: reading attention_bench's
table (a stand-in program prints one), the configurations' FLOP count, and the
refusal of a bad build folder. Timing PyTorch's SDPA needs a GPU and runs on
the GPU machine only (the benchmark itself)."""
import argparse
import os
import stat
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import attention_vs_torch as avt  # noqa: E402

TABLE = """cuda:0 (NVIDIA H200, sm_90, cuBLASLt), 30 runs after 5 warm-up runs

| config | dtype | unfused ms | fused ms | graph ms | speed-up | fused TFLOP/s | fused GB/s | fma32 ms | fma64 ms | tf32x3 ms | mma ms | split_keys ms | decode_scalar ms | general ms |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
| gpt2 prefill b1 s128 | float16 | 0.0357 | 0.0091 | 0.0061 | 5.87x | 4.13 | 129 | 0.0181 | 0.0200 | - | 0.0085 | 0.0090 | - | 0.0090 |
| gpt2 decode b1 past128 | float16 | 0.0510 | 0.0122 | 0.0047 | 4.19x | 0.03 | 33 | - | - | - | - | - | 0.0131 | - |
| gpt2 prefill b1 s128 | float32 | 0.0353 | 0.0154 | 0.0134 | 2.63x | 1.88 | 117 | 0.0134 | 0.0150 | 0.0160 | - | - | - | - |
"""

# attention_bench before its "graph ms" column: the fused node's figure is taken.
OLD_TABLE = """cuda:0 (NVIDIA H200, sm_90, cuBLASLt), 30 runs after 5 warm-up runs

| config | dtype | unfused ms | fused ms | speed-up | fused TFLOP/s | fused GB/s | fma32 ms | fma64 ms | mma ms | split_keys ms | general ms |
|---|---|---|---|---|---|---|---|---|---|---|---|
| gpt2 prefill b1 s128 | float32 | 0.0353 | 0.0134 | 2.63x | 1.88 | 117 | 0.0134 | 0.0150 | - | - | - |
"""


def fake_build(tmp_path, text=TABLE, code=0):
    bench = tmp_path / "bench"
    bench.mkdir()
    exe = bench / "attention_bench"
    (tmp_path / "table.txt").write_text(text)
    exe.write_text(f"#!/bin/sh\ncat '{tmp_path / 'table.txt'}'\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


def args(build, dtypes=("float16", "bfloat16", "float32"), raw=None):
    return argparse.Namespace(build=build, runs=30, only=None, dtypes=list(dtypes), raw=raw)


def test_reads_the_graph_column_of_the_asked_dtypes(tmp_path):
    raw = tmp_path / "raw.txt"
    described, rows = avt.coolbench_rows(args(fake_build(tmp_path), ("float32",), str(raw)))
    assert described.startswith("cuda:0 (NVIDIA H200")
    assert rows == [{"config": "gpt2 prefill b1 s128", "dtype": "float32", "coolbench_ms": 0.0134,
                     "timed": "graph ms"}]
    assert "fma64 ms" in raw.read_text()  # the whole output is kept


def test_an_older_table_gives_the_fused_column(tmp_path):
    _, rows = avt.coolbench_rows(args(fake_build(tmp_path, OLD_TABLE)))
    assert rows == [{"config": "gpt2 prefill b1 s128", "dtype": "float32", "coolbench_ms": 0.0134,
                     "timed": "fused ms"}]


def test_every_dtype_by_default(tmp_path):
    _, rows = avt.coolbench_rows(args(fake_build(tmp_path)))
    assert [(r["config"], r["dtype"]) for r in rows] == [
        ("gpt2 prefill b1 s128", "float16"), ("gpt2 decode b1 past128", "float16"),
        ("gpt2 prefill b1 s128", "float32")]


def test_a_failing_program_stops_with_its_message(tmp_path):
    with pytest.raises(SystemExit, match="attention_bench: no GPU|failed"):
        avt.coolbench_rows(args(fake_build(tmp_path, "attention_bench: no GPU\n", code=1)))


def test_flops_halve_causal_prefill_only():
    assert avt.flops("gpt2 prefill b1 s128") == 4.0 * 12 * 128 * 128 * 64 * 0.5
    assert avt.flops("gpt2 decode b1 past128") == 4.0 * 12 * 1 * 129 * 64
    assert avt.flops("vit b1 s197") == 4.0 * 12 * 197 * 197 * 64


def test_configurations_match_attention_bench():
    # The names the C++ program prints are the keys here: a renamed configuration would
    # leave a row without its PyTorch figure.
    with open(os.path.join(ROOT, "bench", "attention.cpp")) as f:
        source = f.read()
    for name in avt.CONFIGS:
        assert f'"{name}"' in source, name
