#!/usr/bin/env python3
"""Exports small, randomly initialised versions of the model families people
measure with torch.onnx.export, each beside PyTorch's (CPU, float32) outputs
for seeded inputs, in the layout of ONNX's backend node tests, so coolbench's
conformance runner checks them on every backend:

    OUT/test_<family>_<exporter>_op<N>[_<variant>]/model.onnx
    OUT/test_.../test_data_set_0/input_<i>.pb, output_<i>.pb
    OUT/summary.json   versions, configs, and per model: the operator
                       histogram, size, and onnxruntime's max |difference|
                       from PyTorch on the same inputs

Families (reduced widths; the structure an exporter emits is the one of the
full-size model):
  gpt2        GPT2LMHeadModel, logits only and with past key/values (opset 18)
  bert        BertModel: last hidden state and pooled output (opsets 14, 18)
  distilbert  DistilBertModel: last hidden state (opsets 14, 18)
  vit         ViTForImageClassification, patch 16 as ViT-B/16 (opset 18)
  resnet      torchvision's ResNet with Bottleneck blocks (ResNet-50's
              structure) at 1/16 of its widths and one block per stage
              (opsets 14, 18)
each by the TorchScript exporter (dynamo=False) and the dynamo exporter.

Models are wrapped in a module in .eval() that returns plain tensors. ResNet's
TorchScript export uses training=TrainingMode.PRESERVE on the eval-mode model:
the default (EVAL) runs a peephole pass that fuses each BatchNormalization into
the Conv before it, and these tests are there to run BatchNormalization; its
dynamo export uses optimize=False, as the dynamo exporter's graph optimizer
fuses them too. Constant folding stays on (do_constant_folding=True).

The dynamo exporter writes opset 18 and up: asked for 14 it still writes 18
(its conversion down fails for these models), so it is run at 18 only.

    .venv-export/bin/python tools/export_models.py tests/data/models [--only bert,vit]

scripts/setup-export.sh makes .venv-export from tools/requirements-export.txt
(PyTorch is large: the normal setup and CI never install it). An export that
fails is recorded in summary.json with its error and left out; the others go on.
"""

import argparse
import json
import os
import shutil
import sys
import time
import traceback

import numpy as np
import onnx
import torch

import export_gpt2_torch as gpt2
from torch_wrappers import BertOutputs, Logits  # noqa: F401 (also used as export_models.*)

SEED = 1234
MAX_SEQUENCE = 64


def dims(spec):
    """{input: {axis: symbol}} -> the dynamo exporter's dynamic_shapes."""
    made = {}
    shapes = []
    for axes in spec:
        shape = {}
        for axis, (symbol, low, high) in axes.items():
            made.setdefault(symbol, torch.export.Dim(symbol, min=low, max=high))
            shape[axis] = made[symbol]
        shapes.append(shape)
    return tuple(shapes)


def export(module, args, path, exporter, opset, input_names, output_names, dynamic,
           preserve_training_mode=False, varargs_from=None):
    """dynamic: a list, per input, of {axis: (symbol, min, max)}. varargs_from: the index
    of the first input that forward() takes through *args (torch.export wants their
    shapes as one nested tuple there, not one entry each)."""
    module.eval()  # the exporters take the mode of the outermost module
    if exporter == "torchscript":
        axes = {name: {axis: symbol for axis, (symbol, _, _) in spec.items()}
                for name, spec in zip(input_names, dynamic) if spec}
        training = (torch.onnx.TrainingMode.PRESERVE if preserve_training_mode
                    else torch.onnx.TrainingMode.EVAL)
        torch.onnx.export(module, args, path, dynamo=False, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, training=training, do_constant_folding=True)
    else:
        # Its graph optimizer (optimize=True) fuses BatchNormalization into Conv.
        shapes = dims(dynamic)
        if varargs_from is not None:
            shapes = shapes[:varargs_from] + (tuple(shapes[varargs_from:]),)
        program = torch.onnx.export(module, args, dynamo=True, opset_version=opset,
                                    input_names=input_names, output_names=output_names,
                                    dynamic_shapes=shapes,
                                    optimize=not preserve_training_mode)
        program.save(path)
    gpt2.strip_metadata(path)


# ---- Families: each returns cases (name, module, args, input/output names, dynamic axes) -------


def gpt2_cases():
    model = gpt2.make_model(SEED, **gpt2.SMALL)
    rng = np.random.default_rng(SEED)
    vocab = gpt2.SMALL["vocab_size"]
    ids = torch.from_numpy(rng.integers(0, vocab, (2, 16), dtype=np.int64))
    prefix = torch.from_numpy(rng.integers(0, vocab, (2, 8), dtype=np.int64))
    new_ids = torch.from_numpy(rng.integers(0, vocab, (2, 4), dtype=np.int64))
    with torch.no_grad():
        first = model(input_ids=prefix, use_cache=True).past_key_values
    past = []
    for layer in range(gpt2.SMALL["n_layer"]):
        k, v = gpt2.cache_layer(first, layer)
        past += [k.clone(), v.clone()]
    positions = gpt2.SMALL["n_positions"]
    batch = ("batch", 1, 64)
    plain = [{0: batch, 1: ("sequence", 1, positions - 1)}]
    with_past = plain + [{0: batch, 2: ("past_sequence", 1, positions - 1)}] * 4
    past_names = ["past_key_0", "past_value_0", "past_key_1", "past_value_1"]
    presents = ["logits", "present_key_0", "present_value_0", "present_key_1",
                "present_value_1"]
    return [
        ("nopast", gpt2.LogitsOnly(model), (ids,), ["input_ids"], ["logits"], plain),
        ("past", gpt2.WithPast2(model), (new_ids, *past), ["input_ids"] + past_names, presents,
         with_past),
    ]


def text_inputs(rng, vocab, batch=2, sequence=16):
    ids = torch.from_numpy(rng.integers(0, vocab, (batch, sequence), dtype=np.int64))
    # The last sequence is padded: its last 5 positions are masked out.
    mask = torch.ones((batch, sequence), dtype=torch.int64)
    mask[batch - 1, sequence - 5:] = 0
    return ids, mask


class HiddenStates(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


BERT = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=MAX_SEQUENCE, type_vocab_size=2)
DISTILBERT = dict(vocab_size=97, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                  max_position_embeddings=MAX_SEQUENCE)
# ViT-B/16's structure (16x16 patches, class token, pre-norm blocks, GELU) at
# width 32 on 32x32 images: 4 patches and the class token.
VIT = dict(image_size=32, patch_size=16, num_channels=3, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=4, intermediate_size=64, num_labels=10)


def text_dynamic(count, max_sequence=MAX_SEQUENCE):
    axes = {0: ("batch", 1, 64), 1: ("sequence", 2, max_sequence)}
    return [axes] * count


def bert_cases():
    import transformers
    torch.manual_seed(SEED)
    model = transformers.BertModel(transformers.BertConfig(**BERT)).eval()
    rng = np.random.default_rng(SEED + 1)
    ids, mask = text_inputs(rng, BERT["vocab_size"])
    types = torch.zeros_like(ids)
    types[:, 8:] = 1
    return [(None, BertOutputs(model), (ids, mask, types),
             ["input_ids", "attention_mask", "token_type_ids"],
             ["last_hidden_state", "pooler_output"], text_dynamic(3))]


def distilbert_cases():
    import transformers
    torch.manual_seed(SEED)
    model = transformers.DistilBertModel(transformers.DistilBertConfig(**DISTILBERT)).eval()
    rng = np.random.default_rng(SEED + 2)
    ids, mask = text_inputs(rng, DISTILBERT["vocab_size"])
    return [(None, HiddenStates(model), (ids, mask), ["input_ids", "attention_mask"],
             ["last_hidden_state"], text_dynamic(2))]


def vit_cases():
    import transformers
    torch.manual_seed(SEED)
    model = transformers.ViTForImageClassification(transformers.ViTConfig(**VIT)).eval()
    rng = np.random.default_rng(SEED + 3)
    pixels = torch.from_numpy(rng.standard_normal((2, 3, 32, 32), dtype=np.float32))
    return [(None, Logits(model), (pixels,), ["pixel_values"], ["logits"],
             [{0: ("batch", 1, 64)}])]


def tiny_resnet(widths=(4, 8, 16, 32), stem=8, classes=10):
    """torchvision's ResNet class and Bottleneck blocks (ResNet-50's stem,
    stages and head) with the widths cut: planes 4/8/16/32 instead of
    64/128/256/512, one block per stage instead of 3/4/6/3."""
    from torchvision.models import resnet
    model = resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=classes)
    model.inplanes = stem
    model.conv1 = torch.nn.Conv2d(3, stem, kernel_size=7, stride=2, padding=3, bias=False)
    model.bn1 = torch.nn.BatchNorm2d(stem)
    model.layer1 = model._make_layer(resnet.Bottleneck, widths[0], 1)
    for i, planes in enumerate(widths[1:], start=2):
        setattr(model, f"layer{i}", model._make_layer(resnet.Bottleneck, planes, 1, stride=2))
    model.fc = torch.nn.Linear(widths[-1] * resnet.Bottleneck.expansion, classes)
    # Trained statistics, not the identity a new BatchNorm2d has: a kernel that
    # ignored them would still pass otherwise.
    generator = torch.Generator().manual_seed(SEED)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            n = module.num_features
            module.running_mean.copy_(torch.randn(n, generator=generator) * 0.2)
            module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            module.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            module.bias.data.copy_(torch.randn(n, generator=generator) * 0.2)
    return model.eval()


class ResNetLogits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        return self.model(images)


def resnet_cases():
    torch.manual_seed(SEED)
    model = tiny_resnet()
    rng = np.random.default_rng(SEED + 4)
    images = torch.from_numpy(rng.standard_normal((2, 3, 64, 64), dtype=np.float32))
    return [(None, ResNetLogits(model), (images,), ["images"], ["logits"],
             [{0: ("batch", 1, 64)}])]


# family: (cases, opsets, TorchScript export keeps BatchNormalization)
FAMILIES = {
    "gpt2": (gpt2_cases, (18,), False),
    "bert": (bert_cases, (14, 18), False),
    "distilbert": (distilbert_cases, (14, 18), False),
    "vit": (vit_cases, (18,), False),
    "resnet": (resnet_cases, (14, 18), True),
}
EXPORTERS = ("torchscript", "dynamo")
DYNAMO_MIN_OPSET = 18


def export_case(out, name, case, exporter, opset, preserve):
    variant, module, args, input_names, output_names, dynamic = case
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    started = time.time()
    with torch.no_grad():
        expected = module.eval()(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    inputs = [a.numpy() for a in args]
    outputs = [t.numpy() for t in expected]
    export(module, args, path, exporter, opset, input_names, output_names, dynamic, preserve)
    onnx.checker.check_model(path, full_check=True)
    proto = onnx.load(path)
    written = {o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")}
    if written != {opset}:
        raise RuntimeError(f"asked for opset {opset}, the exporter wrote {sorted(written)}")
    names, _ = gpt2.write_case(folder, path, inputs, outputs)
    return dict(
        ok=True, exporter=exporter, opset=opset, variant=variant,
        seconds=round(time.time() - started, 1),
        opsets={o.domain or "ai.onnx": o.version for o in proto.opset_import},
        inputs=names, outputs=output_names, input_shapes=[list(a.shape) for a in inputs],
        nodes=len(proto.graph.node), ops=gpt2.op_histogram(proto), bytes=os.path.getsize(path),
        largest_output=[float(np.max(np.abs(o))) for o in outputs],
        ort_max_abs_difference=gpt2.ort_difference(path, names, inputs, outputs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the folder of test_* folders (tests/data/models)")
    parser.add_argument("--only", help="comma-separated families (default: all): " +
                        ", ".join(FAMILIES))
    options = parser.parse_args()
    families = options.only.split(",") if options.only else list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    os.makedirs(options.out, exist_ok=True)
    import onnxruntime
    import torchvision
    import transformers
    summary_path = os.path.join(options.out, "summary.json")
    summary = {"models": {}}
    if os.path.exists(summary_path):  # --only replaces those families' entries
        with open(summary_path) as f:
            summary = json.load(f)
    summary.update(
        versions={"torch": torch.__version__, "torchvision": torchvision.__version__,
                  "transformers": transformers.__version__, "onnx": onnx.__version__,
                  "onnxruntime": onnxruntime.__version__, "python": sys.version.split()[0]},
        seed=SEED, configs={"gpt2": gpt2.SMALL, "bert": BERT, "distilbert": DISTILBERT,
                            "vit": VIT, "resnet": "tools/export_models.py: tiny_resnet()"})
    failed = 0
    for family in families:
        make_cases, opsets, preserve = FAMILIES[family]
        for case in make_cases():
            for exporter in EXPORTERS:
                for opset in opsets:
                    if exporter == "dynamo" and opset < DYNAMO_MIN_OPSET:
                        continue
                    name = f"test_{family}_{exporter}_op{opset}" + (f"_{case[0]}" if case[0] else "")
                    try:
                        record = export_case(options.out, name, case, exporter, opset, preserve)
                    except Exception as e:  # one export failing must not hide the rest
                        shutil.rmtree(os.path.join(options.out, name), ignore_errors=True)
                        failed += 1
                        record = dict(ok=False, exporter=exporter, opset=opset,
                                      error=f"{type(e).__name__}: {e}"[:2000],
                                      traceback=traceback.format_exc()[-3000:])
                    summary["models"][name] = record
                    status = (f"ok, {record['nodes']} nodes, {record['bytes']} bytes, onnxruntime "
                              f"{max(record['ort_max_abs_difference']):.2g}" if record["ok"]
                              else "FAILED: " + record["error"][:300])
                    print(name, status, flush=True)
    summary["models"] = dict(sorted(summary["models"].items()))
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
