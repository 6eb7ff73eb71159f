"""PyTorch on the workload of benches/attention.rs, timed the same way (median of repeated
runs), on the CPU with 2 threads, then 1.

    /tmp/torchenv/bin/python benches/compare_attention.py
    cargo bench --bench attention
"""

import time

import torch
import torch.nn as nn

torch.manual_seed(0)


def timeit(f, warmup=1.0, measure=3.0):
    """(median, fastest) seconds per call of f over about `measure` seconds, after `warmup`."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        f()
    samples = []
    end = time.perf_counter() + measure
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        f()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return samples[len(samples) // 2], samples[0]


class Block(nn.Module):
    """y = x + mha(ln(x)): pre-norm self-attention, as in benches/attention.rs."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(256)
        self.attn = nn.MultiheadAttention(256, 4, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        return x + a


block = Block()
x = torch.randn(8, 128, 256, requires_grad=True)


def forward_backward():
    block.zero_grad(set_to_none=True)
    x.grad = None
    block(x).sum().backward()


def forward():
    with torch.no_grad():
        block(x)


for threads in (2, 1):
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: median, fastest")
    for name, f in (("attention_block/forward_backward", forward_backward),
                    ("attention_block/forward", forward)):
        med, best = timeit(f)
        print(f"  {name:34s} {med * 1e3:8.2f} ms {best * 1e3:8.2f} ms")
