"""GPT-2 small's GEMM chain (coolbench's gemm:fp16:gpt2-small, made data-dependent) as a
Relax function compiled by TVM for CUDA sm_90; the library exported to argv[1]."""
import sys

import tvm
from tvm import relax
from tvm.s_tir import dlight
from tvm.script import relax as R

SEQ, HIDDEN, QKV, MLP, LAYERS = 128, 768, 2304, 3072, 12


def chain_module(dtype="float16"):
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((SEQ, HIDDEN), dtype))
    w = {name: relax.Var(name, R.Tensor(shape, dtype))
         for name, shape in (("w_qkv", (HIDDEN, QKV)), ("w_proj", (HIDDEN, HIDDEN)),
                             ("w_fc", (HIDDEN, MLP)), ("w_out", (MLP, HIDDEN)))}
    with bb.function("main", [x, *w.values()]):
        with bb.dataflow():
            kept = []
            h = x
            for _ in range(LAYERS):
                kept.append(bb.emit(relax.op.matmul(h, w["w_qkv"])))
                kept.append(bb.emit(relax.op.matmul(h, w["w_proj"])))
                up = bb.emit(relax.op.matmul(h, w["w_fc"]))
                h = bb.emit(relax.op.matmul(up, w["w_out"]))
            out = bb.emit_output(relax.Tuple([h, *kept]))
        bb.emit_func_output(out)
    return bb.get()


def main(path):
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    mod = chain_module()
    # dlight's tensor-core path (chosen when the target names sm_70 or newer) crashes in
    # TVM 0.27.0's Tensorize; scheduled against a CUDA target without an arch, the
    # matmuls get dlight's SIMT schedule, then the module is compiled for sm_90.
    with tvm.target.Target({"kind": "cuda"}):
        mod = relax.transform.LegalizeOps()(mod)
        mod = dlight.ApplyDefaultSchedule(dlight.gpu.Matmul(), dlight.gpu.Fallback())(mod)
    with target:
        executable = tvm.compile(mod, target=target)
    executable.export_library(path)
    print(f"compile_tvm_gemm_chain: {path}")


if __name__ == "__main__":
    main(sys.argv[1])
