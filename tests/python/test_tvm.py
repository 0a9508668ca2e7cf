"""coolbench.tvm: device_api.cuda_reset in TVM's registry, and the report's Add on TVM's CPU path."""
import numpy as np
import pytest

import coolbench

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (tools/requirements-test.txt)")
import coolbench.tvm as coolbench_tvm  # noqa: E402  (registers device_api.cuda_reset)


def test_the_reports_call_is_found_in_tvms_registry():
    cuda_reset = tvm.get_global_func("device_api.cuda_reset")
    assert cuda_reset is not None
    assert tvm.get_global_func("device_api.cuda_reset", allow_missing=True) is not None


def test_registering_twice_is_harmless():
    assert coolbench_tvm.register() == "device_api.cuda_reset"
    assert coolbench_tvm.register() == "device_api.cuda_reset"
    assert tvm.get_global_func("device_api.cuda_reset") is not None


def test_without_a_gpu_the_call_raises_coolbenchs_error_through_tvms_ffi(has_gpu):
    if has_gpu:
        pytest.skip("a GPU is present: test_tvm_gpu.py covers the release")
    cuda_reset = tvm.get_global_func("device_api.cuda_reset")
    with pytest.raises(coolbench.NotAvailable) as raised:
        cuda_reset(0)
    # the same words coolbench.release says, not a bare FFI failure
    with pytest.raises(coolbench.NotAvailable) as direct:
        coolbench.release(0)
    assert str(direct.value) in str(raised.value)


def make_add_model():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    shape = [1, 2, 3, 3]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def test_the_reports_add_compiles_and_runs_on_the_cpu():
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(make_add_model(), keep_params_in_input=True)
    executable = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    rng = np.random.default_rng(20)
    a = rng.standard_normal((1, 2, 3, 3), dtype=np.float32)
    b = rng.standard_normal((1, 2, 3, 3), dtype=np.float32)
    out = vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b))
    np.testing.assert_array_equal(out.numpy(), a + b)


def test_load_module_reloads_from_a_fresh_copy_only_after_a_release(tmp_path, monkeypatch):
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    library = tmp_path / "add.so"
    tvm.compile(from_onnx(make_add_model(), keep_params_in_input=True), target="llvm").export_library(
        str(library))
    a = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)

    def run(module):
        vm = relax.VirtualMachine(module, tvm.cpu())
        return vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(a)).numpy()

    loaded = []
    real_load = tvm.runtime.load_module
    monkeypatch.setattr(tvm.runtime, "load_module", lambda p: loaded.append(p) or real_load(p))
    releases = [0]
    monkeypatch.setattr(coolbench_tvm, "_release_count", lambda: releases[0])
    np.testing.assert_array_equal(run(coolbench_tvm.load_module(library)), a + a)
    np.testing.assert_array_equal(run(coolbench_tvm.load_module(library)), a + a)
    assert loaded[0] == loaded[1] == str(library.resolve())  # no release: the same image
    releases[0] = 1  # a release happened: the next load is a new image
    np.testing.assert_array_equal(run(coolbench_tvm.load_module(library)), a + a)
    assert loaded[2] != loaded[0] and loaded[2].endswith("-after-release-1.so")
    np.testing.assert_array_equal(run(coolbench_tvm.load_module(library)), a + a)
    assert loaded[3] == loaded[2]  # no release since: the same (new) image again


def test_without_tvm_the_import_says_what_to_install(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "tvm_ffi", None)  # as if apache-tvm-ffi were not installed
    monkeypatch.delitem(sys.modules, "coolbench.tvm")
    with pytest.raises(ImportError, match="pip install apache-tvm"):
        importlib.import_module("coolbench.tvm")
