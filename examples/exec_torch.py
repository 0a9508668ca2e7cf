#!/usr/bin/env python3
"""A PyTorch model timed by itself, for `coolbench exec` (docs/cli/exec.md).

    coolbench exec -- python3 examples/exec_torch.py

Prints one `latency_ms VALUE` line per inference, flushed, until it is stopped:
coolbench gates, warms up, measures and starts it again in a fresh process for
each context. Each inference is timed with CUDA events around it; the
synchronize after the end event is outside the timed span.
"""
import argparse
import os

import torch


def make_model(name, device):
    if name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(4096, 16384), torch.nn.GELU(), torch.nn.Linear(16384, 4096))
        x = torch.randn(128, 4096, device=device, dtype=torch.float16)
        return model.to(device=device, dtype=torch.float16).eval(), x
    if name == "gpt2":
        from transformers import GPT2Config, GPT2Model  # optional: only for --model gpt2
        model = GPT2Model(GPT2Config()).to(device=device, dtype=torch.float16).eval()
        x = torch.randint(0, 50257, (1, 128), device=device)
        return model, x
    raise SystemExit(f"exec_torch.py: unknown --model {name}: mlp or gpt2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mlp", help="mlp (default) or gpt2 (transformers)")
    o = parser.parse_args()
    device = torch.device("cuda", int(os.environ.get("COOLBENCH_DEVICE", "0")))
    torch.cuda.set_device(device)
    model, x = make_model(o.model, device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    with torch.inference_mode():
        while True:  # until coolbench stops the process
            start.record()
            model(x)
            end.record()
            end.synchronize()
            print(f"latency_ms {start.elapsed_time(end):.6f}", flush=True)


if __name__ == "__main__":
    main()
