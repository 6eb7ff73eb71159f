"""Prints PyTorch's CPU random streams that `autograd-runtime/src/random/tests.rs` and
`tests/nn/layers/pytorch_init.rs` assert (run with PyTorch 2.15: `python tests/ops/gen_random.py`).

f32 values are printed as their bit patterns, f64 values with repr (shortest round trip);
long streams as a checksum: the wrapping sum over i of (i + 1) * bits(x[i]) mod 2^64.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 2**64


def bits32(t):
    return [x & 0xFFFFFFFF for x in t.contiguous().view(torch.int32).flatten().tolist()]


def bits64(t):
    return [x & 0xFFFFFFFFFFFFFFFF for x in t.contiguous().view(torch.int64).flatten().tolist()]


def checksum(bits):
    return sum((i + 1) * b for i, b in enumerate(bits)) % M


def f32(name, t):
    print(f"{name} (f32 bits): [{', '.join(hex(b) for b in bits32(t))}]")


def f64(name, t):
    print(f"{name} (f64): [{', '.join(repr(float(x)) for x in t.flatten().tolist())}]")


def show():
    torch.manual_seed(0); f32("randn(5)", torch.randn(5))
    torch.manual_seed(0); f32("randn(40)", torch.randn(40))
    torch.manual_seed(0); f64("randn(5, f64)", torch.randn(5, dtype=torch.float64))
    torch.manual_seed(0); f64("randn(40, f64)", torch.randn(40, dtype=torch.float64))
    torch.manual_seed(0); f32("rand(3, 4)", torch.rand(3, 4))
    torch.manual_seed(0); f64("rand(5, f64)", torch.rand(5, dtype=torch.float64))
    torch.manual_seed(0); f32("empty(20).uniform_(-2, 3)", torch.empty(20).uniform_(-2, 3))
    torch.manual_seed(0); f64("empty(6, f64).uniform_(-2, 3)", torch.empty(6, dtype=torch.float64).uniform_(-2, 3))
    torch.manual_seed(0); f32("empty(37).normal_(0.5, 2.5)", torch.empty(37).normal_(0.5, 2.5))
    torch.manual_seed(0); f64("empty(37, f64).normal_(0.5, 2.5)", torch.empty(37, dtype=torch.float64).normal_(0.5, 2.5))
    torch.manual_seed(0); f64("empty(7, f64).normal_(0.5, 2.5)", torch.empty(7, dtype=torch.float64).normal_(0.5, 2.5))
    torch.manual_seed(0); a = torch.randn(5, dtype=torch.float64); f64("randn(5) then randn(3), f64", torch.randn(3, dtype=torch.float64))
    torch.manual_seed(0); print("randperm(10):", torch.randperm(10).tolist())
    torch.manual_seed(3); print("seed 3 randperm(30):", torch.randperm(30).tolist())
    for seed in [1, 42]:
        torch.manual_seed(seed); print(f"seed {seed} randn(100003) checksum:", checksum(bits32(torch.randn(100003))))
        torch.manual_seed(seed); print(f"seed {seed} randn(10003, f64) checksum:", checksum(bits64(torch.randn(10003, dtype=torch.float64))))
        torch.manual_seed(seed); print(f"seed {seed} rand(10003) checksum:", checksum(bits32(torch.rand(10003))))
    g = torch.Generator().manual_seed(0); print("Generator().manual_seed(0) rand(2):", torch.rand(2, generator=g, dtype=torch.float64).tolist())
    print("Generator().initial_seed():", torch.Generator().initial_seed())
    torch.manual_seed(0); f32("dropout(ones(12), 0.3)", F.dropout(torch.ones(12), 0.3))
    torch.manual_seed(0); f64("dropout(ones(6, f64), 0.3)", F.dropout(torch.ones(6, dtype=torch.float64), 0.3))
    torch.manual_seed(0); print("dropout(ones(10003), 0.3) checksum:", checksum(bits32(F.dropout(torch.ones(10003), 0.3))))
    # layers
    torch.manual_seed(0); l = nn.Linear(3, 2); f32("Linear(3, 2).weight", l.weight.data); f32("Linear(3, 2).bias", l.bias.data)
    torch.manual_seed(0); l = nn.Linear(20, 30); print("Linear(20, 30) checksums:", checksum(bits32(l.weight.data)), checksum(bits32(l.bias.data)))
    torch.manual_seed(0); l = nn.Linear(3, 2, bias=False); f32("Linear(3, 2, bias=False) then rand(1)", torch.rand(1))
    torch.manual_seed(0); c = nn.Conv2d(3, 4, 3); print("Conv2d(3, 4, 3) checksums:", checksum(bits32(c.weight.data)), checksum(bits32(c.bias.data)))
    torch.manual_seed(0); c = nn.Conv2d(4, 6, 3, groups=2); print("Conv2d(4, 6, 3, groups=2) checksums:", checksum(bits32(c.weight.data)), checksum(bits32(c.bias.data)))
    torch.manual_seed(0); c = nn.Conv2d(2, 3, 2, bias=False); f32("Conv2d(2, 3, 2, bias=False) then rand(1)", torch.rand(1))
    torch.manual_seed(0); e = nn.Embedding(10, 3); f32("Embedding(10, 3).weight", e.weight.data)
    torch.manual_seed(0); e = nn.Embedding(3, 2); f32("Embedding(3, 2).weight", e.weight.data)
    torch.manual_seed(0); m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)); print("Sequential(Linear(4, 8), ReLU, Linear(8, 2)) checksums:", [checksum(bits32(p.data)) for p in m.parameters()])


if __name__ == "__main__":
    show()
