"""coolbench.Session: an ONNX model run from Python the way onnxruntime's
InferenceSession is, on the CPU here (against onnxruntime) and on the GPU in
the cases marked gpu (cuda:0 against cpu), and measured under the protocol.
Models come from `coolbench model`, the command beside the module.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import coolbench

COMMAND = os.path.join(os.path.dirname(coolbench.__file__), "bin", "coolbench")
GPT2_ARGS = ["--layers", "1", "--hidden", "32", "--heads", "2", "--vocab", "64",
             "--positions", "16", "--seq", "8", "--seed", "3"]


def _model(tmp_path, *args):
    path = str(tmp_path / (args[0] + ".onnx"))
    subprocess.run([COMMAND, "model", *args, "-o", path], check=True, capture_output=True)
    return path


@pytest.fixture
def add_model(tmp_path):
    return _model(tmp_path, "add")


@pytest.fixture
def gpt2_model(tmp_path):
    return _model(tmp_path, "gpt2", *GPT2_ARGS)


@pytest.fixture
def gpt2_fp16_model(tmp_path):
    return _model(tmp_path, "gpt2", *GPT2_ARGS, "--dtype", "fp16")


def _add_feeds(session, seed=0):
    rng = np.random.default_rng(seed)
    shapes = {v.name: [d if isinstance(d, int) else 3 for d in v.shape] for v in session.inputs}
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


def _ids(batch=1, sequence=8, vocab=64, seed=0):
    return np.random.default_rng(seed).integers(0, vocab, size=(batch, sequence), dtype=np.int64)


def test_inputs_and_outputs_name_dtype_and_shape(gpt2_model):
    s = coolbench.Session(gpt2_model, device="cpu")
    assert s.device == "cpu"
    assert [v.name for v in s.inputs] == ["input_ids"]
    assert s.inputs[0].dtype == "int64"
    assert s.inputs[0].shape == ["batch", "sequence"]  # symbolic dimensions as strings
    assert s.outputs[0].dtype == "float32"
    assert s.outputs[0].shape[-1] == 64
    assert "input_ids" in repr(s.inputs[0])


def test_the_add_model_matches_onnxruntime(add_model):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    s = coolbench.Session(add_model, device="cpu")
    feeds = _add_feeds(s)
    reference = ort.InferenceSession(add_model, providers=["CPUExecutionProvider"])
    (got,) = s.run(None, feeds)
    (want,) = reference.run(None, feeds)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, sum(feeds.values()))


def test_a_tiny_gpt2_matches_onnxruntime_for_all_and_named_outputs(gpt2_model):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    s = coolbench.Session(gpt2_model, device="cpu", dims={"batch": 2, "sequence": 8})
    feeds = {"input_ids": _ids(batch=2)}
    want = ort.InferenceSession(gpt2_model, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = s.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    name = s.outputs[0].name
    (named,) = s.run([name], feeds)
    np.testing.assert_array_equal(named, got[0])
    # Another sequence length binds the symbol again.
    (shorter,) = s.run([name], {"input_ids": _ids(sequence=5)})
    assert shorter.shape[:2] == (1, 5)


def test_float16_comes_back_as_float16(gpt2_fp16_model):
    s = coolbench.Session(gpt2_fp16_model, device="cpu")
    (logits,) = s.run([s.outputs[0].name], {"input_ids": _ids()})
    assert logits.dtype == np.float16
    assert np.isfinite(logits.astype(np.float32)).all()


def test_wrong_names_dtypes_and_shapes_are_clear_errors(add_model):
    s = coolbench.Session(add_model, device="cpu")
    feeds = _add_feeds(s)
    first = s.inputs[0].name
    with pytest.raises(coolbench.InvalidArgument, match="no output 'nope'"):
        s.run(["nope"], feeds)
    with pytest.raises(coolbench.InvalidArgument, match="no input 'nope'"):
        s.run(None, {**feeds, "nope": feeds[first]})
    with pytest.raises(coolbench.InvalidArgument, match="is missing from feeds"):
        s.run(None, {first: feeds[first]})
    with pytest.raises(coolbench.InvalidArgument, match=r"float32 in the model; got a float64"):
        s.run(None, {**feeds, first: feeds[first].astype(np.float64)})
    with pytest.raises(coolbench.InvalidArgument, match="takes a numpy array"):
        s.run(None, {**feeds, first: [1.0, 2.0]})
    with pytest.raises(coolbench.InvalidArgument, match=first):
        s.run(None, {**feeds, first: np.zeros((7, 7, 7), np.float32)})
    with pytest.raises(coolbench.InvalidArgument, match="cpu' or 'cuda:N'"):
        coolbench.Session(add_model, device="tpu")
    with pytest.raises(coolbench.Error):
        coolbench.Session(os.path.join(os.path.dirname(add_model), "missing.onnx"), device="cpu")


def test_without_a_gpu_the_default_device_is_the_cpu_with_a_warning(add_model, has_gpu):
    if has_gpu:
        pytest.skip("a GPU is present: the default is cuda:0 (test_gpu_is_the_default_device)")
    with pytest.warns(RuntimeWarning, match="running on the CPU"):
        s = coolbench.Session(add_model)
    assert s.device == "cpu"


def test_measure_a_cpu_session_under_the_protocol(gpt2_model):
    s = coolbench.Session(gpt2_model, device="cpu")
    r = coolbench.measure(s, {"input_ids": _ids()}, min_time=0.1, max_time=2, min_samples=10)
    assert r.figure_ms is not None and r.figure_ms > 0
    assert "model session (cpu" in r.workload, r.workload
    assert "input_ids [1,8]" in r.workload.replace(", ", ","), r.workload
    with pytest.raises(coolbench.InvalidArgument, match="feeds"):
        coolbench.measure(s, [1, 2])
    with pytest.raises(coolbench.InvalidArgument, match="feeds go with a coolbench.Session"):
        coolbench.measure(lambda: None, {"input_ids": _ids()})


@pytest.mark.gpu
def test_gpu_is_the_default_device(add_model):
    assert coolbench.Session(add_model).device == "cuda:0"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_cuda_matches_cpu_on_a_tiny_gpt2(tmp_path, dtype):
    path = _model(tmp_path, "gpt2", *GPT2_ARGS, "--dtype", dtype)
    feeds = {"input_ids": _ids(batch=2)}
    cpu = coolbench.Session(path, device="cpu").run(None, feeds)
    gpu = coolbench.Session(path, device="cuda:0").run(None, feeds)
    tolerance = 1e-3 if dtype == "fp32" else 2e-2
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_allclose(g.astype(np.float32), c.astype(np.float32),
                                   rtol=tolerance, atol=tolerance)


# A release refuses while another runtime's memory or kernels are live in the
# process (docs/device.md), and the pytest process has PyTorch and CuPy in it
# from the other GPU tests: the cases that release run in an interpreter of
# their own, as a program that uses only coolbench would.
ADD_RELEASE_SCRIPT = """
import sys
import numpy as np
import coolbench
s = coolbench.Session(sys.argv[1], device="cuda:0")
rng = np.random.default_rng(0)
feeds = {v.name: rng.standard_normal([d if isinstance(d, int) else 3 for d in v.shape])
         .astype(np.float32) for v in s.inputs}
(before,) = s.run(None, feeds)
report = coolbench.release(0)
assert report["released"] and report["context_reset"], report
assert report["bytes_freed"] > 0, report  # the session's tensors were on the GPU
(after,) = s.run(None, feeds)  # the session re-acquires by itself
np.testing.assert_array_equal(after, before)
np.testing.assert_array_equal(after, sum(feeds.values()))
print("ok")
"""

MEASURE_SESSION_SCRIPT = """
import sys
import numpy as np
import coolbench
s = coolbench.Session(sys.argv[1], device="cuda:0")
feeds = {"input_ids": np.random.default_rng(0).integers(0, 64, size=(1, 8), dtype=np.int64)}
(before,) = s.run(None, feeds)
r = coolbench.measure(s, feeds, contexts=2, min_time=0.2, max_time=60)
assert r.figure_ms is not None and r.figure_ms > 0
doc = r.to_dict()
assert doc["environment"]["gpu"] is not None  # gated and watched as a GPU workload
assert "cuda" in r.workload
assert len(doc["summary"]["contexts"]["per_context"]) >= 2  # released between contexts
(after,) = s.run(None, feeds)  # usable after the protocol's releases
np.testing.assert_array_equal(after, before)
print("ok")
"""


def _in_own_interpreter(script, *args):
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


@pytest.mark.gpu
def test_add_on_cuda_then_release_then_the_same_answer(add_model):
    _in_own_interpreter(ADD_RELEASE_SCRIPT, add_model)


@pytest.mark.gpu
def test_measure_a_cuda_session_is_a_gpu_run_over_contexts(gpt2_model):
    _in_own_interpreter(MEASURE_SESSION_SCRIPT, gpt2_model)


# With the interpreter forced (COOLBENCH_EW_JIT=0, as when NVRTC is missing), the session, its
# execution and the measured result say that nodes ran a slower path; with the generated kernels
# (the default) nothing does. float32, so GPT-2's GELU runs as a program after its product.
FALLBACK_SCRIPT = """
import sys, warnings
import numpy as np
import coolbench
s = coolbench.Session(sys.argv[1], device="cuda:0", dims={"batch": 1, "sequence": 8})
feeds = {"input_ids": np.random.default_rng(0).integers(0, 64, size=(1, 8), dtype=np.int64)}
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    s.run(None, feeds)
    s.run(None, feeds)
said = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
fallbacks = s.execution["fallbacks"]
r = coolbench.measure(s, feeds, contexts=1, min_time=0.2, max_time=60)
told = [w for w in r.warnings if "slower path" in w]
if sys.argv[2] == "0":
    assert fallbacks and all("interpreted, not generated: COOLBENCH_EW_JIT=0" in f
                             for f in fallbacks), fallbacks
    assert len(said) == 1 and "slower path" in said[0], said  # once, after the first run
    assert len(told) == 1 and fallbacks[0] in told[0], r.warnings
else:
    assert fallbacks == [] and said == [] and told == [], (fallbacks, said, r.warnings)
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("jit", ["0", "1"])
def test_an_interpreted_elementwise_program_is_reported(tmp_path, jit):
    path = _model(tmp_path, "gpt2", *GPT2_ARGS, "--dtype", "fp32")
    done = subprocess.run([sys.executable, "-c", FALLBACK_SCRIPT, path, jit], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COOLBENCH_EW_JIT": jit})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


@pytest.mark.gpu
def test_coolbench_run_puts_a_model_on_gpu_0_by_default(tmp_path, gpt2_model):
    json_path = tmp_path / "run.json"
    done = subprocess.run([COMMAND, "run", gpt2_model, "--dim", "batch=1", "--dim", "sequence=8",
                           "--contexts", "2", "--min-time", "0.2", "--max-time", "60",
                           "--json", str(json_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running the model on the CPU" not in done.stdout
    doc = json.loads(json_path.read_text())
    assert "cuda" in doc["workload"], doc["workload"]
    assert doc["environment"]["gpu"] is not None
    assert len(doc["summary"]["contexts"]["per_context"]) >= 2  # released between contexts


def test_bfloat16_takes_float32_and_gives_float32(tmp_path):
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    helper = onnx.helper
    bf16 = onnx.TensorProto.BFLOAT16
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add_bf16",
        [helper.make_tensor_value_info("a", bf16, [2, 3]),
         helper.make_tensor_value_info("b", bf16, [2, 3])],
        [helper.make_tensor_value_info("c", bf16, [2, 3])])
    path = str(tmp_path / "add_bf16.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    s = coolbench.Session(path, device="cpu")
    assert [v.dtype for v in s.inputs] == ["bfloat16", "bfloat16"]
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 256.0]], np.float32)
    b = np.array([[1.0, 0.25, -3.0], [0.5, 1.0, 1.0]], np.float32)
    (c,) = s.run(None, {"a": a, "b": b})
    assert c.dtype == np.float32
    # Exact in bfloat16 but the last: 257 rounds to 256 (8 significant bits).
    np.testing.assert_array_equal(c, [[2.0, 2.25, 0.0], [1.0, 0.0, 256.0]])
    with pytest.raises(coolbench.InvalidArgument, match="ml_dtypes"):
        s.run(None, {"a": a.astype(np.float16), "b": b})


def test_node_times_list_every_plan_node(gpt2_model):
    s = coolbench.Session(gpt2_model, device="cpu", dims={"batch": 1, "sequence": 8})
    times = s.node_times({"input_ids": _ids()}, runs=3)
    assert len(times) > 10
    assert {"MatMul", "Softmax"} <= {t["op_type"] for t in times}
    for t in times:
        assert set(t) == {"name", "op_type", "domain", "mean_ms", "min_ms", "detail"}
        assert t["detail"] == ""  # the CPU backend records no choices
        assert t["mean_ms"] >= t["min_ms"] >= 0
    assert sum(t["mean_ms"] for t in times) > 0
    # The outputs are those of an ordinary run.
    (after,) = s.run(None, {"input_ids": _ids()})
    assert np.isfinite(after).all()
    with pytest.raises(ValueError, match="runs must be at least 1"):
        s.node_times({"input_ids": _ids()}, runs=0)
    with pytest.raises(ValueError, match="missing"):
        s.node_times({}, runs=1)


def test_execution_says_how_a_cpu_session_runs(gpt2_model):
    s = coolbench.Session(gpt2_model, device="cpu", dims={"batch": 1, "sequence": 8},
                          fuse=False, cuda_graph=False)
    s.run(None, {"input_ids": _ids()})
    info = s.execution
    assert info["mode"] == "host" and info["reason"] == "" and not info["arena"]
    assert info["fusions"] == {}
    assert repr(s).endswith("host>")


@pytest.mark.gpu
def test_a_cuda_graph_gives_the_bytes_of_the_kernel_by_kernel_run(gpt2_fp16_model):
    dims = {"batch": 2, "sequence": 8}
    feeds = {"input_ids": _ids(batch=2)}
    graph = coolbench.Session(gpt2_fp16_model, device="cuda:0", dims=dims)
    eager = coolbench.Session(gpt2_fp16_model, device="cuda:0", dims=dims, cuda_graph=False)
    for _ in range(3):
        got = graph.run(None, feeds)
        want = eager.run(None, feeds)
    assert graph.execution["mode"] == "graph", graph.execution["reason"]
    assert graph.execution["arena"] and graph.execution["arena_bytes"] > 0
    assert eager.execution["mode"] == "eager"
    assert eager.execution["reason"] == "cuda_graph is off"
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)
    coolbench.release(0)  # the graph and the arena go; the next run makes them again
    np.testing.assert_array_equal(graph.run(None, feeds)[0], want[0])
    assert graph.execution["mode"] == "graph"
