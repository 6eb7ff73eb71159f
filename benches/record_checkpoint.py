"""Writes the checkpoints PyTorch saved that tests/nn/checkpoint.rs loads, and checks one Rust saved.

    python benches/record_checkpoint.py            # writes tests/nn/data/checkpoint_*
    python benches/record_checkpoint.py FILE.safetensors
        # loads a state dict this library saved (e.g. `cargo run --release -p train-mlp --
        # --save FILE`'s model part) into the same PyTorch architecture and prints its keys

The model is the one the test builds: Linear(4, 8) -> Tanh -> Linear(8, 3), as nn.Sequential,
so the keys are "0.weight", "0.bias", "2.weight", "2.bias".
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

DATA = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "data")


def model(dtype):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).to(dtype)


def record():
    out = {}
    for name, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        m = model(dtype)
        x = torch.linspace(-1.5, 2.0, 2 * 4, dtype=dtype).reshape(2, 4)
        y = m(x)
        y.sum().backward()
        save_file(m.state_dict(), os.path.join(DATA, f"checkpoint_mlp_{name}.safetensors"))
        out[name] = {
            "x": x.flatten().tolist(),
            "y": y.detach().flatten().tolist(),
            "grads": {k: p.grad.flatten().tolist() for k, p in m.named_parameters()},
        }
    with open(os.path.join(DATA, "checkpoint_mlp.json"), "w") as f:
        json.dump(out, f)


def check(path):
    state = load_file(path)
    dtype = next(iter(state.values())).dtype
    m = model(dtype)
    m.load_state_dict(state)  # strict: raises on missing/unexpected keys or shapes
    print("loaded", sorted(state), "into", m)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        check(sys.argv[1])
    else:
        record()
