#!/usr/bin/env python3
"""Records small random programs over PyTorch's dtypes (bool, uint8, int32, int64, float16,
bfloat16, float32, float64) from PyTorch, for `tests/corpus/dtypes.rs` (the `corpus` test
target's `dtypes_corpus_matches_pytorch` test). Families:

* `promotion`: every dtype pair, 0-dim tensors and int / float / bool scalars through
  add / sub / mul / div and the six comparisons (the result dtype and values);
* `int_bool`: integer and bool arithmetic, wrapping uint8, remainder / fmod with negative
  operands, bool subtraction and negation (errors);
* `masks`: comparisons whose masks feed `where` / `masked_fill` of float tensors that require
  grad, then `backward()` (values and gradients);
* `casts`: every dtype to every dtype, NaN, inf, out-of-range and negative values included, and
  float64 to half rounding;
* `half`: float16 / bfloat16 element-wise ops, sum, mean, matmul, softmax, with `backward()`;
* `arg`: argmax / argmin over every dim and over all, keepdim, NaN and ties;
* `sequences`: arange / linspace / eye with and without a dtype;
* `random`: `manual_seed` then randn / rand / randint / randperm in float32 and float64;
* `printing`: `repr(t)` of tensors of every dtype (requires_grad and grad_fn suffixes, 0-dim,
  empty, summarised);
* `errors`: requires_grad on integers, bool subtraction / negation, where with a non-bool
  condition, mean / softmax of integers, randint with low >= high, arange with a bad step.

    /tmp/torchenv/bin/python tests/corpus/gen_dtypes.py \
        --seed 20261128 --count 3000 --out tests/corpus/dtypes.jsonl.gz

The output depends only on the seed (and on the torch version, recorded in the header).
"""

import argparse
import collections
import gzip
import json
import math
import random

import numpy as np
import torch

DTYPES = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
NAMES = list(DTYPES)
NAME_OF = {v: k for k, v in DTYPES.items()}
INTS = ["uint8", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
HALVES = ["float16", "bfloat16"]

FAMILY_WEIGHTS = [
    ("promotion", 20),
    ("int_bool", 10),
    ("masks", 12),
    ("casts", 10),
    ("half", 12),
    ("arg", 8),
    ("sequences", 7),
    ("random", 5),
    ("printing", 9),
    ("errors", 7),
]

BINARY = ["add", "sub", "mul", "div"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


# ----- encoding -------------------------------------------------------------------------------

def enc_num(v, dt):
    """One element as JSON: ints and bools exact, floats as the shortest text that reads back
    as the same value of `dt` (float32 through numpy), NaN and infinities as strings."""
    if dt == "bool":
        return bool(v)
    if dt in INTS:
        return int(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dt == "float32":
        return float(str(np.float32(v)))
    return v


def rec(t):
    dt = NAME_OF[t.dtype]
    flat = t.detach().reshape(-1)
    if dt == "bfloat16" or dt == "float16":
        flat = flat.float()
    vals = flat.tolist()
    return {"dt": dt, "s": list(t.shape), "d": [enc_num(v, dt) for v in vals],
            "rg": bool(t.requires_grad)}


def enc_scalar(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


# ----- programs --------------------------------------------------------------------------------

class Stop(Exception):
    pass


class Prog:
    def __init__(self, rng, family):
        self.rng = rng
        self.family = family
        self.vars = []
        self.inputs = []
        self.steps = []

    def input(self, dt, shape, vals=None, rg=False):
        if vals is None:
            vals = values(self.rng, dt, prod(shape))
        t = torch.tensor(vals, dtype=DTYPES[dt]).reshape(shape)
        if rg:
            t.requires_grad_(True)
        r = rec(t)
        r["v"] = len(self.vars)
        self.inputs.append(r)
        self.vars.append(t)
        return len(self.vars) - 1

    def step(self, op, a=(), **attrs):
        """Runs one op in PyTorch and records it; an error ends the program (`Stop`)."""
        st = {"op": op, "a": list(a)}
        st.update({k: enc_scalar(v) for k, v in attrs.items()})
        args = [self.vars[i] for i in a]
        try:
            out = run_op(op, args, attrs)
        except (RuntimeError, TypeError, ValueError, ZeroDivisionError) as e:
            st["err"] = str(e).split("\n")[0]
            self.steps.append(st)
            raise Stop()
        if op == "repr":
            st["str"] = out
            self.steps.append(st)
            return None
        if op == "backward":
            st["gr"] = {str(i): (rec(self.vars[i].grad) if self.vars[i].grad is not None
                                 else None) for i in attrs["wrt"]}
            self.steps.append(st)
            return None
        st["o"] = len(self.vars)
        st["r"] = rec(out)
        self.steps.append(st)
        self.vars.append(out)
        return len(self.vars) - 1

    def to_json(self, pid):
        return {"id": pid, "family": self.family, "inputs": self.inputs, "steps": self.steps}


def prod(s):
    n = 1
    for d in s:
        n *= d
    return n


def scalar_of(v):
    if isinstance(v, str):
        return float(v)
    return v


def run_op(op, args, at):
    if op in BINARY or op in COMPARE or op in ("remainder", "fmod", "matmul"):
        return getattr(torch, op)(args[0], args[1])
    if op.endswith("_s") and op[:-2] in BINARY + COMPARE + ["remainder", "fmod"]:
        return getattr(torch, op[:-2])(args[0], scalar_of(at["sv"]))
    if op == "rsub_s":
        return scalar_of(at["sv"]) - args[0]
    if op == "rdiv_s":
        return scalar_of(at["sv"]) / args[0]
    if op in ("neg", "sum", "exp", "tanh", "sigmoid", "abs", "relu", "any", "all", "mean"):
        return getattr(torch, op)(args[0])
    if op == "softmax":
        return torch.softmax(args[0], at["dim"])
    if op == "where":
        return torch.where(args[0], args[1], args[2])
    if op == "masked_fill":
        return args[0].masked_fill(args[1], scalar_of(at["sv"]))
    if op in ("argmax", "argmin"):
        return getattr(torch, op)(args[0], dim=at["dim"], keepdim=at["keepdim"])
    if op == "to":
        return args[0].to(DTYPES[at["dt"]])
    if op == "reshape":
        return args[0].reshape(at["shape"])
    if op == "arange":
        kw = {} if at["dt"] is None else {"dtype": DTYPES[at["dt"]]}
        return torch.arange(scalar_of(at["start"]), scalar_of(at["end"]),
                            scalar_of(at["step"]), **kw)
    if op == "linspace":
        return torch.linspace(at["start"], at["end"], at["steps"], dtype=DTYPES[at["dt"]])
    if op == "eye":
        if at["m"] is None:
            return torch.eye(at["n"], dtype=DTYPES[at["dt"]])
        return torch.eye(at["n"], at["m"], dtype=DTYPES[at["dt"]])
    if op == "seed":
        torch.manual_seed(at["seed"])
        return torch.zeros(())
    if op in ("randn", "rand"):
        return getattr(torch, op)(at["shape"], dtype=DTYPES[at["dt"]])
    if op == "randint":
        return torch.randint(at["low"], at["high"], at["shape"])
    if op == "randperm":
        return torch.randperm(at["n"])
    if op == "repr":
        return repr(args[0])
    if op == "rg":
        return args[0].requires_grad_(True)
    if op == "const":
        return torch.tensor([scalar_of(v) for v in at["d"]],
                            dtype=DTYPES[at["dt"]]).reshape(at["s"])
    if op == "backward":
        c = torch.tensor([scalar_of(v) for v in at["c"]], dtype=args[0].dtype)
        (args[0] * c.reshape(args[0].shape)).sum().backward()
        return None
    raise ValueError(f"unknown op {op}")


# ----- values ----------------------------------------------------------------------------------

def values(rng, dt, n, big=False):
    """`n` values exactly representable in `dt`."""
    if dt == "bool":
        return [rng.random() < 0.5 for _ in range(n)]
    if dt == "uint8":
        return [rng.randrange(256) if big or rng.random() < 0.3 else rng.randrange(12)
                for _ in range(n)]
    if dt in ("int32", "int64"):
        out = []
        for _ in range(n):
            r = rng.random()
            if big and r < 0.3:
                out.append(rng.choice([2049, 4097, -3001, 16777217, 100000, 70000, 300, -300,
                                       2 ** 31 - 1 if dt == "int32" else 2 ** 40 + 1]))
            else:
                out.append(rng.randint(-9, 9))
        return out
    if dt in HALVES:
        return [rng.randint(-40, 40) / 8 for _ in range(n)]
    return [round(rng.uniform(-3, 3), 3) for _ in range(n)]


def shape(rng, max_rank=2, max_dim=4):
    r = rng.randint(0, max_rank)
    return [rng.randint(1, max_dim) for _ in range(r)]


def bshape(rng, s):
    """A shape that broadcasts with `s` (itself, a suffix, or with some dims 1)."""
    c = rng.random()
    if c < 0.4:
        return list(s)
    if c < 0.6:
        return list(s[rng.randint(0, len(s)):])
    return [1 if rng.random() < 0.4 else d for d in s]


def scalar_value(rng, kind, dt=None):
    if kind == "b":
        return rng.random() < 0.5
    if kind == "i":
        if dt == "uint8" and rng.random() < 0.5:
            return rng.randint(0, 255)
        return rng.randint(-5, 5)
    return rng.choice([0.5, -1.25, 2.5, 0.1, 3.0, -0.3, 1e-3, 7.75, 0.7])


# ----- families --------------------------------------------------------------------------------

def fam_promotion(p):
    rng = p.rng
    da = rng.choice(NAMES)
    s = shape(rng, 2, 3)
    a = p.input(da, s, values(rng, da, prod(s), big=rng.random() < 0.3))
    op = rng.choice(BINARY + COMPARE)
    c = rng.random()
    if c < 0.35:
        kind = rng.choice("ifb")
        sv = scalar_value(rng, kind, da)
        if op in ("sub", "div") and rng.random() < 0.3:
            p.step("r" + op + "_s", [a], sv=sv)
        else:
            p.step(op + "_s", [a], sv=sv)
    else:
        db = rng.choice(NAMES)
        sb = [] if c < 0.6 else bshape(rng, s)
        b = p.input(db, sb, values(rng, db, prod(sb), big=rng.random() < 0.3))
        if rng.random() < 0.5:
            a, b = b, a
        p.step(op, [a, b])


def fam_int_bool(p):
    rng = p.rng
    dt = rng.choice(INTS + ["bool"])
    s = shape(rng, 2, 4) or [3]
    a = p.input(dt, s, values(rng, dt, prod(s), big=dt == "uint8"))
    for _ in range(rng.randint(1, 3)):
        c = rng.random()
        cur = p.vars[-1]
        cdt = NAME_OF[cur.dtype]
        if cdt not in INTS + ["bool"]:
            break
        if c < 0.45:
            op = rng.choice(["add", "sub", "mul", "div", "remainder", "fmod"])
            vals = values(rng, cdt, cur.numel(), big=cdt == "uint8")
            if op in ("remainder", "fmod") and cdt != "bool":
                vals = [v if v != 0 else rng.choice([3, -3 if cdt != "uint8" else 7])
                        for v in vals]
            b = p.input(cdt, list(cur.shape), vals)
            p.step(op, [len(p.vars) - 2, b])
        elif c < 0.75:
            op = rng.choice(["add_s", "sub_s", "mul_s", "div_s", "remainder_s", "fmod_s",
                             "rsub_s"])
            sv = rng.choice([2, -3, 5, 7, 1, True]) if cdt != "uint8" else rng.choice(
                [2, 100, 200, 7, 3])
            if op in ("remainder_s", "fmod_s") and sv is True:
                sv = 3
            p.step(op, [len(p.vars) - 1], sv=sv)
        elif c < 0.85:
            p.step("neg", [len(p.vars) - 1])
        elif c < 0.93:
            p.step(rng.choice(["sum", "abs"]), [len(p.vars) - 1])
        else:
            p.step(rng.choice(["any", "all"]), [len(p.vars) - 1])


def fam_masks(p):
    rng = p.rng
    fdt = rng.choice(["float32", "float64"])
    s = shape(rng, 2, 4) or [4]
    x = p.input(fdt, s, rg=True)
    # The mask: a comparison of x (or another tensor) with a scalar or a tensor.
    c = rng.random()
    if c < 0.5:
        thr = rng.choice([0.0, 0.5, -1.0]) if rng.random() < 0.7 else rng.choice([0, 1, -1])
        m = p.step(rng.choice(COMPARE) + "_s", [x], sv=thr)
    elif c < 0.8:
        o = p.input(rng.choice(["float32", "float64", "int64"]), bshape(rng, s))
        m = p.step(rng.choice(COMPARE), [x, o])
    else:
        m = p.input("bool", bshape(rng, s))
    c = rng.random()
    if c < 0.5:
        ydt = fdt if rng.random() < 0.7 else rng.choice(["float32", "float64"])
        y = p.input(ydt, bshape(rng, s), rg=rng.random() < 0.7)
        if rng.random() < 0.5:
            out = p.step("where", [m, x, y])
        else:
            out = p.step("where", [m, y, x])
    else:
        sv = rng.choice([0.0, -1e9, 2.5, 1, float("-inf")]) if rng.random() < 0.9 else 3
        h = x
        if rng.random() < 0.4:
            h = p.step(rng.choice(["exp", "tanh", "sigmoid"]), [x])
        out = p.step("masked_fill", [h, m], sv=sv)
        if sv == float("-inf") or sv == -1e9:
            if len(s) > 0 and rng.random() < 0.7:
                out = p.step("softmax", [out], dim=len(s) - 1)
    if rng.random() < 0.4:
        k = p.input(fdt, list(p.vars[out].shape))
        out = p.step("mul", [out, k])
    ov = p.vars[out]
    if not ov.requires_grad:
        return
    c = [enc_num(v, NAME_OF[ov.dtype]) for v in
         torch.tensor(values(rng, "float64", ov.numel())).to(ov.dtype).tolist()]
    wrt = [i for i, t in enumerate(p.vars) if t.is_leaf and t.requires_grad]
    p.step("backward", [out], c=c, wrt=wrt)


SPECIAL = [float("nan"), float("inf"), float("-inf"), -1.7, -0.5, 0.5, 2.5, 255.0, 256.0, 300.0,
           -300.0, 65504.0, 65520.0, 1e6, 3e9, -3e9, 1e20, 1e-8, 6e-8, -0.0, 0.1,
           1.0009765625, 1.00048828125, 2049.0, 4097.0, 33.3, 127.5, -128.5]


def fam_casts(p):
    rng = p.rng
    src = rng.choice(NAMES)
    n = rng.randint(1, 9)
    if src in ("float32", "float64") or (src in HALVES and rng.random() < 0.7):
        vals = []
        for _ in range(n):
            r = rng.random()
            if r < 0.5:
                vals.append(rng.choice(SPECIAL))
            elif r < 0.8:
                vals.append(rng.uniform(-1000, 1000))
            else:
                vals.append(rng.uniform(-2, 2))
        if src in HALVES:
            # The input itself: the half value PyTorch rounds to (through float32).
            vals = torch.tensor(vals, dtype=torch.float64).to(DTYPES[src]).float().tolist()
    else:
        vals = values(rng, src, n, big=True)
    x = p.input(src, [n], vals)
    dst = rng.choice(NAMES)
    y = p.step("to", [x], dt=dst)
    if rng.random() < 0.3:
        p.step("to", [y], dt=rng.choice(NAMES))


def half_vals(rng, dt, n):
    if rng.random() < 0.5:
        return values(rng, dt, n)
    # Values whose products and sums are inexact in halves.
    return torch.tensor([rng.uniform(-3, 3) for _ in range(n)]).to(DTYPES[dt]).float().tolist()


def fam_half(p):
    rng = p.rng
    dt = rng.choice(HALVES)
    c = rng.random()
    s = shape(rng, 2, 4) or [3]
    x = p.input(dt, s, half_vals(rng, dt, prod(s)), rg=True)
    cur = x
    if c < 0.25:
        k = rng.randint(1, 4)
        w = p.input(dt, [s[-1], k], half_vals(rng, dt, s[-1] * k), rg=rng.random() < 0.7)
        cur = p.step("matmul", [cur, w])
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        cs = list(p.vars[cur].shape)
        if r < 0.35:
            op = rng.choice(BINARY)
            bs = bshape(rng, cs)
            b = p.input(dt, bs, half_vals(rng, dt, prod(bs)))
            if op == "div":
                bt = p.vars[b]
                bt.copy_(torch.where(bt.abs() < 0.25, torch.ones_like(bt), bt))
                p.inputs[-1] = dict(rec(bt), v=b)
            cur = p.step(op, [cur, b])
        elif r < 0.55:
            cur = p.step(rng.choice(["exp", "tanh", "sigmoid", "neg", "abs", "relu"]), [cur])
        elif r < 0.7:
            cur = p.step(rng.choice(BINARY) + "_s", [cur], sv=rng.choice([0.1, 3, 0.3, 1.5]))
        elif r < 0.85 and len(cs) > 0:
            cur = p.step("softmax", [cur], dim=rng.randrange(len(cs)))
        else:
            cur = p.step(rng.choice(["sum", "mean"]), [cur])
    ov = p.vars[cur]
    c = [enc_num(v, dt) for v in torch.tensor(values(rng, dt, ov.numel()),
                                              dtype=DTYPES[dt]).float().tolist()]
    wrt = [i for i, t in enumerate(p.vars) if t.is_leaf and t.requires_grad]
    p.step("backward", [cur], c=c, wrt=wrt)


def fam_arg(p):
    rng = p.rng
    dt = rng.choice(NAMES[1:] + ["float32", "float64"])
    s = shape(rng, 3, 4) or []
    n = prod(s)
    if dt in FLOATS:
        vals = [rng.choice([0.0, 1.0, -1.0, 2.0]) if rng.random() < 0.5 else
                round(rng.uniform(-3, 3), 1) for _ in range(n)]
        if rng.random() < 0.3 and n > 0:
            for _ in range(rng.randint(1, 2)):
                vals[rng.randrange(n)] = rng.choice([float("nan"), float("inf"),
                                                     float("-inf")])
    else:
        vals = [rng.randint(0, 3) for _ in range(n)]
    x = p.input(dt, s, vals)
    for _ in range(rng.randint(1, 2)):
        dim = None if len(s) == 0 or rng.random() < 0.3 else rng.randrange(len(s))
        p.step(rng.choice(["argmax", "argmin"]), [x], dim=dim, keepdim=rng.random() < 0.4)


def fam_sequences(p):
    rng = p.rng
    c = rng.random()
    if c < 0.45:
        if rng.random() < 0.5:
            start, end = rng.randint(-5, 5), rng.randint(-5, 15)
            step = rng.choice([1, 2, 3, -1, -2]) if end >= start else rng.choice([-1, -2, -3])
            if end == start:
                step = 1
        else:
            start = rng.choice([0, 0.5, -1.25, 1, 0.1])
            end = rng.choice([3, 2.5, 1.0, 4.3, 0.95])
            step = rng.choice([0.5, 0.25, 1, 0.3, 0.1])
            if end < start:
                step = -step
        dt = None if rng.random() < 0.5 else rng.choice(NAMES[1:])
        p.step("arange", [], start=start, end=end, step=step, dt=dt)
    elif c < 0.8:
        dt = rng.choice(NAMES[1:])
        if dt in INTS:
            start, end = rng.randint(-5, 5), rng.randint(0, 20)
        else:
            start, end = rng.choice([0.0, -1.0, 0.1, 2.0]), rng.choice([1.0, 10.0, -3.5, 0.3])
        p.step("linspace", [], start=start, end=end, steps=rng.randint(1, 9), dt=dt)
    else:
        n = rng.randint(1, 4)
        m = None if rng.random() < 0.5 else rng.randint(1, 5)
        p.step("eye", [], n=n, m=m, dt=rng.choice(NAMES))


def fam_random(p):
    rng = p.rng
    p.step("seed", [], seed=rng.randrange(2 ** 31))
    for _ in range(rng.randint(1, 3)):
        c = rng.random()
        s = shape(rng, 2, 5) or [3]
        if c < 0.35:
            p.step("randn", [], shape=s, dt=rng.choice(["float32", "float64"]))
        elif c < 0.65:
            p.step("rand", [], shape=s, dt=rng.choice(["float32", "float64"]))
        elif c < 0.85:
            low = rng.randint(-10, 5)
            p.step("randint", [], low=low, high=low + rng.choice([1, 2, 10, 1000]), shape=s)
        else:
            p.step("randperm", [], n=rng.randint(1, 20))


def print_vals(rng, dt, n):
    if dt in ("float32", "float64") or dt in HALVES:
        c = rng.random()
        if c < 0.4:
            v = values(rng, dt, n)
        elif c < 0.6:
            v = [float(rng.randint(-5, 5)) for _ in range(n)]
        elif c < 0.8:
            v = [rng.choice([1e-5, 1e8, 123456.0, 0.001, 3.0, -2.5e-3]) for _ in range(n)]
        else:
            v = [rng.uniform(-100, 100) for _ in range(n)]
            if rng.random() < 0.3 and n:
                v[rng.randrange(n)] = rng.choice([float("nan"), float("inf"), float("-inf")])
        return torch.tensor(v, dtype=torch.float64).to(DTYPES[dt]).double().tolist()
    return values(rng, dt, n, big=rng.random() < 0.3)


def fam_printing(p):
    rng = p.rng
    dt = rng.choice(NAMES)
    c = rng.random()
    if c < 0.12:
        # Summarised: over 1000 elements.
        n = rng.choice([1001, 1200, 2000])
        ar = p.step("arange", [], start=0, end=n, step=1, dt=None)
        sh = rng.choice([[n], [n // 4 if n % 4 == 0 else 1, 4 if n % 4 == 0 else n]])
        r = p.step("reshape", [ar], shape=sh)
        if dt in ("float32", "float64") or dt in HALVES:
            r = p.step("mul_s", [r], sv=rng.choice([0.5, 0.001, 3]))
        t = p.step("to", [r], dt=dt)
        p.step("repr", [t])
        return
    if c < 0.2:
        s = rng.choice([[0], [2, 0], [0, 3]])
    elif c < 0.35:
        s = []
    else:
        s = shape(rng, 3, 4) or [2]
    x = p.input(dt, s, print_vals(rng, dt, prod(s)),
                rg=dt in FLOATS and rng.random() < 0.4)
    t = x
    if dt in FLOATS and p.vars[x].requires_grad and rng.random() < 0.6:
        t = p.step(rng.choice(["mul_s", "add_s"]), [x], sv=2)
        if rng.random() < 0.3:
            t = p.step("sum", [t])
    elif rng.random() < 0.15 and dt in FLOATS:
        t = p.step("to", [x], dt=rng.choice(FLOATS))
    p.step("repr", [t])


def fam_errors(p):
    rng = p.rng
    c = rng.randrange(8)
    if c == 0:
        x = p.input(rng.choice(INTS + ["bool"]), shape(rng, 2, 3))
        p.step("rg", [x])
    elif c == 1:
        s = shape(rng, 2, 3)
        a = p.input("bool", s)
        b = p.input(rng.choice(NAMES) if rng.random() < 0.5 else "bool", bshape(rng, s))
        if rng.random() < 0.5:
            a, b = b, a
        p.step("sub", [a, b])
    elif c == 2:
        x = p.input("bool", shape(rng, 2, 3))
        if rng.random() < 0.5:
            p.step("neg", [x])
        else:
            p.step(rng.choice(["sub_s", "rsub_s"]), [x], sv=rng.choice([True, 1, 0.5]))
    elif c == 3:
        s = shape(rng, 2, 3)
        cond = p.input(rng.choice(["float32", "int64", "float64"]), s)
        x = p.input("float32", s)
        y = p.input("float32", s)
        p.step("where", [cond, x, y])
    elif c == 4:
        x = p.input(rng.choice(INTS + ["bool"]), shape(rng, 2, 3) or [2])
        p.step("mean", [x])
    elif c == 5:
        s = shape(rng, 2, 3) or [2]
        x = p.input(rng.choice(INTS), s)
        p.step("softmax", [x], dim=rng.randrange(len(s)))
    elif c == 6:
        low = rng.randint(-3, 5)
        p.step("randint", [], low=low, high=low - rng.randint(0, 3), shape=[2])
    else:
        start, end = rng.randint(0, 5), rng.randint(-5, 10)
        step = 0 if rng.random() < 0.4 else (1 if end < start else -1)
        if step == 1 and end == start:
            step = 0
        if step == -1 and end == start:
            step = 0
        p.step("arange", [], start=start, end=end, step=step, dt=None)


FAMILIES = {name: globals()["fam_" + name] for name, _ in FAMILY_WEIGHTS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--out", default="tests/corpus/dtypes.jsonl.gz")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    total = sum(w for _, w in FAMILY_WEIGHTS)
    plan = []
    for name, w in FAMILY_WEIGHTS:
        plan += [name] * (args.count * w // total)
    plan += ["promotion"] * (args.count - len(plan))
    rng.shuffle(plan)
    lines = [json.dumps({"header": {
        "generator": "gen_dtypes.py", "seed": args.seed, "count": args.count,
        "torch": torch.__version__, "families": dict(FAMILY_WEIGHTS)}})]
    stats = collections.Counter()
    errors = collections.Counter()
    for pid, fam in enumerate(plan):
        p = Prog(random.Random(rng.randrange(2 ** 62)), fam)
        try:
            FAMILIES[fam](p)
        except Stop:
            errors[fam] += 1
        stats[fam] += 1
        lines.append(json.dumps(p.to_json(pid), separators=(",", ":")))
    # No name and no time in the gzip header: the same seed gives the same bytes.
    with open(args.out, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode())
    for fam, n in stats.items():
        print(f"{fam:10} {n:5} programs, {errors[fam]:4} end in an error")


if __name__ == "__main__":
    main()
