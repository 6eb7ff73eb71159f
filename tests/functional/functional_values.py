"""Records the PyTorch 2.15 values that tests/functional/values.rs replays: run
`python tests/functional/functional_values.py` (from the repository root, with PyTorch installed)
to rewrite tests/functional/data/functional.json.

Each case is a function of a few f64 inputs, in two forms: `vector` (outputs of any shape, for
vjp, jvp and jacobian) and `scalar` (one element, for hessian, hvp and vhp), with its inputs and
the vectors `v_out` (one per output of `vector`) and `v_in` (one per input), all recorded. For
each of torch.autograd.functional's six functions it records the results; then, with
`create_graph=True` and inputs that require grad, the gradient of the sum of every result
tensor with respect to the inputs (zeros for an input it does not depend on). The `errors`
section holds PyTorch's messages for the misuses tests/functional/errors.rs replays."""
import json
import os

import torch
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

torch.set_default_dtype(torch.float64)
GEN = torch.Generator().manual_seed(37)


def randn(*shape):
    return torch.randn(*shape, generator=GEN)


def enc(t):
    return {"shape": list(t.shape), "values": t.detach().flatten().tolist()}


def tup(x):
    return x if isinstance(x, tuple) else (x,)


# The data of the MLP case: not an input.
MLP_X = randn(5, 3)


def mlp(w1, b1, w2):
    return torch.tanh(MLP_X @ w1 + b1) @ w2


CASES_DEF = {
    # exp / sum of one input
    "exp": dict(
        inputs=[randn(2, 3)],
        vector=lambda x: x.exp(),
        scalar=lambda x: x.exp().sum(),
    ),
    # a small MLP with tanh; the scalar form is its mean squared output
    "mlp": dict(
        inputs=[randn(3, 4) * 0.5, randn(4) * 0.1, randn(4, 2) * 0.5],
        vector=mlp,
        scalar=lambda w1, b1, w2: (mlp(w1, b1, w2) ** 2).mean(),
    ),
    # two inputs, two outputs
    "two_in_two_out": dict(
        inputs=[randn(2, 2), randn(2)],
        vector=lambda a, b: (a * b.sin(), a.exp() @ b),
        scalar=lambda a, b: (a * b.sin()).sum() * (a.exp() @ b).sum(),
    ),
    # the second input is unused
    "unused_input": dict(
        inputs=[randn(3), randn(2)],
        vector=lambda a, b: a ** 3,
        scalar=lambda a, b: (a ** 3).sum(),
    ),
}


def grad_of_sum(results, inputs):
    """The gradient of the sum of every tensor in `results` w.r.t. `inputs` (zeros if unused)."""
    total = sum(r.sum() for r in results)
    if not total.requires_grad:
        return [enc(torch.zeros_like(i)) for i in inputs]
    gs = torch.autograd.grad(total, inputs, allow_unused=True)
    return [enc(g if g is not None else torch.zeros_like(i)) for g, i in zip(gs, inputs)]


def flat(nested):
    return [t for row in nested for t in tup(row)]


def record(case):
    inputs = tuple(case["inputs"])
    vector, scalar = case["vector"], case["scalar"]
    outs = tup(vector(*inputs))
    v_out = tuple(randn(*o.shape) for o in outs)
    v_in = tuple(randn(*i.shape) for i in inputs)
    out = {"inputs": [enc(i) for i in inputs], "v_out": [enc(v) for v in v_out],
           "v_in": [enc(v) for v in v_in]}
    o, r = vjp(vector, inputs, v_out)
    out["vjp"] = {"outputs": [enc(t) for t in tup(o)], "result": [enc(t) for t in r]}
    o, r = jvp(vector, inputs, v_in)
    out["jvp"] = {"outputs": [enc(t) for t in tup(o)], "result": [enc(t) for t in tup(r)]}
    jac = jacobian(vector, inputs)
    jac = jac if isinstance(jac[0], tuple) else (jac,)
    out["jacobian"] = [[enc(t) for t in row] for row in jac]
    out["hessian"] = [[enc(t) for t in row] for row in hessian(scalar, inputs)]
    o, r = hvp(scalar, inputs, v_in)
    out["hvp"] = {"outputs": [enc(o)], "result": [enc(t) for t in r]}
    o, r = vhp(scalar, inputs, v_in)
    out["vhp"] = {"outputs": [enc(o)], "result": [enc(t) for t in r]}

    # create_graph=True on inputs that require grad: the results depend on them
    leaves = tuple(i.clone().requires_grad_(True) for i in inputs)
    cg = {}
    cg["vjp"] = grad_of_sum(vjp(vector, leaves, v_out, create_graph=True)[1], leaves)
    cg["jvp"] = grad_of_sum(tup(jvp(vector, leaves, v_in, create_graph=True)[1]), leaves)
    jac = jacobian(vector, leaves, create_graph=True)
    cg["jacobian"] = grad_of_sum(flat(jac if isinstance(jac[0], tuple) else (jac,)), leaves)
    cg["hessian"] = grad_of_sum(flat(hessian(scalar, leaves, create_graph=True)), leaves)
    cg["hvp"] = grad_of_sum(hvp(scalar, leaves, v_in, create_graph=True)[1], leaves)
    cg["vhp"] = grad_of_sum(vhp(scalar, leaves, v_in, create_graph=True)[1], leaves)
    out["create_graph_grads"] = cg
    return out


x = torch.tensor([1.0, 2.0, 3.0])
y = torch.tensor([0.5, -1.0])
# a tensor from outside the function that requires grad: an output, or a gradient, can require
# grad without depending on the inputs
w = torch.tensor([2.0, -1.0, 0.5], requires_grad=True)


def with_constant_grad_hook(a):
    """2a, with a hook that replaces a's gradient by ones: a gradient that ignores grad_outputs"""
    a.register_hook(lambda g: torch.ones_like(g))
    return a * 2


ERROR_CALLS = {
    "vjp_v_none_nonscalar": lambda: vjp(lambda a: a.exp(), x),
    "vjp_v_len_single": lambda: vjp(lambda a: a.exp(), x, (x, x)),
    "vjp_v_len_tuple": lambda: vjp(lambda a: (a.exp(),), (x,), (x, x)),
    "vjp_v_size_single": lambda: vjp(lambda a: a.exp(), x, y),
    "vjp_v_size_tuple": lambda: vjp(lambda a, b: (a.exp(), b * 2), (x, y), (x, x)),
    "vjp_strict_output_no_grad": lambda: vjp(lambda a: torch.ones(1), x, strict=True),
    "vjp_strict_unused": lambda: vjp(lambda a, b: a.exp().sum(), (x, y), strict=True),
    "vjp_strict_create_graph_linear": lambda: vjp(
        lambda a: a.sum(), x, strict=True, create_graph=True),
    "jvp_v_none_nonscalar": lambda: jvp(lambda a: a * 2, x),
    "jvp_v_len_single": lambda: jvp(lambda a: a * 2, x, (x, x)),
    "jvp_v_size_tuple": lambda: jvp(lambda a, b: a * 2, (x, y), (x, x)),
    "jvp_strict_unused": lambda: jvp(lambda a, b: a * 2, (x, y), (x, y), strict=True),
    "jvp_strict_create_graph_linear": lambda: jvp(
        lambda a: a * 2, x, x, strict=True, create_graph=True),
    "jvp_strict_output_no_grad": lambda: jvp(lambda a: torch.ones(1), x, x, strict=True),
    "jvp_strict_output_independent": lambda: jvp(lambda a: (a * 2, w * 3), x, x, strict=True),
    "jvp_strict_gradient_constant": lambda: jvp(with_constant_grad_hook, x, x, strict=True),
    "jacobian_strict_unused": lambda: jacobian(lambda a, b: a * 2, (x, y), strict=True),
    "jacobian_strict_vectorize": lambda: jacobian(
        lambda a, b: a * a, (x, y), strict=True, vectorize=True),
    "jacobian_strict_create_graph_linear": lambda: jacobian(
        lambda a: a * 2, x, strict=True, create_graph=True),
    "jacobian_strict_output_no_grad": lambda: jacobian(lambda a: torch.ones(2), x, strict=True),
    "jacobian_empty_output": lambda: jacobian(lambda a: a[:0], x),
    "jacobian_empty_output_vectorized": lambda: jacobian(lambda a: a[:0], x, vectorize=True),
    "jacobian_forward_create_graph": lambda: jacobian(
        lambda a: a, x, create_graph=True, strategy="forward-mode"),
    "jacobian_forward_strict": lambda: jacobian(lambda a: a, x, strict=True,
                                                strategy="forward-mode"),
    "jacobian_forward_not_vectorized": lambda: jacobian(lambda a: a, x, strategy="forward-mode"),
    "hessian_not_single_element": lambda: hessian(lambda a: a * a, x),
    "hessian_tuple": lambda: hessian(lambda a: (a.sum(),), x),
    "hessian_strict_linear": lambda: hessian(lambda a: a.sum(), x, strict=True),
    "hessian_strict_unused": lambda: hessian(lambda a, b: (a * a).sum(), (x, y), strict=True),
    "hessian_strict_output_no_grad": lambda: hessian(lambda a: torch.ones(()), x, strict=True),
    "hessian_strict_create_graph_quadratic": lambda: hessian(
        lambda a: (a * a).sum(), x, strict=True, create_graph=True),
    "hvp_not_single_element": lambda: hvp(lambda a: a * a, x, x),
    "hvp_tuple": lambda: hvp(lambda a: (a.sum(),), x, x),
    "hvp_v_none": lambda: hvp(lambda a: (a * a).sum(), x),
    "hvp_strict_linear": lambda: hvp(lambda a: a.sum(), x, x, strict=True),
    "hvp_strict_unused": lambda: hvp(lambda a, b: (a * a).sum() + b.sum(), (x, y), (x, y),
                                     strict=True),
    "hvp_strict_create_graph_quadratic": lambda: hvp(
        lambda a: (a * a).sum(), x, x, strict=True, create_graph=True),
    "vhp_not_single_element": lambda: vhp(lambda a: a * a, x, x),
    "vhp_tuple": lambda: vhp(lambda a: (a.sum(),), x, x),
    "vhp_v_none": lambda: vhp(lambda a: (a * a).sum(), x),
    "vhp_v_size_single": lambda: vhp(lambda a: (a * a).sum(), x, y),
    "vhp_v_len_tuple": lambda: vhp(lambda a, b: (a * a).sum(), (x, y), (x,)),
    "vhp_strict_create_graph_quadratic": lambda: vhp(
        lambda a: (a * a).sum(), x, x, strict=True, create_graph=True),
    "vhp_strict_jacobian_independent": lambda: vhp(lambda a: (a * w).sum(), x, x, strict=True),
    "hvp_strict_hessian_independent": lambda: hvp(lambda a: (a * w).sum(), x, x, strict=True),
    "vjp_integer_input": lambda: vjp(lambda a: a.sum(), torch.tensor([1, 2])),
    "vhp_strict_output_no_grad": lambda: vhp(lambda a: torch.ones(()), x, x, strict=True),
}


def error_of(call):
    try:
        call()
    except (RuntimeError, NotImplementedError, IndexError) as e:
        return str(e)
    raise AssertionError(f"no error from {call}")


if __name__ == "__main__":
    data = {
        "torch": torch.__version__,
        "mlp_x": enc(MLP_X),
        "cases": {name: record(case) for name, case in CASES_DEF.items()},
        "errors": {name: error_of(call) for name, call in ERROR_CALLS.items()},
    }
    path = os.path.join(os.path.dirname(__file__), "data", "functional.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
