"""PyTorch's side of benches/harnesses/half_gemm.rs: `matmul` of square matrices in f32, f16 and
bf16 on the CPU, medians of 7 runs after a warm-up. `python benches/half_gemm.py --threads 2`."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=0)
args = p.parse_args()
if args.threads:
    torch.set_num_threads(args.threads)
torch.manual_seed(0)
for n in (256, 512, 1024):
    a, b = torch.randn(n, n), torch.randn(n, n)
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")):
        x, y = a.to(dtype), b.to(dtype)
        x @ y
        times = []
        for _ in range(7):
            t = time.perf_counter()
            x @ y
            times.append((time.perf_counter() - t) * 1e3)
        ms = sorted(times)[3]
        print(f"half_gemm n={n} dtype={name} ms={ms:.3f} gflops={2 * n**3 / (ms * 1e6):.1f}")
