#!/usr/bin/env python3
"""How cuBLAS (through PyTorch's matmul) times an M x K by K x N product as N
steps off a multiple of 8: the lm_head of GPT-2 (N = 50257) against the same
product with N rounded to 50264, for B stored [N, K] (read transposed) and
[K, N]. CUDA events around each of RUNS calls after a warm-up, random data;
the median per row. One process, one GPU: the rows are comparable with each
other, not across machines.

    python3 bench/product_n_alignment.py [--m 128] [--k 768] [--n 50257 50264 50304 50176]

Results: docs/perf/engine.md ("The lm_head, and what the exports really
compute")."""
import argparse
import statistics


def median_ms(torch, fn, runs):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(runs + 1)]
    for i in range(runs):
        marks[i].record()
        fn()
    marks[runs].record()
    torch.cuda.synchronize()
    return statistics.median(marks[i].elapsed_time(marks[i + 1]) for i in range(runs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--k", type=int, default=768)
    parser.add_argument("--n", type=int, nargs="+", default=[50257, 50264, 50304, 50176])
    parser.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--device", type=int, default=0)
    a = parser.parse_args()
    import torch

    torch.manual_seed(0)
    device = torch.device("cuda", a.device)
    print(f"GPU {a.device}: {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
          f"M {a.m}, K {a.k}, median of {a.runs} calls\n")
    print("| dtype | N | x @ W[N,K]ᵀ | x @ W[K,N] |")
    print("|---|---|---|---|")
    for name in a.dtypes:
        dtype = getattr(torch, name)
        x = torch.randn(a.m, a.k, device=device, dtype=dtype)
        for n in a.n:
            w_nk = torch.randn(n, a.k, device=device, dtype=dtype) / a.k ** 0.5
            w_kn = w_nk.t().contiguous()
            transposed = median_ms(torch, lambda: torch.mm(x, w_nk.t()), a.runs)
            plain = median_ms(torch, lambda: torch.mm(x, w_kn), a.runs)
            print(f"| {name} | {n} | {transposed * 1e3:.1f} µs | {plain * 1e3:.1f} µs |", flush=True)


if __name__ == "__main__":
    main()
