"""A model on the GPU three ways: one CUDA graph over the arena (the default),
kernel by kernel over the arena (cuda_graph=False), and without fusion. Checks
that the graph and the kernel-by-kernel run give the same bytes, prints how
each executes, then measures each under the protocol (CUDA events around the
session's launch; docs/engine.md, "Execution plan").

    coolbench model gpt2 --dtype fp16 -o gpt2.onnx          # GPT-2 small
    PYTHONPATH=build/python python3 examples/session_modes.py gpt2.onnx \\
        --dim batch=1 --dim sequence=128 --max-time 20   # ids in [0, 50): --ids
"""

import argparse

import numpy as np

import coolbench


def feeds_for(session, dims, ids, seed=7):
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in session.inputs:
        shape = [dims[d] if isinstance(d, str) else d for d in v.shape]
        if v.dtype in ("int64", "int32"):
            feeds[v.name] = rng.integers(0, ids, size=shape).astype(v.dtype)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(v.dtype)
    return feeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--dim", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--max-time", type=float, default=20, help="seconds per measurement")
    parser.add_argument("--ids", type=int, default=50, help="integer inputs in [0, IDS)")
    args = parser.parse_args()
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    modes = {
        "graph": dict(),
        "eager (arena)": dict(cuda_graph=False),
        "graph, no fusion": dict(fuse=False),
    }
    sessions = {
        name: coolbench.Session(args.model, device=args.device, dims=dims, **options)
        for name, options in modes.items()
    }
    feeds = feeds_for(sessions["graph"], dims, args.ids)
    outputs = {}
    for name, s in sessions.items():
        s.run(None, feeds)  # records the memory plan
        outputs[name] = s.run(None, feeds)  # captures and launches the graph
        print(f"{name}: {s.execution}")
    same = all(
        np.array_equal(a, b) for a, b in zip(outputs["graph"], outputs["eager (arena)"])
    )
    print(f"graph and eager outputs identical: {same}")
    for name, s in sessions.items():
        r = coolbench.measure(s, feeds, max_time=args.max_time)
        print(f"{name}: {r}")
    if not same:
        raise SystemExit("the graph's outputs differ from the eager run's")


if __name__ == "__main__":
    main()
