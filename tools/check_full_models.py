#!/usr/bin/env python3
"""The model table of docs/perf/engine.md: full-size GPT-2 small, BERT-base,
DistilBERT, ViT-B/16 and ResNet-50, built from their configurations with
random weights (no hub download), exported with torch.onnx.export, and run by
PyTorch (CPU, float32), onnxruntime (CPU) and coolbench (coolbench.Session on
the CPU and on cuda:0). Prints one row per export:

    family | exporter | opset | nodes | coolbench CPU vs PyTorch | vs onnxruntime |
    coolbench CUDA vs PyTorch | vs onnxruntime | onnxruntime vs PyTorch

each a max |difference| over all outputs. Meant for the lent GPU machine,
which has PyTorch, transformers, torchvision, onnx and onnxruntime; coolbench
is imported from the build folder:

    PYTHONPATH=build/python python3 tools/check_full_models.py [--deadline 120]
        [--families gpt2,bert,...] [--exporters torchscript,dynamo] [--json OUT.json]

The exported files (up to 500 MB each) go to a temporary folder and are
deleted. --deadline (seconds) starts no new export after that time, so a
time-limited run still prints what it finished. A cell a backend could not
produce says why (an operator it refuses, for instance).
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

import numpy as np
import torch

import export_models as small

OPSET = {"torchscript": 17, "dynamo": 18}


def gpt2():
    import transformers
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    ids = np.random.default_rng(5).integers(0, 50257, (1, 128), dtype=np.int64)
    return (small.gpt2.LogitsOnly(model), (ids,), ["input_ids"], ["logits"],
            [{0: ("batch", 1, 64), 1: ("sequence", 2, 1023)}])


def bert():
    import transformers
    model = transformers.BertModel(transformers.BertConfig()).eval()
    ids, mask = small.text_inputs(np.random.default_rng(6), 30522, batch=1, sequence=128)
    types = np.zeros_like(ids.numpy())
    return (small.BertOutputs(model), (ids.numpy(), mask.numpy(), types),
            ["input_ids", "attention_mask", "token_type_ids"],
            ["last_hidden_state", "pooler_output"], small.text_dynamic(3, 512))


def distilbert():
    import transformers
    model = transformers.DistilBertModel(transformers.DistilBertConfig()).eval()
    ids, mask = small.text_inputs(np.random.default_rng(7), 30522, batch=1, sequence=128)
    return (small.HiddenStates(model), (ids.numpy(), mask.numpy()),
            ["input_ids", "attention_mask"], ["last_hidden_state"], small.text_dynamic(2, 512))


def vit():
    import transformers
    # ViT-B/16 at 224x224 (transformers' defaults), 1000 classes.
    model = transformers.ViTForImageClassification(
        transformers.ViTConfig(num_labels=1000)).eval()
    pixels = np.random.default_rng(8).standard_normal((1, 3, 224, 224), dtype=np.float32)
    return (small.Logits(model), (pixels,), ["pixel_values"], ["logits"],
            [{0: ("batch", 1, 64)}])


def resnet50():
    import torchvision
    model = torchvision.models.resnet50().eval()
    images = np.random.default_rng(9).standard_normal((1, 3, 224, 224), dtype=np.float32)
    return (small.ResNetLogits(model), (images,), ["images"], ["logits"],
            [{0: ("batch", 1, 64)}])


FAMILIES = {"gpt2": gpt2, "bert": bert, "distilbert": distilbert, "vit": vit,
            "resnet50": resnet50}


def largest_difference(got, want):
    return max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64))))
               for g, w in zip(got, want))


def one_line(error):
    """An exception as one table cell: its type and first line, without colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines() or [""]
    return f"{type(error).__name__}: {text[0][:200]}"


def run_coolbench(coolbench, path, device, feeds):
    try:
        session = coolbench.Session(path, device=device)
        outputs = session.run(None, feeds)
        del session
        return outputs, None
    except Exception as e:  # the table says why, and the other cells go on
        return None, one_line(e)


def check(coolbench, family, exporter, folder, seed):
    import onnx
    import onnxruntime
    torch.manual_seed(seed)
    module, arrays, input_names, output_names, dynamic = FAMILIES[family]()
    args = tuple(torch.from_numpy(a) for a in arrays)
    with torch.no_grad():
        expected = module(*args)
    expected = [t.numpy() for t in (expected if isinstance(expected, tuple) else (expected,))]
    path = os.path.join(folder, f"{family}_{exporter}.onnx")
    started = time.time()
    small.export(module, args, path, exporter, OPSET[exporter], input_names, output_names,
                 dynamic, preserve_training_mode=family == "resnet50")
    row = {"family": family, "exporter": exporter, "opset": OPSET[exporter],
           "export_s": round(time.time() - started, 1),
           "nodes": len(onnx.load(path, load_external_data=False).graph.node),
           "parameters": sum(p.numel() for p in module.parameters()),
           "largest_output": max(float(np.max(np.abs(e))) for e in expected)}
    feeds = dict(zip(input_names, arrays))
    ort = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    row["ort_vs_torch"] = largest_difference(ort, expected)
    for device in ("cpu", "cuda:0"):
        key = "cuda" if device != "cpu" else "cpu"
        outputs, error = run_coolbench(coolbench, path, device, feeds)
        if error:
            row[key] = error
        else:
            row[key + "_vs_torch"] = largest_difference(outputs, expected)
            row[key + "_vs_ort"] = largest_difference(outputs, ort)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    return row


def cell(row, key, kind, say_why):
    """The difference, or (once per backend) why there is none."""
    if isinstance(row.get(kind), str):
        return row[kind] if say_why else "-"
    return f"{row[key]:.2g}" if key in row else "-"


def print_table(rows):
    print("| family | exporter | opset | nodes | coolbench CPU vs PyTorch | vs onnxruntime "
          "| coolbench CUDA vs PyTorch | vs onnxruntime | onnxruntime vs PyTorch | largest |output| |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['family']} | {r['exporter']} | {r['opset']} | export failed: "
                  f"{r['error']} |||||||")
            continue
        print(f"| {r['family']} | {r['exporter']} | {r['opset']} | {r['nodes']} "
              f"| {cell(r, 'cpu_vs_torch', 'cpu', True)} | {cell(r, 'cpu_vs_ort', 'cpu', False)} "
              f"| {cell(r, 'cuda_vs_torch', 'cuda', True)} "
              f"| {cell(r, 'cuda_vs_ort', 'cuda', False)} "
              f"| {r['ort_vs_torch']:.2g} | {r['largest_output']:.3g} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--deadline", type=float, default=0,
                        help="seconds after which no new export starts (0: none)")
    parser.add_argument("--json", help="also write the rows here")
    options = parser.parse_args()
    unknown = [f for f in options.families.split(",") if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    import coolbench
    started = time.time()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for exporter in options.exporters.split(","):
            for family in options.families.split(","):
                seed = 100 + list(FAMILIES).index(family)
                if options.deadline and time.time() - started > options.deadline:
                    print(f"deadline: skipped {family} {exporter}", flush=True)
                    continue
                try:
                    rows.append(check(coolbench, family, exporter, folder, 100 + seed))
                except Exception as e:
                    rows.append({"family": family, "exporter": exporter,
                                 "opset": OPSET[exporter], "error": one_line(e)})
                print(json.dumps(rows[-1]), f"({time.time() - started:.0f} s)", flush=True)
    print_table(rows)
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
