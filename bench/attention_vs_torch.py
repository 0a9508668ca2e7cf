"""coolbench's fused attention against PyTorch's scaled_dot_product_attention on
the shapes of `attention_bench` (GPT-2 small prefill and decode, BERT-base with a
padding bias, ViT-B/16, head dim 128), fp16, bf16 and fp32, on cuda:0.

Why: the model-level comparison (bench/engine_vs_torch.py) costs minutes of GPU
time a configuration; this tells in seconds, kernel against kernel, where
coolbench's attention stands against the one PyTorch's models call, and which
of PyTorch's backends (flash, memory-efficient, cuDNN, math) that is.

Each side runs in fresh processes, alternating, `--rounds` of each (2 by
default); a row's figure is the median over rounds:
  coolbench  `build/bench/attention_bench RUNS`: its "graph ms", the attention
             graph in a CUDA session (fused, replayed as one CUDA graph), CUDA
             events over RUNS launches back to back after 5 warm-up runs
  PyTorch    SDPA on random (B, H, S, D) tensors, its default choice and each
             backend forced where it takes the case, every one captured 20 times
             in a CUDA graph and timed with CUDA events over replays (the host's
             launch cost left out, as the fused node's is hidden behind the
             GPU's queue), after warm-up replays.
Both are then the kernels' pace: a graph launch costs the host a few
microseconds, less than the kernels of these rows. An older attention_bench
without "graph ms" gives its "fused ms" (the fused node launched through the
backend's run() each time, host dispatch and an output allocation included),
which times a kernel shorter than about 15 us at the host's pace: such rows
are upper bounds for coolbench, and the row says which column it took.

The causal prefill rows pass is_causal=True; decode passes no mask (one query
sees every key); the BERT rows an additive (B, 1, 1, S) bias as the fused node
takes; ViT no mask. TF32 stays off (float32 is computed in float32 on both).

  python3 bench/attention_vs_torch.py --build build [--rounds 2] [--runs 30]
      [--only NAME] [--dtypes float16 bfloat16 float32] [--json F] [--raw F]
Needs PyTorch with CUDA (the GPU machine's python3) and a build with the GPU
benchmarks. Prints a markdown table; --json writes its rows.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

# attention_bench's configurations: name -> (batch, heads, q length, k length, head dim, mask).
CONFIGS = {
    "gpt2 prefill b1 s128": (1, 12, 128, 128, 64, "causal"),
    "gpt2 prefill b8 s128": (8, 12, 128, 128, 64, "causal"),
    "gpt2 prefill b1 s1024": (1, 12, 1024, 1024, 64, "causal"),
    "gpt2 prefill b8 s1024": (8, 12, 1024, 1024, 64, "causal"),
    "gpt2 decode b1 past128": (1, 12, 1, 129, 64, "none"),
    "gpt2 decode b8 past1024": (8, 12, 1, 1025, 64, "none"),
    "bert b32 s128 padding bias": (32, 12, 128, 128, 64, "bias"),
    "bert b1 s128 padding bias": (1, 12, 128, 128, 64, "bias"),
    "vit b32 s197": (32, 12, 197, 197, 64, "none"),
    "vit b1 s197": (1, 12, 197, 197, 64, "none"),
    "d128 b1 s512 causal": (1, 12, 512, 512, 128, "causal"),
}
DTYPES = ("float16", "bfloat16", "float32")
BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


def flops(name):
    b, h, sq, sk, d, mask = CONFIGS[name]
    return 4.0 * b * h * sq * sk * d * (0.5 if mask == "causal" and sq > 1 else 1.0)


# ---- the PyTorch child --------------------------------------------------------------------


def torch_child(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(7)
    rows = []
    for name, (b, h, sq, sk, d, mask) in CONFIGS.items():
        if args.only and args.only not in name:
            continue
        for dtype_name in args.dtypes:
            dtype = getattr(torch, dtype_name)

            def randn(*shape):
                return torch.randn(*shape, device="cuda", dtype=dtype, generator=gen)

            q, k, v = randn(b, h, sq, d), randn(b, h, sk, d), randn(b, h, sk, d)
            kw = {"is_causal": mask == "causal"}
            if mask == "bias":
                bias = torch.zeros(b, 1, 1, sk, device="cuda", dtype=dtype)
                bias[:, :, :, sk - sk // 8:] = torch.finfo(dtype).min  # a padded tail
                kw["attn_mask"] = bias

            def call():
                return F.scaled_dot_product_attention(q, k, v, **kw)

            row = {"config": name, "dtype": dtype_name}
            row["default_ms"] = time_graph(torch, call, args.runs)
            for backend in BACKENDS:
                try:
                    with sdpa_kernel(getattr(SDPBackend, backend)):
                        row[backend.lower() + "_ms"] = time_graph(torch, call, args.runs)
                except RuntimeError:
                    row[backend.lower() + "_ms"] = None  # this backend does not take the case
            # Which backend the default is: the forced one whose time it matches best.
            forced = {bk: row[bk.lower() + "_ms"] for bk in BACKENDS if row[bk.lower() + "_ms"]}
            row["default_is"] = min(forced, key=lambda bk: abs(forced[bk] - row["default_ms"]),
                                    default=None)
            rows.append(row)
    print("ROWS " + json.dumps(rows), flush=True)


def time_graph(torch, call, runs, per_graph=20):
    """ms per call: `per_graph` calls captured in one CUDA graph, replayed after warm-up,
    timed with CUDA events over `runs` replays. Raises RuntimeError where the call fails."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            call()  # warm-up outside the capture (workspaces, kernel choice)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            call()
    for _ in range(5):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (runs * per_graph)


# ---- the parent ---------------------------------------------------------------------------


def coolbench_rows(args):
    exe = os.path.join(args.build, "bench", "attention_bench")
    cmd = [exe, str(args.runs)] + ([args.only] if args.only else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    header, rows = None, []
    for line in done.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| config"):
            header = cells
        elif header and line.startswith("| ") and not line.startswith("|---"):
            row = dict(zip(header, cells))
            if row["dtype"] in args.dtypes:
                column = "graph ms" if "graph ms" in row else "fused ms"
                rows.append({"config": row["config"], "dtype": row["dtype"],
                             "coolbench_ms": float(row[column]), "timed": column})
    if args.raw:
        with open(args.raw, "a") as f:
            f.write(done.stdout + "\n")
    return done.stdout.splitlines()[0], rows


def torch_rows(args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--runs", str(args.runs),
           "--dtypes", *args.dtypes] + (["--only", args.only] if args.only else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for line in done.stdout.splitlines():
        if line.startswith("ROWS "):
            return json.loads(line[len("ROWS "):])
    raise SystemExit(f"the PyTorch child printed no rows ({done.returncode}): "
                     f"{done.stderr.strip()[-2000:]}")


def cell(ms):
    return "–" if ms is None else f"{ms:.4f}"


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=2, help="fresh processes of each side")
    p.add_argument("--runs", type=int, default=30, help="timed runs (replays) a process")
    p.add_argument("--only", help="configurations whose name contains this")
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--raw", help="append each attention_bench output here (its forced kernels)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return torch_child(args)
    if args.rounds < 1 or args.runs < 1:
        p.error("--rounds and --runs are at least 1")
    ours, theirs, timed, described = {}, {}, {}, None
    for round_ in range(args.rounds):
        # Alternate which side goes first, so neither always meets the GPU as the other left it.
        sides = ["coolbench", "torch"] if round_ % 2 == 0 else ["torch", "coolbench"]
        for side in sides:
            if side == "coolbench":
                described, rows = coolbench_rows(args)
                for r in rows:
                    ours.setdefault((r["config"], r["dtype"]), []).append(r["coolbench_ms"])
                    timed[(r["config"], r["dtype"])] = r["timed"]
            else:
                for r in torch_rows(args):
                    theirs.setdefault((r["config"], r["dtype"]), []).append(r)
    print(f"{described}; {args.rounds} fresh processes of each side, the median of them\n")
    cols = ["default"] + [backend.lower() for backend in BACKENDS]  # the child's row keys
    print("| config | dtype | coolbench ms | torch ms (default) | default is | ratio | "
          "coolbench TFLOP/s | flash ms | efficient ms | cuDNN ms | math ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    table = []
    for key, mine in ours.items():
        peer = theirs.get(key, [])
        fig = {c: median_of([r.get(c + "_ms") for r in peer]) for c in cols}
        ms = statistics.median(mine)
        chosen = sorted({r["default_is"] for r in peer if r.get("default_is")})
        row = {"config": key[0], "dtype": key[1], "coolbench_ms": ms, "processes": len(mine),
               "coolbench_timed": timed[key],
               "torch_default_is": "/".join(chosen).lower() or None,
               **{f"torch_{c}_ms": fig[c] for c in cols}}
        row["ratio"] = ms / fig["default"] if fig["default"] else None
        table.append(row)
        ratio = "–" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        print(f"| {key[0]} | {key[1]} | {ms:.4f} | {cell(fig['default'])} | "
              f"{row['torch_default_is'] or '–'} | {ratio} | {flops(key[0]) / ms / 1e9:.1f} | "
              + " | ".join(cell(fig[c]) for c in cols[1:]) + " |")
    if any(r["coolbench_timed"] != "graph ms" for r in table):
        print("\ncoolbench ms is attention_bench's \"fused ms\" (no \"graph ms\" in this build): "
              "rows under about 15 us are the host's pace, upper bounds for coolbench")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
