"""Prints the tables of tests/ops/pytorch_shape_reductions.rs: for each shape op and reduction of
issue 35, PyTorch's result (values, node name, whether it is a view) on a fixed f64 input and the
input's gradient of `(result * w).sum()` (`w` = 1/8, 2/8, ... in the result's C order); then
PyTorch's error texts for bad arguments (the message up to PyTorch's C++ traceback). The input
is `x[i] = ((37 i) % 17 - 8) / 4` shaped as each case says (exact in f64; it has zeros).

    /tmp/torchenv/bin/python tests/ops/gen_shape_reduction_cases.py > /tmp/cases.rs
"""
import json

import torch

torch.set_printoptions(precision=17)


def inp(shape):
    n = 1
    for s in shape:
        n *= s
    v = [((37 * i) % 17 - 8) / 4 for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape).requires_grad_()


# (name, input shape, op): the Rust side runs the op of the same name.
CASES = [
    ("unsqueeze", [2, 3], lambda x: x.unsqueeze(-1)),
    ("unsqueeze0", [2, 3], lambda x: x.unsqueeze(0)),
    ("squeeze", [1, 2, 1, 3], lambda x: x.squeeze()),
    ("squeeze_dim", [1, 2, 1, 3], lambda x: x.squeeze(-2)),
    ("squeeze_dim_kept", [1, 2, 1, 3], lambda x: x.squeeze(1)),
    ("squeeze_dims", [1, 2, 1, 3], lambda x: x.squeeze((0, 1, 2))),
    ("t", [2, 3], lambda x: x.t()),
    ("t_1d", [3], lambda x: x.t()),
    ("view", [2, 3], lambda x: x.view(-1, 2)),
    ("view_t", [2, 3], lambda x: x.t().view(3, 1, 2)),
    ("reshape_infer_t", [2, 3], lambda x: x.t().reshape(-1)),
    ("flatten", [2, 3, 2], lambda x: x.flatten()),
    ("flatten_12", [2, 3, 2], lambda x: x.flatten(1, 2)),
    ("flatten_t", [2, 3], lambda x: x.t().flatten()),
    ("unflatten", [2, 6], lambda x: x.unflatten(1, (3, -1))),
    ("unflatten_t", [2, 6], lambda x: x.t().unflatten(0, (2, 3))),
    ("expand_as", [3], lambda x: x.expand_as(torch.zeros(2, 3))),
    ("repeat", [2, 3], lambda x: x.repeat(2, 1, 2)),
    ("repeat_t", [2, 3], lambda x: x.t().repeat(1, 2)),
    ("flip", [2, 3], lambda x: x.flip(0, 1)),
    ("flip_last", [2, 3, 2], lambda x: x.flip(-1)),
    ("roll", [2, 3], lambda x: x.roll((1, -2), (0, 1))),
    ("roll_flat", [2, 3], lambda x: x.roll(2)),
    ("roll_big", [2, 3], lambda x: x.roll(7, 1)),
    ("tril", [3, 4], lambda x: x.tril()),
    ("tril_1", [2, 3, 3], lambda x: x.tril(1)),
    ("triu", [3, 4], lambda x: x.triu()),
    ("triu_m1", [4, 3], lambda x: x.triu(-1)),
    ("mean_dims", [2, 3, 2], lambda x: x.mean((0, -1))),
    ("mean_dims_keep", [2, 3], lambda x: x.mean(1, keepdim=True)),
    ("var", [2, 3], lambda x: x.var(1)),
    ("var_c0_keep", [2, 3], lambda x: x.var(0, correction=0, keepdim=True)),
    ("var_all", [2, 3], lambda x: x.var()),
    ("std", [2, 3], lambda x: x.std(1)),
    ("std_all_c0", [2, 3], lambda x: x.std(correction=0)),
    ("prod", [2, 3], lambda x: (x + 3).prod()),
    ("prod_zero", [5], lambda x: x.prod()),
    ("prod_dim", [3, 4], lambda x: (x + 1).prod(1)),
    ("prod_dim_keep", [3, 4], lambda x: x.prod(0, keepdim=True)),
    ("cumsum", [2, 5], lambda x: x.cumsum(1)),
    ("cumsum0", [3, 2], lambda x: x.cumsum(-2)),
    ("logsumexp", [2, 3], lambda x: x.logsumexp(1)),
    ("logsumexp_all_keep", [2, 3], lambda x: x.logsumexp((0, 1), keepdim=True)),
    ("norm", [2, 3], lambda x: x.norm()),
    ("norm_p3", [2, 3], lambda x: x.norm(3.0, dim=1)),
    ("norm_p1_keep", [2, 3], lambda x: x.norm(1.0, dim=0, keepdim=True)),
    ("amax", [2, 3], lambda x: x.amax(1)),
    ("amax_ties", [2, 3], lambda x: torch.cat([x, x.detach()], 1).amax(1)),
    ("amin_keep", [2, 3], lambda x: x.amin(0, keepdim=True)),
    ("bmm", [2, 2, 3], lambda x: x.bmm(torch.arange(12.0, dtype=torch.float64).reshape(2, 3, 2))),
    ("baddbmm", [3, 3], lambda x: x.baddbmm(torch.ones(2, 3, 4, dtype=torch.float64),
                                            torch.ones(2, 4, 3, dtype=torch.float64),
                                            beta=0.5, alpha=2.0)),
    ("outer", [3], lambda x: x.outer(torch.tensor([1.0, -2.0], dtype=torch.float64))),
]

ERRORS = [
    ("unsqueeze_range", lambda: torch.zeros(2, 3).unsqueeze(3)),
    ("squeeze_range", lambda: torch.zeros(2, 3).squeeze(2)),
    ("squeeze_dup", lambda: torch.zeros(1, 3).squeeze((0, 0))),
    ("t_3d", lambda: torch.zeros(1, 2, 3).t()),
    ("view_two", lambda: torch.zeros(2, 3).view(-1, -1)),
    ("view_bad", lambda: torch.zeros(2, 3).view(4, -1)),
    ("view_neg", lambda: torch.zeros(2, 3).view(-2, 3)),
    ("view_stride", lambda: torch.zeros(2, 3).t().view(6)),
    ("reshape_bad", lambda: torch.zeros(2, 3).reshape(-1, 4)),
    ("reshape_zero", lambda: torch.zeros(0, 3).reshape(-1, 0)),
    ("flatten_order", lambda: torch.zeros(2, 3).flatten(1, 0)),
    ("unflatten_bad", lambda: torch.zeros(2, 3).unflatten(1, (2, 2))),
    ("repeat_short", lambda: torch.zeros(2, 3).repeat(2)),
    ("tril_1d", lambda: torch.zeros(3).tril()),
    ("triu_1d", lambda: torch.zeros(3).triu()),
    ("roll_align", lambda: torch.zeros(2, 3).roll((1, 2), (0,))),
    ("roll_empty", lambda: torch.zeros(2, 3).roll((), ())),
    ("flip_dup", lambda: torch.zeros(2, 3).flip(0, 0)),
    ("mean_dup", lambda: torch.zeros(2, 3).mean((0, 0))),
    ("mean_range", lambda: torch.zeros(2, 3).mean(2)),
    ("amax_empty", lambda: torch.zeros(2, 0).amax(1)),
    ("bmm_2d", lambda: torch.zeros(3, 4).bmm(torch.zeros(2, 4, 5))),
    ("bmm_2d_b", lambda: torch.zeros(2, 3, 4).bmm(torch.zeros(4, 5))),
    ("bmm_batch", lambda: torch.zeros(2, 3, 4).bmm(torch.zeros(3, 4, 5))),
    ("bmm_k", lambda: torch.zeros(2, 3, 4).bmm(torch.zeros(2, 3, 5))),
    ("baddbmm_self", lambda: torch.zeros(3, 6).baddbmm(torch.zeros(2, 3, 4), torch.zeros(2, 4, 5))),
    ("outer_2d", lambda: torch.zeros(3, 2).outer(torch.zeros(2))),
    ("outer_2d_b", lambda: torch.zeros(3).outer(torch.zeros(2, 2))),
]


def floats(t):
    return "[" + ", ".join(repr(float(v)) for v in t.detach().reshape(-1).tolist()) + "]"


print(f"// Printed by tests/ops/gen_shape_reduction_cases.py with torch {torch.__version__}.")
print("const CASES: &[Case] = &[")
for name, shape, op in CASES:
    x = inp(shape)
    y = op(x)
    w = torch.arange(1, y.numel() + 1, dtype=torch.float64).reshape(y.shape) / 8
    (y * w).sum().backward()
    node = type(y.grad_fn).__name__
    view = y._is_view()
    print(f"    Case {{ name: {json.dumps(name)}, shape: &{shape}, node: {json.dumps(node)}, "
          f"view: {str(view).lower()}, shape_out: &{list(y.shape)}, values: &{floats(y)}, "
          f"grad: &{floats(x.grad)} }},")
print("];")
print()
print("const ERRORS: &[(&str, &str)] = &[")
for name, f in ERRORS:
    try:
        f()
        raise SystemExit(f"{name} did not fail")
    except (RuntimeError, IndexError, ValueError) as e:
        msg = str(e).split("\nException raised from")[0]
        print(f"    ({json.dumps(name)}, {json.dumps(msg)}),")
print("];")
