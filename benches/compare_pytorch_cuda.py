"""The GPU-speed issue's table: the `cuda_overhead` harness beside the same workloads in PyTorch on
the same GPU, alternating the two programs round by round, with the ratio and the issue's target.

    cargo build --release -p harnesses --example cuda_overhead
    python3 benches/compare_pytorch_cuda.py --rounds 3            # both, side by side
    python3 benches/compare_pytorch_cuda.py --torch-only          # PyTorch's figures alone
    python3 benches/compare_pytorch_cuda.py --torch-only --only mlp_4096x784x2048   # one workload

PyTorch's figures improve as its process warms up, so each PyTorch round runs every workload
four times and keeps the best median (the issue compares against PyTorch's warmed-up best).
Workloads (f32, forward + backward through autograd, medians of 20 runs after 3 warm-ups):
`sum(tanh(x @ w1 + b1) @ w2 + b2)` for four MLP sizes; 10 layers of `y = tanh(y * w + b)` on
2^20-wide vectors; a chain of 10,000 scalar multiplications (per op, and backward per node).
Not part of the build or the tests.
"""

import argparse
import statistics
import subprocess
import sys
import time
from collections import defaultdict

# figure -> target: ("ratio", r) ours/pytorch <= r, ("abs", v) ours <= v.
TARGETS = {
    "mlp_4096x784x512x10_engine_ms": ("ratio", 0.6),
    "mlp_4096x784x2048x10_engine_ms": ("ratio", 0.9),
    "mlp_256x1024x1024x1024_engine_ms": ("ratio", 0.9),
    "mlp_64x784x512x10_engine_ms": ("ratio", 0.3),
    "wide_tanh_2p20_x10_engine_ms": ("ratio", 0.8),
    "scalar_chain_record_backward_us_per_op": ("abs", 5.0),
    "scalar_chain_backward_us_per_node": ("abs", 3.0),
}
WARMUP, RUNS = 3, 20


def torch_figures(only=""):
    import torch

    dev = torch.device("cuda:0")
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(dev)

    def median_ms(f):
        for _ in range(WARMUP):
            f()
        torch.cuda.synchronize()
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            f()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    def mlp(batch, inp, hidden, classes):
        x = randn(batch, inp)
        w1 = randn(inp, hidden, scale=inp**-0.5).requires_grad_()
        b1 = randn(hidden, scale=inp**-0.5).requires_grad_()
        w2 = randn(hidden, classes, scale=hidden**-0.5).requires_grad_()
        b2 = randn(classes, scale=hidden**-0.5).requires_grad_()

        def step():
            h = torch.tanh(x @ w1 + b1)
            (h @ w2 + b2).sum().backward()
            for p in (w1, b1, w2, b2):
                p.grad = None

        return step

    def wide_tanh(width, layers):
        x = randn(width)
        params = [(randn(width).requires_grad_(), randn(width).requires_grad_()) for _ in range(layers)]

        def step():
            y = x
            for w, b in params:
                y = torch.tanh(y * w + b)
            y.sum().backward()
            for w, b in params:
                w.grad = None
                b.grad = None

        return step

    workloads = {
        "mlp_4096x784x512x10_engine_ms": mlp(4096, 784, 512, 10),
        "mlp_4096x784x2048x10_engine_ms": mlp(4096, 784, 2048, 10),
        "mlp_256x1024x1024x1024_engine_ms": mlp(256, 1024, 1024, 1024),
        "mlp_64x784x512x10_engine_ms": mlp(64, 784, 512, 10),
        "wide_tanh_2p20_x10_engine_ms": wide_tanh(1 << 20, 10),
    }
    best = {}
    workloads = {k: v for k, v in workloads.items() if k.startswith(only)}
    for _ in range(4):
        for key, step in workloads.items():
            best[key] = min(best.get(key, float("inf")), median_ms(step))
    if only and not "scalar_chain".startswith(only):
        return best

    n = 10_000
    x = torch.tensor(1.0, device=dev, requires_grad=True)
    both, backward = [], []
    for run in range(6):
        torch.cuda.synchronize()
        start = time.perf_counter()
        y = x
        for _ in range(n):
            y = y * 1.0000001
        recorded = time.perf_counter()
        y.backward()
        torch.cuda.synchronize()
        end = time.perf_counter()
        x.grad = None
        if run > 0:
            both.append((end - start) * 1e6 / n)
            backward.append((end - recorded) * 1e6 / n)
    best["scalar_chain_record_backward_us_per_op"] = statistics.median(both)
    best["scalar_chain_backward_us_per_node"] = statistics.median(backward)
    return best


def ours_figures(binary):
    out = subprocess.run([binary], check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in TARGETS:
            result[key] = float(value)
    if not result:
        sys.exit(f"{binary} printed no figures:\n{out}")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ours", default="target/release/examples/cuda_overhead")
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--only", default="", help="with --torch-only: the workloads named so")
    args = ap.parse_args()
    if args.torch_only:
        for key, value in torch_figures(args.only).items():
            print(f"{key}={value:.3f}")
        return
    runs = defaultdict(lambda: defaultdict(list))
    for _ in range(args.rounds):
        for key, value in ours_figures(args.ours).items():
            runs["ours"][key].append(value)
        torch_out = subprocess.run(
            [sys.executable, __file__, "--torch-only"], check=True, capture_output=True, text=True
        ).stdout
        for line in torch_out.splitlines():
            key, _, value = line.partition("=")
            runs["torch"][key].append(float(value))
    print(f"{args.rounds} alternating rounds: ours min-max, PyTorch best (ms, or us where named)")
    print(f"  {'figure':<40} {'ours':>15} {'pytorch':>9} {'ratio':>11} {'target':>9}")
    for key, (kind, target) in TARGETS.items():
        ours = runs["ours"][key]
        torch = min(runs["torch"][key])
        lo, hi = min(ours), max(ours)
        ratio = f"{lo / torch:.2f}-{hi / torch:.2f}"
        ok = (statistics.median(ours) / torch if kind == "ratio" else statistics.median(ours)) <= target
        shown = f"<={target}" + ("x" if kind == "ratio" else "")
        print(f"  {key:<40} {lo:>7.3f}-{hi:<7.3f} {torch:>9.3f} {ratio:>11} {shown:>9} {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
