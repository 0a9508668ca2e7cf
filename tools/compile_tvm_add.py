"""The report's two-input Add (1x2x3x3 float32, made with onnx.helper), imported by
TVM's ONNX frontend and compiled for CUDA sm_90; the library exported to argv[1].
Run by scripts/stage-tvm-runtime.sh (which makes the driver stub resolvable so
the library embeds a cubin)."""
import sys

import onnx
import tvm
from onnx import TensorProto, helper
from tvm.relax.frontend.onnx import from_onnx


def add_model():
    shape = [1, 2, 3, 3]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def main(path):
    mod = from_onnx(add_model(), keep_params_in_input=True)
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    with target:  # the GPU schedule (thread bindings) comes from the target in scope
        mod = tvm.relax.transform.LegalizeOps()(mod)
        mod = tvm.s_tir.transform.DefaultGPUSchedule()(mod)
        executable = tvm.compile(mod, target=target)
    executable.export_library(path)
    print(f"compile_tvm_add: {path}")


if __name__ == "__main__":
    main(sys.argv[1])
