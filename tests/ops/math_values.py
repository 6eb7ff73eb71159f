"""Prints the PyTorch 2.15 values that tests/ops/math_values.rs asserts (run with a PyTorch
install: `python tests/ops/math_values.py`). Values are printed with `repr`, f64 unless named."""
import math

import torch
import torch.nn.functional as F

inf, nan = math.inf, math.nan
UNARY = {
    "log1p": (torch.log1p, [-1.0, -0.5, 1e-10, 1e-300, 0.0, 3.0, inf, -2.0]),
    "expm1": (torch.expm1, [1e-10, -1e-10, 1e-300, 0.0, 1.0, -inf, 710.0, -40.0]),
    "log2": (torch.log2, [8.0, 0.1, 0.0, -1.0, inf, 3.0]),
    "exp2": (torch.exp2, [3.0, -1.5, 0.1, 1024.0, -inf, -1075.0]),
    "rsqrt": (torch.rsqrt, [4.0, 0.0, -0.0, -1.0, inf, 2.0]),
    "softplus": (F.softplus, [0.0, 1.0, -30.0, 19.0, 20.0, 20.5, 100.0, -1.0]),
    "softplus_b2_t1": (lambda x: F.softplus(x, 2.0, 1.0), [0.0, 0.4, 0.6, -3.0]),
    "silu": (F.silu, [0.0, 1.0, -1.0, 30.0, -30.0, -800.0, inf]),
    "mish": (F.mish, [0.0, 1.0, -1.0, 30.0, -30.0, 100.0, inf]),
    "hardtanh": (F.hardtanh, [-2.0, -1.0, 0.25, 1.0, 3.0, nan]),
    "floor": (torch.floor, [-1.5, -0.5, 0.5, 2.7, -0.0, inf]),
    "ceil": (torch.ceil, [-1.5, -0.5, 0.5, 2.2, -0.0, inf]),
    "round": (torch.round, [0.5, 1.5, 2.5, -0.5, -2.5, 2.4999, 3.5, -0.2, 4503599627370497.0]),
    "trunc": (torch.trunc, [-1.7, -0.5, 0.5, 2.7, -0.0, inf]),
}
BINARY = {
    "minimum": (torch.minimum, [1.0, 5.0, nan, 2.0, -0.0, 3.0], [3.0, 2.0, 1.0, nan, 0.0, 3.0]),
    "maximum": (torch.maximum, [1.0, 5.0, nan, 2.0, -0.0, 3.0], [3.0, 2.0, 1.0, nan, 0.0, 3.0]),
    "fmod": (torch.fmod, [-7.0, 7.0, -7.0, 7.0, 5.5, 1.0, inf], [3.0, -3.0, -3.0, 3.0, 2.0, 0.0, 2.0]),
    "remainder": (torch.remainder, [-7.0, 7.0, -7.0, 7.0, 5.5, 1.0, -6.0], [3.0, -3.0, -3.0, 3.0, 2.0, 0.0, 3.0]),
    "atan2": (torch.atan2, [1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 2.0], [1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 0.0, 0.0]),
}

for name, (f, xs) in UNARY.items():
    x = torch.tensor(xs, dtype=torch.float64)
    print(name, [repr(v) for v in f(x).tolist()])
    print(name, "f32", [repr(v) for v in f(x.float()).tolist()])
for name, (f, a, b) in BINARY.items():
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    print(name, [repr(v) for v in f(a, b).tolist()])
print("fmod scalar", torch.fmod(torch.tensor([-7.0, 7.0, 5.5]), -3.0).tolist())
print("remainder scalar", torch.remainder(torch.tensor([-7.0, 7.0, 5.5]), -3.0).tolist())

# Gradients.
def grads(f, *xs):
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    f(*ts).sum().backward()
    return [t.grad.tolist() for t in ts]

print("grad minimum", grads(torch.minimum, [1.0, 5.0, 3.0, nan], [3.0, 2.0, 3.0, 1.0]))
print("grad maximum", grads(torch.maximum, [1.0, 5.0, 3.0, nan], [3.0, 2.0, 3.0, 1.0]))
print("grad fmod", grads(torch.fmod, [-7.0, 7.0, 5.5], [3.0, -3.0, 2.0]))
print("grad remainder", grads(torch.remainder, [-7.0, 7.0, 5.5], [3.0, -3.0, 2.0]))
print("grad atan2", grads(torch.atan2, [1.0, -2.0, 0.5], [1.0, 3.0, -0.5]))
print("grad softplus", grads(F.softplus, [0.0, 1.0, 19.0, 21.0, -5.0]))
print("grad hardtanh", grads(F.hardtanh, [-2.0, -1.0, 0.25, 1.0, 3.0]))
print("grad round", grads(torch.round, [0.5, 1.7]))
for name, f, xs in [
    ("log1p", torch.log1p, [0.5, -0.5]), ("expm1", torch.expm1, [0.5, -0.5]),
    ("log2", torch.log2, [0.5, 3.0]), ("exp2", torch.exp2, [0.5, -3.0]),
    ("rsqrt", torch.rsqrt, [0.5, 3.0]), ("silu", F.silu, [0.5, -3.0]), ("mish", F.mish, [0.5, -3.0]),
]:
    print("grad", name, grads(f, xs))
