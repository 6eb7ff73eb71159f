"""PyTorch's Adam step time on the parameters `benches/optim.rs` uses, for the figures beside
ours: `fused=True` (PyTorch's CPU fused kernel), `foreach=True`, and the default single-tensor
loop, with 2 intra-op threads.

    /tmp/torchenv/bin/python benches/compare_optim.py
"""

import time

import torch

torch.set_num_threads(2)


def mlp(sizes):
    shapes = []
    for a, b in zip(sizes, sizes[1:]):
        shapes += [(b, a), (b,)]
    return shapes


def time_step(shapes, **kw):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.Adam(params, lr=1e-4, **kw)
    for _ in range(10):
        opt.step()
    best = float("inf")
    for _ in range(7):
        n = 20
        t0 = time.perf_counter()
        for _ in range(n):
            opt.step()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


if __name__ == "__main__":
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, sizes in [("mlp_784_2048_10", [784, 2048, 10]), ("mlp_1024x3", [1024, 1024, 1024])]:
        shapes = mlp(sizes)
        for label, kw in [("fused", dict(fused=True)), ("foreach", dict(foreach=True)),
                          ("single-tensor", dict(foreach=False))]:
            print(f"adam_step/{name}/{label}: {time_step(shapes, **kw) * 1e3:.3f} ms")
