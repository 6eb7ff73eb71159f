"""PyTorch's side of `cargo run --release -p harnesses --example cpu_kernels`: the same workloads, timed the same way.

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    /tmp/torchenv/bin/python benches/pytorch_kernels.py --threads 2
    RAYON_NUM_THREADS=2 cargo run --release -p harnesses --example cpu_kernels

Workloads (medians of several runs after a warm-up, milliseconds):
  * wide tanh: L = 10 layers of y = tanh(y * w + b) on f32 vectors of width 2^20, every w and b a
    leaf; the forward (recording the graph) and the backward of y.sum() timed separately;
  * MLP forward+backward, f32: relu(x W1 + b1) W2 + b2, MSE loss against a fixed target, for
    64x784 -> 512 -> 10 and 256x1024 -> 1024 -> 1024;
  * peak resident memory of one training step of the large MLP (run with --peak-mlp alone, so the
    figure is that step's and not the other workloads').
Not part of the build or the tests: the project never needs Python.
"""

import argparse
import statistics
import time

import torch


def median_ms(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def wide_tanh(width, layers, runs):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(width, generator=g)
    ws = [(1.0 + 0.1 * torch.randn(width, generator=g)).requires_grad_() for _ in range(layers)]
    bs = [(torch.randn(width, generator=g) * 0.1).requires_grad_() for _ in range(layers)]

    def forward():
        y = x
        for w, b in zip(ws, bs):
            y = torch.tanh(y * w + b)
        return y.sum()

    fwd = median_ms(forward, runs)
    times = []
    for i in range(runs + 1):
        for p in ws + bs:
            p.grad = None
        loss = forward()
        t = time.perf_counter()
        loss.backward()
        if i > 0:
            times.append((time.perf_counter() - t) * 1e3)
    return fwd, statistics.median(times)


def rss_mib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return float("nan")


def mlp(batch, d_in, d_hidden, d_out, runs, step_only=False):
    g = torch.Generator().manual_seed(1)
    w1 = (torch.randn(d_in, d_hidden, generator=g) / d_in**0.5).requires_grad_()
    b1 = torch.zeros(d_hidden, requires_grad=True)
    w2 = (torch.randn(d_hidden, d_out, generator=g) / d_hidden**0.5).requires_grad_()
    b2 = torch.zeros(d_out, requires_grad=True)
    x = torch.randn(batch, d_in, generator=g)
    target = torch.randn(batch, d_out, generator=g)

    def step():
        for p in (w1, b1, w2, b2):
            p.grad = None
        h = torch.relu(x @ w1 + b1)
        out = h @ w2 + b2
        ((out - target) ** 2).mean().backward()

    if step_only:
        return step
    return median_ms(step, runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--peak-mlp", action="store_true", help="only one large-MLP step; print peak RSS")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.peak_mlp:
        step = mlp(256, 1024, 1024, 1024, 0, step_only=True)
        before = rss_mib("VmRSS:")
        step()
        peak = rss_mib("VmHWM:")
        print(
            f"pytorch {torch.__version__} peak_rss_mib={peak:.1f} step_peak_over_setup_mib={peak - before:.1f}"
            " (one step of 256x1024->1024->1024; the peak includes the interpreter and libtorch)"
        )
        return
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads")
    fwd, bwd = wide_tanh(1 << 20, 10, args.runs)
    print(f"wide_tanh_forward_ms={fwd:.2f}")
    print(f"wide_tanh_backward_ms={bwd:.2f}")
    print(f"mlp_small_ms={mlp(64, 784, 512, 10, args.runs * 4):.3f}")
    print(f"mlp_large_ms={mlp(256, 1024, 1024, 1024, args.runs):.3f}")


if __name__ == "__main__":
    main()
