#!/usr/bin/env python3
"""Records the derivatives of small random functions from PyTorch, for `tests/corpus/func.rs`:
`torch.func` (`jvp`, `vjp`, `jacrev`, `jacfwd`, `hessian`), `torch.autograd.functional`
(`vjp`, `jvp`, `jacobian`, `hessian`, `hvp`, `vhp`, with `create_graph`, `strict`, `vectorize`
and `strategy` variations, PyTorch's errors included) and `torch.autograd.forward_ad` dual
tensors used directly (the tangent of every variable after every step, views and in-place ops
included).

A function is a program of the other corpora's op language: the views corpus's and the ops
corpus's families (`gen_views_inplace.py`, `gen_ops.py`) build it, running it eagerly to pick
valid ops, and stop where they would end with a loss and a backward pass. The function's inputs
are the program's inputs; its outputs one to two of its variables or, for a scalar function,
a weighted sum of some of them (the other corpora's `loss` step). Each transform then calls
the function, which this generator runs by interpreting the recorded steps (`interp`, checked
against the values the builder recorded).

    /tmp/torchenv/bin/python tests/corpus/gen_func.py \
        --seed 20270415 --count 1500 --out tests/corpus/func.jsonl.gz
"""

import argparse
import collections
import contextlib
import gzip
import json
import os
import random
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_ops as go  # noqa: E402
import gen_views_inplace as gv  # noqa: E402
from gen_views_inplace import Reject, Stop, enc, prod  # noqa: E402

import torch  # noqa: E402
import torch.autograd.forward_ad as fwAD  # noqa: E402
import torch.autograd.functional as AF  # noqa: E402
import torch.func as TF  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_default_dtype(torch.float64)
warnings.filterwarnings("ignore")

# The families whose builders make the functions, and their weights. Left out, with why:
# * `numerics` (ops corpus): logits scaled by up to 500 make second derivatives carry rounding
#   past the 1e-9 tolerance on both sides (the ops corpus keeps that family first-order too);
# * `casts`: float32 parts are not comparable at float64's tolerance;
# * `accumulate`: its programs are about `backward()` called twice, not a function;
# * `nn_errors`: the same `nn::functional` errors as the ops corpus (a function that fails fails
#   the same way under every transform; `errors` keeps a few such functions).
FAMILY_WEIGHTS = [
    # the views corpus's: views and in-place ops on non-leaf intermediates
    ("base_inplace", 9),
    ("view_inplace", 10),
    ("view_chain", 8),
    ("multi_output", 6),
    ("no_grad", 6),
    ("detach_alias", 6),
    ("overlap", 4),
    ("version", 6),
    ("double_backward", 6),
    ("random", 6),
    # in-place ops on the function's inputs (leaves): refused by reverse mode, where the
    # inputs are leaves that require grad, accepted by forward mode
    ("leaf", 3),
    # the ops corpus's
    ("kinks", 10),
    ("reduce", 8),
    ("matmul", 6),
    ("index", 6),
    ("broadcast", 6),
    ("nn", 10),
    ("empty", 3),
    ("modules", 3),
    ("errors", 2),
]
BUILDERS = dict(gv.FAMILIES)
BUILDERS.update(go.FAMILIES)

# Sizes: the Jacobians and Hessians are recorded in full.
MAX_IN = 16  # elements over all inputs
MAX_OUT = 24  # elements over all outputs

# Ops that PyTorch runs as one kernel whose backward kernel takes the input: PyTorch records
# that backward with the input as an operand, so a gradient made with `create_graph` requires
# grad even where it does not depend on the input; ours, composed of differentiable ops,
# requires grad only where it does (values and second derivatives agree: see the ops corpus's
# README). A function holding one gets no `create_graph` call (the results' `requires_grad`
# flags differ), and no `strict` call of a second-order API (which checks those flags).
FUSED_BACKWARD = {"max_pool2d", "avg_pool2d", "nll_loss", "layer_norm", "conv2d"}
# Likewise, ops whose second derivative is zero by construction, where the two sides disagree on
# whether that zero requires grad: PyTorch's `clamp_backward` takes the input (its mask), so a
# gradient through clamp made with `create_graph` requires grad; its `leaky_relu_backward`'s
# derivative with respect to the input is `zeros_like(grad)`, which does not, where ours records
# the mask's product. Values agree; the flags (and what `strict` concludes from them) differ.
FLAG_DIFFERS = FUSED_BACKWARD | {"clamp", "leaky_relu"}
INPLACE = {"add_", "sub_", "mul_", "div_", "fill_", "zero_"}

ERRORS = (RuntimeError, ValueError, IndexError)


class Done(Exception):
    """The builder reached its end: the function is complete."""


class FuncProg(go.OpsProg):
    def end(self, mode=None, must=(), avoid=()):
        raise Done()

    def pick_shape(self, min_nd=0):
        for _ in range(20):
            s = super().pick_shape(min_nd)
            if prod(s) <= 8:
                return s
        return s


# ----- the function: the recorded steps, interpreted ---------------------------------------------

def pair(v):
    return list(v)


def nn_op(op, st, xs):
    """A `torch.nn.functional` step of the ops corpus, from its recorded attributes."""
    x = xs[0]
    if op == "gelu":
        return F.gelu(x, approximate=st["approximate"])
    if op == "leaky_relu":
        return F.leaky_relu(x, st["slope"])
    if op == "mse_loss":
        return F.mse_loss(x, xs[1], reduction=st["reduction"])
    if op in ("cross_entropy", "nll_loss"):
        kw = {"reduction": st.get("reduction", "mean")}
        if st.get("weight") is not None:
            kw["weight"] = torch.tensor(st["weight"])
        if st.get("ignore_index") is not None:
            kw["ignore_index"] = st["ignore_index"]
        t = torch.tensor(st["targets"])
        if op == "cross_entropy":
            if st.get("label_smoothing") is not None:
                kw["label_smoothing"] = st["label_smoothing"]
            return F.cross_entropy(x, t, **kw)
        return F.nll_loss(x, t, **kw)
    if op == "bce_with_logits":
        shape = st.get("ts", list(x.shape))
        kw = {"reduction": st["reduction"]}
        if st.get("weight") is not None:
            kw["weight"] = torch.tensor(st["weight"]).reshape(x.shape)
        if st.get("pos_weight") is not None:
            kw["pos_weight"] = torch.tensor(st["pos_weight"])
        return F.binary_cross_entropy_with_logits(x, torch.tensor(st["target"]).reshape(shape),
                                                  **kw)
    if op == "layer_norm":
        w = xs[1] if len(xs) == 3 else None
        b = xs[2] if len(xs) == 3 else None
        return F.layer_norm(x, st["shape"], w, b, st["eps"])
    if op == "max_pool2d":
        return F.max_pool2d(x, st["k"], st["stride"], st["padding"], st["dilation"],
                            ceil_mode=st["ceil"])
    if op == "avg_pool2d":
        return F.avg_pool2d(x, st["k"], st["stride"], st["padding"], ceil_mode=st["ceil"],
                            count_include_pad=st["count_include_pad"],
                            divisor_override=st["divisor"])
    if op == "linear":
        return F.linear(x, xs[1], xs[2] if len(xs) == 3 else None)
    if op == "embedding":
        idx = torch.tensor(st["indices"], dtype=torch.long).reshape(st["shape"])
        return F.embedding(idx, x, padding_idx=st["padding"])
    if op == "conv2d":
        return F.conv2d(x, xs[1], xs[2] if len(xs) == 3 else None, st["stride"], st["padding"],
                        st["dilation"], st["groups"])
    raise AssertionError(op)


NN_OPS = {"gelu", "leaky_relu", "mse_loss", "cross_entropy", "nll_loss", "bce_with_logits",
          "layer_norm", "max_pool2d", "avg_pool2d", "linear", "embedding", "conv2d"}


def interp(steps, inputs, on_step=None):
    """Runs `steps` on `inputs` (the variables v0..); returns the variables. `on_step(k, outs)`
    sees what each step made (for an in-place op: the written tensor)."""
    V = list(inputs)

    def setv(i, t):
        while len(V) <= i:
            V.append(None)
        V[i] = t

    for k, st in enumerate(steps):
        op = st["op"]
        a = [V[i] for i in st.get("a", [])]
        ctx = torch.no_grad() if st.get("ng") else contextlib.nullcontext()
        with ctx:
            if op == "const":
                outs = [torch.tensor(st["d"]).reshape(st["s"])]
            elif op in ("add_", "sub_", "mul_", "div_"):
                getattr(a[0], op)(a[1])
                outs = [a[0]]
            elif op == "fill_":
                a[0].fill_(st["value"])
                outs = [a[0]]
            elif op == "zero_":
                a[0].zero_()
                outs = [a[0]]
            elif op == "transpose":
                outs = [a[0].transpose(st["d0"], st["d1"])]
            elif op == "permute":
                outs = [a[0].permute(*st["dims"])]
            elif op == "expand":
                outs = [a[0].expand(st["shape"])]
            elif op == "reshape":
                outs = [a[0].reshape(st["shape"])]
            elif op == "split":
                outs = list(a[0].split(st["sizes"], st["dim"]))
            elif op == "chunk":
                outs = list(a[0].chunk(st["chunks"], st["dim"]))
            elif op == "detach":
                outs = [a[0].detach()]
            elif op in go.OpsProg.UNARY:
                outs = [go.OpsProg.UNARY[op](a[0], st)]
            elif op in gv.Prog.BINARY:
                outs = [gv.Prog.BINARY[op](a[0], a[1])]
            elif op in ("cat", "stack"):
                outs = [(torch.cat if op == "cat" else torch.stack)(a, st["dim"])]
            elif op == "max_dim":
                outs = [a[0].max(dim=st["dim"], keepdim=st["keepdim"]).values]
            elif op in NN_OPS:
                outs = [nn_op(op, st, a)]
            elif op == "loss":
                total = None
                for t, c in zip(a, st["c"]):
                    term = (t * torch.tensor(c).reshape(t.shape)).sum()
                    total = term if total is None else total + term
                outs = [total]
            else:
                raise AssertionError("op %s is not interpreted" % op)
        for i, t in zip(st.get("o", []), outs):
            setv(i, t)
        if on_step is not None:
            on_step(k, outs)
    return V


def same(a, b):
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a, b, rtol=1e-12, atol=1e-12)


# ----- building a function ---------------------------------------------------------------------

def build(rng, fam):
    """A FuncProg whose steps make the function, with `outs`; raises Reject to draw again."""
    p = FuncProg(rng, fam, True)
    try:
        BUILDERS[fam](p)
    except (Done, Stop):
        pass
    if p.error is not None:
        # The builder's eager run (with its own `requires_grad` flags) stopped at an error: the
        # function is what ran before it.
        k = p.error["step"]
        del p.steps[k:]
        p.error = None
    p.steps = [s for s in p.steps if s["op"] != "check"]
    for s in p.steps:
        if s["op"] == "embedding" and s.get("padding") is not None:
            # `nn::Embedding::with_padding_idx` zeroes the padding row of its weight in place
            # under no_grad (nn.Embedding's constructor), which forward mode sees; the ops
            # corpus's `F.embedding(padding_idx=)` does not.
            raise Reject("embedding with a padding index")
        if s["op"] == "to_dtype":
            raise Reject("a float32 part")
    n_in = len(p.inputs)
    if sum(prod(i["s"]) for i in p.inputs) > MAX_IN:
        raise Reject("inputs too large")
    cands = [i for i in range(n_in, len(p.T)) if p.T[i] is not None
             and p.kind[i] not in ("const", "loss", "grad")]
    if not cands:
        cands = list(range(n_in))
    r = p.r
    scalar = r.random() < 0.5
    # the later and the requires-grad variables first
    weights = [(1 + 3 * bool(p.T[i].requires_grad)) * (1 + j) for j, i in enumerate(cands)]
    picked = []
    for _ in range(r.randint(1, 3 if scalar else 2)):
        i = r.choices(cands, weights)[0]
        if i not in picked:
            picked.append(i)
    if scalar:
        if r.random() < 0.05 and p.T[picked[0]].numel() == 1:
            # a one-element output that is not 0-dim
            outs = [picked[0]]
        else:
            try:
                outs = [p.loss(picked)]
            except Stop:
                raise Reject("loss failed")
    else:
        outs = picked
    if sum(p.T[i].numel() for i in outs) > MAX_OUT:
        raise Reject("outputs too large")
    p.outs = outs
    return p


def fresh_inputs(p, rg=None):
    xs = [torch.tensor(i["d"]).reshape(i["s"]).clone() for i in p.inputs]
    if rg is not None:
        xs = [x.requires_grad_(g) for x, g in zip(xs, rg)]
    return xs


def check_interp(p):
    """The interpreter reproduces the builder's values (with the builder's flags)."""
    xs = [torch.tensor(i["d"]).reshape(i["s"]).clone().requires_grad_(i["rg"]) for i in p.inputs]
    seen = {}

    def on_step(k, outs):
        st = p.steps[k]
        if "r" in st and st["op"] not in ("add_", "sub_", "mul_", "div_", "fill_", "zero_"):
            seen[k] = [o.detach().clone() for o in outs]

    try:
        interp(p.steps, xs, on_step)
    except ERRORS as e:
        raise AssertionError("the interpreter failed where the builder did not: %s" % e)
    for k, outs in seen.items():
        for o, rec in zip(outs, p.steps[k]["r"]):
            expect = torch.tensor(rec["d"]).reshape(rec["s"])
            if not torch.allclose(o, expect, rtol=1e-9, atol=1e-11):
                raise AssertionError("interp differs at step %d (%s)" % (k, p.steps[k]["op"]))


# ----- recording the transforms ----------------------------------------------------------------

def enc_opt(t):
    return None if t is None else enc(t)


def rand_like_shape(r, shape):
    return {"s": list(shape), "d": [round(r.uniform(-1.5, 1.5), 3) for _ in range(prod(shape))]}


def tens(rec):
    return torch.tensor(rec["d"]).reshape(rec["s"])


def attempt(rec, fn):
    """Runs fn, recording PyTorch's error text under `err` when it raises."""
    try:
        return fn()
    except ERRORS as e:
        rec["err"] = str(e)
        return None


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def second_order(p, r, rec, results, xs, crg):
    """After a `create_graph` call: the gradient of Σ (result · c) over the results that
    require grad, with respect to the caller's inputs that require grad (`g2`)."""
    terms = [t for t in results if t is not None and t.requires_grad]
    wrt = [i for i, g in enumerate(crg) if g]
    if not terms or not wrt:
        return
    cs = [[round(r.uniform(-1.5, 1.5), 3) for _ in range(t.numel())] for t in terms]
    g2 = {"c": cs}
    rec["g2"] = g2

    def run():
        total = None
        for t, c in zip(terms, cs):
            term = (t * torch.tensor(c).reshape(t.shape)).sum()
            total = term if total is None else total + term
        gs = torch.autograd.grad(total, [xs[i] for i in wrt], allow_unused=True)
        g2["r"] = [enc_opt(g) for g in gs]

    attempt(g2, run)


def record_calls(p):
    r = p.r
    n_in = len(p.inputs)
    outs = p.outs
    single_out = len(outs) == 1 and r.random() < 0.8
    scalar = len(outs) == 1 and p.T[outs[0]].numel() == 1
    scalar0 = scalar and p.T[outs[0]].dim() == 0
    tuple_in = n_in > 1 or r.random() < 0.3
    fused = any(s["op"] in FLAG_DIFFERS for s in p.steps)
    # An in-place op on an input or a view of one: `torch.func.hessian` (`jacfwd(jacrev(f))`)
    # runs `f` on functorch's wrappers of the inputs and accepts it where
    # `torch.autograd.functional`, whose passes this crate's `hessian` makes (fresh leaves that
    # require grad), refuses it ("a leaf Variable that requires grad is being used in an
    # in-place operation."): no `func.hessian` call for such a function.
    mutates_input = any(s["op"] in INPLACE and p.root[s["a"][0]] < n_in for s in p.steps)
    # An input with no element: PyTorch's forward-mode Jacobians run `vmap` over a batch of
    # zero tangents, which fails in some shapes ("select(): index 0 out of range for tensor of
    # size [0, 0] at dimension 0") and not in others; no forward-mode Jacobian for such a function.
    empty_input = any(prod(i["s"]) == 0 for i in p.inputs)
    steps = p.steps
    p.single_out = single_out
    p.tuple_in = tuple_in

    def f(*xs):
        V = interp(steps, xs)
        res = tuple(V[i] for i in outs)
        return res[0] if single_out else res

    out_shapes = [list(p.T[i].shape) for i in outs]
    in_shapes = [i["s"] for i in p.inputs]
    calls = []

    def inputs_arg(xs):
        return tuple(xs) if tuple_in else xs[0]

    # the outputs, plainly
    rec = {"api": "out"}
    res = attempt(rec, lambda: as_tuple(f(*fresh_inputs(p))))
    if res is not None:
        rec["o"] = [enc(t) for t in res]
    calls.append(rec)
    if "err" in rec:
        # A function that fails fails alike under every transform: two are enough.
        rec2 = {"api": "vjp", "cg": False, "strict": False, "v": None}
        attempt(rec2, lambda: AF.vjp(f, inputs_arg(fresh_inputs(p)), None))
        calls.append(rec2)
        return calls

    def tangents():
        return [rand_like_shape(r, s) for s in in_shapes]

    # torch.func.jvp: outputs and tangents, by forward mode
    if r.random() < 0.6:
        ts = tangents()
        rec = {"api": "func.jvp", "t": ts}

        def run():
            o, t = TF.jvp(f, tuple(fresh_inputs(p)), tuple(tens(x) for x in ts))
            rec["o"] = [enc(x) for x in as_tuple(o)]
            rec["r"] = [enc(x) for x in as_tuple(t)]
        attempt(rec, run)
        calls.append(rec)

    # torch.func.vjp
    if r.random() < 0.3:
        v = [rand_like_shape(r, s) for s in out_shapes]
        rec = {"api": "func.vjp", "v": v}

        def run():
            o, fn = TF.vjp(f, *fresh_inputs(p))
            cot = tens(v[0]) if single_out else tuple(tens(x) for x in v)
            g = fn(cot)
            rec["o"] = [enc(x) for x in as_tuple(o)]
            rec["r"] = [enc(x) for x in g]
        attempt(rec, run)
        calls.append(rec)

    def argnums():
        k = r.randint(1, n_in)
        return sorted(r.sample(range(n_in), k))

    # torch.func.jacrev / jacfwd (argnums: a subset of the inputs)
    for api, fn, prob in (("func.jacrev", TF.jacrev, 0.5), ("func.jacfwd", TF.jacfwd, 0.3)):
        if r.random() < prob and not (api == "func.jacfwd" and empty_input):
            an = argnums()
            rec = {"api": api, "argnums": an}

            def run():
                jac = fn(f, argnums=tuple(an))(*fresh_inputs(p))
                per_out = [jac] if single_out else list(jac)
                rec["r"] = [[enc(x) for x in row] for row in per_out]
            attempt(rec, run)
            calls.append(rec)

    # torch.func.hessian (jacfwd of jacrev) of a scalar function
    if scalar0 and r.random() < 0.6 and not mutates_input and not empty_input:
        an = argnums()
        rec = {"api": "func.hessian", "argnums": an}

        def run():
            h = TF.hessian(f, argnums=tuple(an))(*fresh_inputs(p))
            if not single_out:
                h = h[0]  # a tuple of one output
            rec["r"] = [[enc(x) for x in row] for row in h]
        attempt(rec, run)
        calls.append(rec)

    crg = [r.random() < 0.5 for _ in range(n_in)]
    p.crg = crg

    def flags(second=False):
        cg = r.random() < 0.3 and not fused
        strict = r.random() < 0.25 and not (fused and second)
        return cg, strict

    def v_for(shapes, may_be_none):
        c = r.random()
        if may_be_none and c < 0.3:
            return None
        if c < 0.04:
            return None  # PyTorch's error unless a single one-element tensor
        if c < 0.07:
            # the wrong shape or the wrong count
            bad = [list(s) for s in shapes]
            if r.random() < 0.5 or not bad:
                bad.append([2])
            else:
                bad[0] = bad[0] + [2] if len(bad[0]) < 3 else bad[0][1:]
            return [rand_like_shape(r, s) for s in bad]
        return [rand_like_shape(r, s) for s in shapes]

    def vt(v, is_tuple):
        if v is None:
            return None
        ts = [tens(x) for x in v]
        return tuple(ts) if is_tuple else (ts[0] if len(ts) == 1 else tuple(ts))

    def product_call(api, fn, v_shapes, v_tuple, may_be_none, second):
        cg, strict = flags(second)
        v = v_for(v_shapes, may_be_none)
        rec = {"api": api, "cg": cg, "strict": strict, "v": v}

        def run():
            xs = fresh_inputs(p, crg)
            o, res = fn(f, inputs_arg(xs), vt(v, v_tuple), create_graph=cg, strict=strict)
            rec["o"] = [enc(x) for x in as_tuple(o)]
            res = list(as_tuple(res))
            rec["r"] = [enc(x) for x in res]
            if cg:
                second_order(p, r, rec, res, xs, crg)
        attempt(rec, run)
        calls.append(rec)

    if r.random() < 0.5:
        product_call("vjp", AF.vjp, out_shapes, not single_out, scalar and single_out, False)
    if r.random() < 0.5:
        product_call("jvp", AF.jvp, in_shapes, tuple_in, n_in == 1 and not tuple_in
                     and prod(in_shapes[0]) == 1, False)
    if scalar and single_out:
        for api, fn in (("hvp", AF.hvp), ("vhp", AF.vhp)):
            if r.random() < 0.4:
                product_call(api, fn, in_shapes, tuple_in, n_in == 1 and not tuple_in
                             and prod(in_shapes[0]) == 1, True)

    def jac_call(api, second):
        cg, strict = flags(second)
        vec = r.random() < 0.4
        fwd = r.random() < 0.2 and not empty_input
        if fwd and r.random() < 0.8:
            # mostly the options forward mode supports
            vec, cg, strict = True, False, False
        # With `strategy="forward-mode"`, PyTorch's results stay attached to the caller's
        # inputs (`_jacfwd` runs the function on duals of them and does not detach; a
        # forward-over-reverse Hessian always requires grad), whatever `create_graph`, which
        # it refuses with forward mode; this crate's are detached, as `create_graph=False`
        # says: the replay compares their values, not their `requires_grad` flags.
        rec = {"api": api, "cg": cg, "strict": strict, "vec": vec, "fwd": fwd}

        def run():
            xs = fresh_inputs(p, crg)
            strategy = "forward-mode" if fwd else "reverse-mode"
            if api == "jacobian":
                jac = AF.jacobian(f, inputs_arg(xs), create_graph=cg, strict=strict,
                                  vectorize=vec, strategy=strategy)
            else:
                jac = AF.hessian(f, inputs_arg(xs), create_graph=cg, strict=strict,
                                 vectorize=vec, outer_jacobian_strategy=strategy)
            # PyTorch nests by what is a tuple: normalise to [output][input]
            if api == "jacobian":
                rows = [jac] if single_out else list(jac)
                rows = [list(row) if tuple_in else [row] for row in rows]
            else:
                rows = [list(row) for row in jac] if tuple_in else [[jac]]
            rec["r"] = [[enc(x) for x in row] for row in rows]
            if cg:
                second_order(p, r, rec, [x for row in rows for x in row], xs, crg)
        attempt(rec, run)
        calls.append(rec)

    if r.random() < 0.5:
        jac_call("jacobian", False)
    if scalar and r.random() < 0.5:
        jac_call("hessian", True)

    # forward_ad dual tensors, step by step
    if r.random() < 0.5:
        has = [r.random() < 0.8 for _ in range(n_in)]
        if not any(has):
            has[r.randrange(n_in)] = True
        ts = [rand_like_shape(r, s) if h else None for s, h in zip(in_shapes, has)]
        rec = {"api": "fwad", "t": ts}
        per_step = []

        def run():
            with fwAD.dual_level():
                xs = [fwAD.make_dual(x, tens(t)) if t is not None else x
                      for x, t in zip(fresh_inputs(p), ts)]

                def on_step(k, made):
                    per_step.append([enc_opt(fwAD.unpack_dual(t).tangent) for t in made])

                V = interp(steps, xs, on_step)
                rec["st"] = per_step
                rec["fin"] = [None if t is None else enc_opt(fwAD.unpack_dual(t).tangent)
                              for t in V]
        attempt(rec, run)
        if "err" in rec:
            rec["at"] = len(per_step)
        calls.append(rec)
    return calls


def generate(seed, count):
    rng = random.Random(seed)
    names = [n for n, _ in FAMILY_WEIGHTS]
    weights = [w for _, w in FAMILY_WEIGHTS]
    total = sum(weights)
    plan = []
    for n, w in FAMILY_WEIGHTS:
        plan += [n] * round(count * w / total)
    while len(plan) < count:
        plan.append(rng.choices(names, weights)[0])
    plan = plan[:count]
    rng.shuffle(plan)
    rejects = collections.Counter()
    for pid, fam in enumerate(plan):
        while True:
            try:
                p = build(random.Random(rng.getrandbits(64)), fam)
                check_interp(p)
                calls = record_calls(p)
            except Reject as e:
                rejects[str(e)[:80]] += 1
                continue
            break
        yield {"id": pid, "family": fam,
               "inputs": [{"s": i["s"], "d": i["d"], "rg": g}
                          for i, g in zip(p.inputs, p.crg if hasattr(p, "crg") else
                                          [False] * len(p.inputs))],
               "tuple_in": p.tuple_in, "single_out": p.single_out, "outs": p.outs,
               "steps": p.steps, "calls": calls}
    sys.stderr.write("rejected functions: %d\n" % sum(rejects.values()))
    for k, v in rejects.most_common(12):
        sys.stderr.write("  %5d  %s\n" % (v, k))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20270415)
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--out", default="tests/corpus/func.jsonl.gz")
    args = ap.parse_args()
    torch.set_num_threads(1)
    apis = collections.Counter()
    errs = collections.Counter()
    fams = collections.Counter()
    with open(args.out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                                  mtime=0) as raw:
        header = {"header": {"generator": "tests/corpus/gen_func.py", "seed": args.seed,
                             "count": args.count, "torch": torch.__version__,
                             "families": dict(FAMILY_WEIGHTS)}}
        raw.write((json.dumps(header) + "\n").encode())
        for prog in generate(args.seed, args.count):
            raw.write((json.dumps(prog, separators=(",", ":")) + "\n").encode())
            fams[prog["family"]] += 1
            for c in prog["calls"]:
                apis[c["api"]] += 1
                if "err" in c:
                    errs[(c["api"], c["err"][:70])] += 1
    for fam, _ in FAMILY_WEIGHTS:
        sys.stderr.write("  %-16s %5d functions\n" % (fam, fams[fam]))
    for a, n in sorted(apis.items()):
        sys.stderr.write("  %-14s %5d calls\n" % (a, n))
    for (a, m), n in errs.most_common(40):
        sys.stderr.write("  %5d  %-12s %s\n" % (n, a, m))


if __name__ == "__main__":
    main()
