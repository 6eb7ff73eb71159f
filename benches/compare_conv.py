"""PyTorch on the workloads of benches/conv.rs, timed the same way (median of repeated runs),
with 2 threads, on the CPU.

    /tmp/torchenv/bin/python benches/compare_conv.py
    cargo bench --bench conv
"""

import time

import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)


def timeit(f, warmup=1.0, measure=3.0):
    """(median, fastest) seconds per call of f over about `measure` seconds, after `warmup`
    seconds. On a loaded machine PyTorch's 2-thread runs are bimodal (a worker thread that has
    lost its core stalls every op): the fastest run shows the unloaded figure."""
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


net = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(),
)
x = torch.randn(64, 1, 8, 8)


def forward_backward():
    net.zero_grad()
    net(x).sum().backward()


def forward():
    with torch.no_grad():
        net(x)


conv2 = net[3]
x2 = torch.randn(64, 16, 4, 4, requires_grad=True)


def conv_forward_backward():
    net.zero_grad()
    x2.grad = None
    conv2(x2).sum().backward()


block1 = nn.Conv2d(64, 64, 3, padding=1)
block2 = nn.Conv2d(64, 64, 3, padding=1)
x3 = torch.randn(16, 64, 32, 32, requires_grad=True)


def resnet_block_forward_backward():
    block1.zero_grad()
    block2.zero_grad()
    x3.grad = None
    torch.relu(block2(torch.relu(block1(x3))) + x3).sum().backward()


for threads in (2, 1):
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: median, fastest")
    for name, f in [("cnn_8x8/forward_backward", forward_backward), ("cnn_8x8/forward", forward),
                    ("conv_16_32/forward_backward", conv_forward_backward),
                    ("resnet_block/forward_backward", resnet_block_forward_backward)]:
        median, fastest = timeit(f)
        print(f"  {name:30s} {median * 1e6:9.1f} µs {fastest * 1e6:9.1f} µs")
