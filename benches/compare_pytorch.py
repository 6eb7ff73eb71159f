"""Runs the `cpu_kernels` harness and `benches/pytorch_kernels.py` alternately and prints the median
of each figure side by side, with the ratio to PyTorch and the CPU-kernels issue's target.

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    cargo build --release -p harnesses --example cpu_kernels
    /tmp/torchenv/bin/python benches/compare_pytorch.py --rounds 7

Alternating the two programs round by round spreads the noise of a shared machine over both.
Not part of the build or the tests.
"""

import argparse
import statistics
import subprocess
import sys
from collections import defaultdict

# figure -> (target ratio to PyTorch with 2 threads, with 1 thread); None: reported only.
TARGETS = {
    "wide_tanh_forward_ms": (0.9, 1.0),
    "wide_tanh_backward_ms": (0.9, 1.0),
    "mlp_small_ms": (1.0, None),
    "mlp_large_ms": (1.0, None),
}


def figures(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        for item in line.split():
            key, sep, value = item.partition("=")
            if sep and key in TARGETS:
                result[key] = float(value)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="*", default=[2, 1])
    args = ap.parse_args()
    ours_bin = "target/release/examples/cpu_kernels"
    for threads in args.threads:
        runs = defaultdict(lambda: defaultdict(list))
        for _ in range(args.rounds):
            for side, cmd in (
                ("ours", [ours_bin, "--threads", str(threads)]),
                ("torch", [sys.executable, "benches/pytorch_kernels.py", "--threads", str(threads)]),
            ):
                for key, value in figures(cmd).items():
                    runs[side][key].append(value)
        print(f"{threads} thread(s), median of {args.rounds} alternating rounds (ms)")
        print(f"  {'figure':<24} {'ours':>9} {'pytorch':>9} {'ratio':>7} {'target':>7}")
        for key, targets in TARGETS.items():
            ours = statistics.median(runs["ours"][key])
            torch = statistics.median(runs["torch"][key])
            target = targets[0] if threads > 1 else targets[1]
            verdict = "" if target is None else ("ok" if ours / torch <= target else "MISSED")
            shown = "-" if target is None else f"<={target}"
            print(f"  {key:<24} {ours:>9.3f} {torch:>9.3f} {ours / torch:>7.2f} {shown:>7} {verdict}")


if __name__ == "__main__":
    main()
