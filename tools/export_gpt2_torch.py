#!/usr/bin/env python3
"""Exports randomly initialised GPT2LMHeadModel graphs with torch.onnx.export
and writes each beside PyTorch's (CPU) outputs, in the layout of ONNX's
backend node tests, so coolbench's conformance runner checks them:

    OUT/<variant>/model.onnx
    OUT/<variant>/test_data_set_0/input_<i>.pb, output_<i>.pb

Variants: the TorchScript exporter and the dynamo exporter, each without and
with past key/values (4 in all), at a small configuration so the files stay
small enough to keep as test data. With transformers 5 the model returns a
cache object that neither exporter takes, so a wrapper calls it with
use_cache=False, or (with past) builds the cache from plain tensors and
returns plain tensors.

Needs torch, transformers, onnx and onnxruntime (the GPU machine has them; no
GPU is used). Also writes OUT/summary.json: versions, each variant's operator
histogram, onnxruntime-vs-PyTorch differences, and the operator histogram of
a full-size GPT-2 small export (not kept: it is 500 MB).

    python3 tools/export_gpt2_torch.py OUT [--skip-full]
"""

import argparse
import collections
import json
import os
import sys
import time
import traceback

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import transformers

from torch_wrappers import LogitsOnly, cache_layer  # noqa: F401 (also used as gpt2.*)

SMALL = dict(n_layer=2, n_embd=32, n_head=4, vocab_size=97, n_positions=64)
OPSET = 18


def make_model(seed, **config):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(**config)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    return model


class WithPast2(torch.nn.Module):
    """Two layers' past keys/values in and presents out, as plain tensors."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, past_key_0, past_value_0, past_key_1, past_value_1):
        cache = transformers.DynamicCache()
        cache.update(past_key_0, past_value_0, 0)
        cache.update(past_key_1, past_value_1, 1)
        out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
        k0, v0 = cache_layer(out.past_key_values, 0)
        k1, v1 = cache_layer(out.past_key_values, 1)
        return out.logits, k0, v0, k1, v1


def export(module, args, path, exporter, input_names, output_names, dynamic, max_positions):
    """dynamic: {input name: {axis: symbol}}."""
    # A new wrapper module is in training mode, and the exporters set the mode
    # of the whole tree from the outermost module (the TorchScript exporter
    # restores it afterwards, into every submodule): without this the dynamo
    # export carries Dropout(ratio 0.1, training_mode true) and the model is
    # left in training mode.
    module.eval()
    if exporter == "torchscript":
        torch.onnx.export(module, args, path, dynamo=False, opset_version=OPSET,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic)
    else:
        dims = {}
        shapes = []
        for name in input_names:
            axes = {}
            for axis, symbol in dynamic.get(name, {}).items():
                dims.setdefault(symbol, torch.export.Dim(symbol, min=1, max=max_positions - 1)
                                if "seq" in symbol else torch.export.Dim(symbol, min=1, max=64))
                axes[axis] = dims[symbol]
            shapes.append(axes)
        program = torch.onnx.export(module, args, dynamo=True, opset_version=OPSET,
                                    input_names=input_names, output_names=output_names,
                                    dynamic_shapes=tuple(shapes))
        program.save(path)


def strip_metadata(path):
    """Drops the dynamo exporter's per-node metadata: source stack traces that
    name the exporting machine's paths, and nothing a runtime reads."""
    model = onnx.load(path)
    for node in model.graph.node:
        del node.metadata_props[:]
    for function in model.functions:
        for node in function.node:
            del node.metadata_props[:]
    onnx.save(model, path)


def op_histogram(model_proto):
    counts = collections.Counter()
    for node in model_proto.graph.node:
        counts[(node.domain + "." if node.domain else "") + node.op_type] += 1
    for function in model_proto.functions:
        for node in function.node:
            counts["(function) " + node.op_type] += 1
    return dict(sorted(counts.items()))


def write_case(folder, model_path, inputs, outputs):
    """inputs/outputs: lists of numpy arrays in the graph's order."""
    model = onnx.load(model_path)
    initializers = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    if len(input_names) != len(inputs) or len(output_names) != len(outputs):
        raise RuntimeError(f"{model_path}: graph has inputs {input_names} and outputs "
                           f"{output_names}; got {len(inputs)} inputs, {len(outputs)} outputs")
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for kind, names, arrays in (("input", input_names, inputs), ("output", output_names, outputs)):
        for i, (name, array) in enumerate(zip(names, arrays)):
            proto = onnx.numpy_helper.from_array(np.ascontiguousarray(array), name)
            with open(os.path.join(data, f"{kind}_{i}.pb"), "wb") as f:
                f.write(proto.SerializeToString())
    return input_names, output_names


def ort_difference(model_path, input_names, inputs, expected):
    import onnxruntime
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(input_names, inputs)))
    return [float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))) for g, e in
            zip(got, expected)]


def small_variants(out, summary):
    model = make_model(1234, **SMALL)
    rng = np.random.default_rng(1234)
    batch, seq, past_len, new = 2, 16, 8, 4
    ids = torch.from_numpy(rng.integers(0, SMALL["vocab_size"], (batch, seq), dtype=np.int64))
    with torch.no_grad():
        logits = LogitsOnly(model).eval()(ids)
        prefix = torch.from_numpy(rng.integers(0, SMALL["vocab_size"], (batch, past_len),
                                               dtype=np.int64))
        first = model(input_ids=prefix, use_cache=True).past_key_values
        past = []
        for layer in range(SMALL["n_layer"]):
            k, v = cache_layer(first, layer)
            past += [k.clone(), v.clone()]
        new_ids = torch.from_numpy(rng.integers(0, SMALL["vocab_size"], (batch, new),
                                                dtype=np.int64))
        with_past = WithPast2(model).eval()(new_ids, *past)
    past_names = ["past_key_0", "past_value_0", "past_key_1", "past_value_1"]
    present_names = ["logits", "present_key_0", "present_value_0", "present_key_1",
                     "present_value_1"]
    dyn_plain = {"input_ids": {0: "batch", 1: "sequence"}}
    dyn_past = dict(dyn_plain, **{n: {0: "batch", 2: "past_sequence"} for n in past_names})
    cases = [
        ("torchscript", False), ("torchscript", True), ("dynamo", False), ("dynamo", True),
    ]
    for exporter, use_past in cases:
        name = f"gpt2_{exporter}_{'past' if use_past else 'nopast'}"
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        record = {"exporter": exporter, "past": use_past}
        started = time.time()
        try:
            if use_past:
                args = (new_ids, *past)
                export(WithPast2(model), args, path, exporter, ["input_ids"] + past_names,
                       present_names, dyn_past, SMALL["n_positions"])
                inputs = [a.numpy() for a in args]
                outputs = [t.numpy() for t in with_past]
            else:
                export(LogitsOnly(model), (ids,), path, exporter, ["input_ids"], ["logits"],
                       dyn_plain, SMALL["n_positions"])
                inputs = [ids.numpy()]
                outputs = [logits.numpy()]
            strip_metadata(path)
            onnx.checker.check_model(path, full_check=True)
            proto = onnx.load(path)
            input_names, output_names = write_case(folder, path, inputs, outputs)
            record.update(
                ok=True,
                seconds=round(time.time() - started, 1),
                opsets={o.domain or "ai.onnx": o.version for o in proto.opset_import},
                inputs=input_names,
                outputs=output_names,
                input_shapes=[list(a.shape) for a in inputs],
                nodes=len(proto.graph.node),
                ops=op_histogram(proto),
                bytes=os.path.getsize(path),
                ort_max_abs_difference=ort_difference(path, input_names, inputs, outputs),
            )
        except Exception as e:  # record and go on: one exporter failing must not hide the rest
            record.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000],
                          traceback=traceback.format_exc()[-3000:])
        summary["variants"][name] = record
        print(name, "ok" if record.get("ok") else "FAILED: " + record["error"][:300], flush=True)


def full_size(summary):
    model = make_model(5678)  # GPT-2 small's defaults
    ids = torch.from_numpy(np.random.default_rng(5).integers(0, 50257, (1, 128), dtype=np.int64))
    with torch.no_grad():
        expected = LogitsOnly(model).eval()(ids).numpy()
    for exporter in ("torchscript", "dynamo"):
        path = f"/tmp/gpt2_small_{exporter}.onnx"
        record = {}
        started = time.time()
        try:
            export(LogitsOnly(model), (ids,), path, exporter, ["input_ids"], ["logits"],
                   {"input_ids": {0: "batch", 1: "sequence"}}, model.config.n_positions)
            proto = onnx.load(path)
            record.update(ok=True, seconds=round(time.time() - started, 1),
                          parameters=sum(p.numel() for p in model.parameters()),
                          nodes=len(proto.graph.node), ops=op_histogram(proto),
                          ort_max_abs_difference=ort_difference(path, ["input_ids"],
                                                                [ids.numpy()], [expected]))
        except Exception as e:
            record.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000])
        summary["full_size"][exporter] = record
        print("full size", exporter, "ok" if record.get("ok") else "FAILED", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--skip-full", action="store_true")
    options = parser.parse_args()
    os.makedirs(options.out, exist_ok=True)
    import onnxruntime
    summary = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                     "python": sys.version.split()[0]},
        "config": SMALL, "opset": OPSET, "variants": {}, "full_size": {},
    }
    small_variants(options.out, summary)
    if not options.skip_full:
        full_size(summary)
    with open(os.path.join(options.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
