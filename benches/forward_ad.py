"""PyTorch's side of benches/harnesses/forward_ad.rs: an MLP's Jacobian-vector product by
forward mode (torch.func.jvp) and by the double-vjp trick (torch.autograd.functional.jvp), the
plain forward, and the Hessian of a small network (torch.autograd.functional.hessian); same
shapes, medians after a warm-up, `key=value` lines.

    /tmp/torchenv/bin/python benches/forward_ad.py --threads 2
"""
import argparse
import statistics
import time

import torch


def median_ms(runs, f):
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sizes = [64, 128, 128, 10]
    layers = [
        (torch.randn(a, b) / a**0.5, torch.randn(b) * 0.1) for a, b in zip(sizes, sizes[1:])
    ]

    def mlp(x):
        h = x
        for i, (w, b) in enumerate(layers):
            h = h @ w + b
            if i + 1 < len(layers):
                h = h.tanh()
        return h

    x = torch.randn(256, 64)
    v = torch.randn(256, 64)
    print(f"mlp_forward_ms={median_ms(50, lambda: mlp(x)):.3f}")
    print(f"mlp_jvp_forward_mode_ms={median_ms(50, lambda: torch.func.jvp(mlp, (x,), (v,))):.3f}")
    print(
        f"mlp_jvp_double_vjp_ms="
        f"{median_ms(50, lambda: torch.autograd.functional.jvp(mlp, x, v)):.3f}"
    )
    w1 = torch.randn(8, 16, dtype=torch.float64)
    w2 = torch.randn(16, 1, dtype=torch.float64)
    xs = torch.randn(32, 8, dtype=torch.float64)
    f = lambda w: (xs @ w).tanh().matmul(w2).sum()
    print(f"hessian_128x128_ms={median_ms(5, lambda: torch.autograd.functional.hessian(f, w1)):.3f}")


if __name__ == "__main__":
    main()
