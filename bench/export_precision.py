#!/usr/bin/env python3
"""Does an ONNX export compute in the dtype PyTorch does? For one
engine_vs_torch configuration (default GPT-2 small fp16): the dtypes PyTorch's
own modules take and return (forward hooks on the blocks' projections,
LayerNorms and the LM head), then, for each exporter, the export's Casts by
target type and the dtypes of the products' B weights.

    python3 bench/export_precision.py [--config gpt2:fp16:1:128] [--exporters torchscript dynamo]

Needs the GPU machine's python3 (PyTorch, transformers, onnx, onnxscript).
Results: docs/perf/engine.md ("The lm_head, and what the exports really
compute")."""
import argparse
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_torch_models as models  # noqa: E402


def hooked_dtypes(torch, module, args):
    seen = collections.OrderedDict()

    def hook(name):
        def record(_, inputs, output):
            if name not in seen:
                seen[name] = ([str(getattr(i, "dtype", "-")) for i in inputs],
                              str(getattr(output, "dtype", type(output).__name__)))
        return record

    for name, sub in module.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("ln_1", "ln_2", "ln_f", "c_attn", "c_proj", "c_fc", "lm_head", "query",
                    "dense", "LayerNorm", "classifier"):
            sub.register_forward_hook(hook(name))
    with torch.no_grad():
        module(*args)
    return seen


def export_summary(onnx, path):
    g = onnx.load(path).graph
    names = onnx.TensorProto.DataType.Name
    initializers = {i.name: i.data_type for i in g.initializer}
    casts = collections.Counter()
    weights = collections.Counter()
    for n in g.node:
        if n.op_type == "Cast":
            casts[names([a.i for a in n.attribute if a.name == "to"][0])] += 1
        if n.op_type in ("Gemm", "MatMul") and len(n.input) > 1:
            b = n.input[1]
            weights[names(initializers[b]) if b in initializers else "computed"] += 1
    first = [(n.name, n.input[0]) for n in g.node if n.op_type == "Cast"][:4]
    return len(g.node), dict(casts), dict(weights), first


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="gpt2:fp16:1:128")
    parser.add_argument("--size", default="full")
    parser.add_argument("--exporters", nargs="+", default=["torchscript", "dynamo"])
    parser.add_argument("--device", default="cuda")
    a = parser.parse_args()
    import onnx
    import torch

    config = models.parse_config(a.config, a.size)
    module = models.build_module(config, a.size, a.device)
    args = tuple(models.to_torch(models.make_inputs(config, a.size), config, a.device))
    print(f"{a.config} ({a.size}), torch {torch.__version__}\n")
    print("PyTorch's modules, the first call of each:\n")
    print("| module | inputs | output |")
    print("|---|---|---|")
    for name, (inputs, output) in hooked_dtypes(torch, module, args).items():
        print(f"| {name} | {', '.join(inputs)} | {output} |")
    models._tools()
    import export_models
    print("\n| exporter | nodes | Casts to | products' B | first Casts (node, input) |")
    print("|---|---|---|---|---|")
    small = models.trace_config(config)
    small_args = tuple(models.to_torch(models.make_inputs(small, a.size), small, a.device))
    with tempfile.TemporaryDirectory() as work:
        for exporter in a.exporters:
            path = os.path.join(work, f"{exporter}.onnx")
            with torch.no_grad():
                export_models.export(module, small_args, path, exporter, models.OPSET,
                                     models.input_names(config, a.size),
                                     models.output_names(config, a.size),
                                     models.dynamic_axes(config, a.size))
            nodes, casts, weights, first = export_summary(onnx, path)
            print(f"| {exporter} | {nodes} | {casts} | {weights} | {first} |", flush=True)


if __name__ == "__main__":
    main()
