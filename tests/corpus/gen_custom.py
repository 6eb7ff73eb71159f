#!/usr/bin/env python3
"""Records random programs around custom autograd functions from PyTorch, for
`tests/corpus/custom.rs` (the `custom_corpus_matches_pytorch` test of the corpus target).

Each program calls one or more of a fixed table of `torch.autograd.Function` *shapes* (`SHAPES`
below; each is written a second time as a `#[differentiable]` + `#[backward]` function in
`tests/corpus/custom.rs`, under the same name): a function that returns an input as it is or a
view of one, saves inputs, outputs, intermediates or a view of an input, modifies an input in
place (`mark_dirty`), marks an output non-differentiable, turns off materialized gradients, is
`@once_differentiable`, has two outputs, or returns a gradient of the wrong shape. Around the
calls the views generator's program builder (`gen_views_inplace.py`, reused, not copied) adds
leaves and non-leaf bases, views, in-place ops on the functions' results and on their inputs,
reads, calls under `no_grad` and under saved-tensor hooks, and ends with `backward()` or
`grad(create_graph=True)` followed by a second-order `grad`, recording values,
`requires_grad`, and for a call's outputs `is_leaf` and the `grad_fn` name, gradients and errors
at the step they occur.

    /tmp/torchenv/bin/python tests/corpus/gen_custom.py \
        --seed 20270301 --count 3000 --out tests/corpus/custom.jsonl.gz

The op language is the views corpus's (`tests/corpus/README.md`), plus the `custom` step.
"""

import argparse
import collections
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_views_inplace as gv  # noqa: E402
from gen_views_inplace import Prog, Reject, enc, prod  # noqa: E402

import torch  # noqa: E402
from torch.autograd import Function  # noqa: E402
from torch.autograd.function import once_differentiable  # noqa: E402

# The errors of custom functions this corpus wants, beside the views corpus's (substrings).
CUSTOM_ERRORS = (
    # mark_dirty on a leaf that requires grad (the custom function's own wording)
    "a leaf Variable that requires grad has been used in an in-place operation.",
    "trying to differentiate twice a function that was marked with @once_differentiable",
    "returned an invalid gradient at index",
)

# ----- the shapes: torch.autograd.Function classes ---------------------------------------------
# Node names are the class name + "Backward"; the Rust twins take the same names.


class Ident(Function):
    """Returns its input as it is (PyTorch: a view of it, made in the custom function)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class PassSecond(Function):
    """Returns its second input as it is; no gradient for the first."""

    @staticmethod
    def forward(ctx, x, y):
        return y

    @staticmethod
    def backward(ctx, g):
        return None, g


class IdentAndDouble(Function):
    """The input as it is and `2 x`."""

    @staticmethod
    def forward(ctx, x):
        return x, x * 2.0

    @staticmethod
    def backward(ctx, g0, g1):
        return g0 + g1 * 2.0


class Flatten(Function):
    """`x.reshape(-1)`: a view of a contiguous input, a copy of another."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.reshape(-1)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Transpose(Function):
    """`x.transpose(0, 1)` (2-D and more): a view."""

    @staticmethod
    def forward(ctx, x):
        return x.transpose(0, 1)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(0, 1)


class First(Function):
    """`x[0]` (1-D and more): a view; the gradient is `g` in row 0 and zeros below."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.select(0, 0)

    @staticmethod
    def backward(ctx, g):
        n = ctx.shape[0]
        head = g.reshape((1,) + tuple(g.shape))
        if n == 1:
            return head
        rest = torch.zeros(ctx.shape).narrow(0, 1, n - 1)
        return torch.cat([head, rest], 0)


class ScaledSquare(Function):
    """`x * x * s`, saving the input (a float attribute `s`)."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x)
        ctx.s = s
        return x * x * s

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * (2.0 * ctx.s), None


class ExpOut(Function):
    """`exp`, saving its output."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class TanhOut(Function):
    """`tanh`, saving its output; its backward `g (1 - y²)` is differentiable through `y`."""

    @staticmethod
    def forward(ctx, x):
        y = x.tanh()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1.0 - y * y)


class SinMid(Function):
    """`sin`, saving the intermediate `cos x` (made without history: a second order misses the
    `-sin` term on both sides alike)."""

    @staticmethod
    def forward(ctx, x):
        c = x.cos()
        ctx.save_for_backward(c)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        return g * c


class SquareView(Function):
    """`x * x`, saving `x.reshape(-1)`: a view of the input made in the forward (a copy for a
    non-contiguous input), version-checked with the input's counter."""

    @staticmethod
    def forward(ctx, x):
        r = x.reshape(-1)
        ctx.save_for_backward(r)
        ctx.shape = x.shape
        return x * x

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * 2.0 * r.reshape(ctx.shape)


class ProdSum(Function):
    """`(x * y, x + y)` of same-shape inputs, saving both."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, g0, g1):
        x, y = ctx.saved_tensors
        return g0 * y + g1, g0 * x + g1


class MulTwo_(Function):
    """`x.mul_(2)`, marked dirty, returning `x`."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class AddInto_(Function):
    """`x.add_(y)`, marked dirty, returning `x`; `y` may broadcast to `x` (its gradient, `g`,
    is then reduced by the engine)."""

    @staticmethod
    def forward(ctx, x, y):
        x.add_(y)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, g


class NonDiff(Function):
    """`(2 x, 3 x)`, the first marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        a = x * 2.0
        b = x * 3.0
        ctx.mark_non_differentiable(a)
        return a, b

    @staticmethod
    def backward(ctx, g0, g1):
        return g1 * 3.0


class NoMat(Function):
    """`(2 x, x * x)` with `set_materialize_grads(False)`: an unused output's gradient is None,
    and so is the result when both are."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x * 2.0, x * x

    @staticmethod
    def backward(ctx, g0, g1):
        (x,) = ctx.saved_tensors
        gx = None
        if g0 is not None:
            gx = g0 * 2.0
        if g1 is not None:
            t = g1 * 2.0 * x
            gx = t if gx is None else gx + t
        return gx


class CubeOnce(Function):
    """`x³`, saving `x`, its backward `@once_differentiable`."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * x * 3.0


class BadGrad(Function):
    """`2 x` whose backward returns a 0-dim gradient: PyTorch's shape check refuses it for an
    input of another shape."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return (g * 2.0).sum()


# name -> (class, number of tensor inputs, minimum rank of the first input, outputs)
SHAPES = {
    "ident": (Ident, 1, 0, 1),
    "pass_second": (PassSecond, 2, 0, 1),
    "ident_and_double": (IdentAndDouble, 1, 0, 2),
    "flatten": (Flatten, 1, 0, 1),
    "transpose": (Transpose, 1, 2, 1),
    "first": (First, 1, 1, 1),
    "scaled_square": (ScaledSquare, 1, 0, 1),
    "exp_out": (ExpOut, 1, 0, 1),
    "tanh_out": (TanhOut, 1, 0, 1),
    "sin_mid": (SinMid, 1, 0, 1),
    "square_view": (SquareView, 1, 0, 1),
    "prod_sum": (ProdSum, 2, 0, 2),
    "mul_two_": (MulTwo_, 1, 0, 1),
    "add_into_": (AddInto_, 2, 0, 1),
    "non_diff": (NonDiff, 1, 0, 2),
    "no_mat": (NoMat, 1, 0, 2),
    "cube_once": (CubeOnce, 1, 0, 1),
    "bad_grad": (BadGrad, 1, 0, 1),
}
ALIASING = ["ident", "pass_second", "ident_and_double", "flatten", "transpose", "first"]
SAVING = ["scaled_square", "exp_out", "tanh_out", "sin_mid", "square_view", "prod_sum",
          "cube_once", "no_mat"]
DIRTY = ["mul_two_", "add_into_"]
OUTPUTS = ["non_diff", "no_mat", "prod_sum", "ident_and_double"]
SECOND_ORDER = ["scaled_square", "exp_out", "tanh_out", "sin_mid", "square_view", "prod_sum",
                "no_mat", "cube_once", "flatten", "first", "ident_and_double"]

FAMILY_WEIGHTS = [
    ("alias", 14),            # returns an input or a view: in-place on it, on its base, reads
    ("saved", 12),            # saved inputs, outputs, intermediates; in-place on them after
    ("dirty", 11),            # mark_dirty on bases, views of them, leaves, under no_grad
    ("outputs", 8),           # two outputs, non-differentiable, materialize_grads=False
    ("hooks", 10),            # calls under saved-tensor hooks (counting, copying)
    ("no_grad", 9),           # calls under no_grad, results used with grad
    ("double_backward", 12),  # grad(create_graph) through the backwards, then a second order
    ("chain", 9),             # custom of custom, with built-in ops and views between
    ("errors", 5),            # invalid gradient shapes, dirty leaves, once_differentiable
    ("random", 10),           # everything mixed
]


class CustomProg(Prog):
    WANTED_ERRORS = Prog.WANTED_ERRORS + CUSTOM_ERRORS

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.packs = 0
        self.unpacks = 0
        self.hooked = False  # some call ran under saved-tensor hooks: record unpack counts

    def run(self, rec, fn, ng=None):
        """`Prog.run`, recording on a `backward` / `grad` step of a program that ran a call
        under hooks how many times the hooks unpacked so far (`unpacks`)."""
        try:
            return super().run(rec, fn, ng)
        finally:
            if self.hooked and rec.get("op") in ("backward", "grad"):
                rec["unpacks"] = self.unpacks

    def end_second_backward(self, must=()):
        """`grad(create_graph=True)` of a loss, then `backward()` of a loss of the gradients
        (reaching a once_differentiable function's `Error` node, where `grad(allow_unused=True)`
        skips it)."""
        self.check()
        ids = self.pick_loss_vars(must)
        if ids is None:
            return
        L = self.loss(ids)
        wrt = self.rg_inputs()
        self.grad_step(L, wrt, True)
        gs = [i for i in range(len(self.T)) if self.kind[i] == "grad" and self.T[i] is not None
              and self.T[i].requires_grad]
        if not gs:
            return
        L2 = self.loss(gs)
        rec = {"op": "backward", "a": [L2]}
        self.run(rec, lambda: self.T[L2].backward())
        rec["gr"] = {str(i): enc(t.grad) for i, t in enumerate(self.T)
                     if t is not None and t.grad is not None}

    # ----- a call of a shape -------------------------------------------------------------------

    def hooks(self, kind):
        """Saved-tensor hooks: `count` (identity, counting), `copy` (pack `t * 1`, counting)."""

        def pack(t):
            self.packs += 1
            if kind == "copy":
                with torch.no_grad():
                    return t * 1.0
            return t

        def unpack(t):
            self.unpacks += 1
            return t

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def call(self, fn, args, hooks=None, s=None):
        """`Shape.apply(*args)`; returns the output var ids."""
        cls, _, _, nout = SHAPES[fn]
        ts = [self.T[i] for i in args]
        rec = {"op": "custom", "fn": fn, "a": list(args)}
        extra = ()
        if fn == "scaled_square":
            s = s if s is not None else self.val()
            rec["s"] = s
            extra = (s,)
        if hooks:
            rec["hk"] = hooks
            self.hooked = True
        before = self.packs

        def f():
            if hooks:
                with self.hooks(hooks):
                    out = cls.apply(*ts, *extra)
            else:
                out = cls.apply(*ts, *extra)
            return list(out) if isinstance(out, tuple) else [out]

        outs = self.run(rec, f)
        if hooks:
            rec["packs"] = self.packs - before
        assert len(outs) == nout, fn
        ids = [self.add_var(o, "custom", self.root_of(o, args)) for o in outs]
        rec["o"] = ids
        rs = []
        for o in outs:
            e = enc(o)
            e["leaf"] = bool(o.is_leaf)
            e["gf"] = None if o.grad_fn is None else type(o.grad_fn).__name__
            rs.append(e)
        rec["r"] = rs
        return ids

    def root_of(self, t, args):
        """The argument whose storage `t` shares (its views, aliases), else None (a new tensor)."""
        for i in args:
            if gv.same_storage(t, self.T[i]):
                return i
        return None

    def args_for(self, fn, first=None):
        """Arguments for `fn`: `first` (or a live var of a fitting rank) and a partner."""
        _, nin, min_nd, _ = SHAPES[fn]
        if first is None:
            cands = self.live(lambda i: self.kind[i] not in ("const", "grad")
                              and self.T[i].dim() >= min_nd)
            if not cands:
                return None
            first = self.r.choice(cands)
        if self.T[first].dim() < min_nd:
            return None
        if nin == 1:
            return [first]
        shape = tuple(self.T[first].shape)
        if fn == "prod_sum":
            cands = [i for i in self.live() if i != first and tuple(self.T[i].shape) == shape
                     and self.kind[i] != "grad"]
            other = self.r.choice(cands) if cands and self.r.random() < 0.7 \
                else self.const(list(shape))
        elif fn == "add_into_":
            cands = [i for i in self.live() if i != first and self.kind[i] != "grad"
                     and gv.broadcasts_to(self.T[i].shape, shape)
                     and not gv.same_storage(self.T[i], self.T[first])]
            other = self.r.choice(cands) if cands and self.r.random() < 0.7 \
                else self.const(self.broadcast_partner(shape))
        else:  # pass_second: anything
            cands = [i for i in self.live() if i != first and self.kind[i] != "grad"]
            other = self.r.choice(cands) if cands else self.const(list(shape))
            if self.r.random() < 0.5:
                return [other, first]
        return [first, other]

    def call_on(self, fn, first=None, hooks=None):
        """Calls `fn` on `first` (or a fitting var); `fn` changes when the rank does not fit."""
        args = self.args_for(fn, first)
        if args is None:
            fn = self.r.choice(["ident", "flatten", "scaled_square", "exp_out", "mul_two_"])
            args = self.args_for(fn, first)
        if fn == "exp_out" and self.T[args[0]].detach().max().item() > 2.5:
            fn = "tanh_out"
        if fn == "mul_two_" and self.T[args[0]].detach().abs().max().item() > 100:
            fn = "ident"
        return self.call(fn, args, hooks)

    def rg_base(self):
        """A non-leaf that requires grad (an input times one, a sum, ...)."""
        src = self.r.choice(self.rg_inputs())
        return self.base(src)

    def arg_source(self):
        """A first argument: a leaf, a non-leaf base, a view of one."""
        c = self.r.random()
        if c < 0.3:
            return self.r.choice(range(len(self.inputs)))
        b = self.base()
        if c < 0.75:
            return b
        return gv.writable_view(self, b)


# ----- the families ------------------------------------------------------------------------------

def fam_alias(p):
    p.make_inputs(rg_prob=0.75)
    x = p.arg_source()
    fn = p.r.choice(ALIASING)
    with p.no_grad(p.r.random() < 0.1):
        outs = p.call_on(fn, x)
    args = p.steps[-1]["a"]
    o = p.r.choice(outs)
    c = p.r.random()
    if c < 0.3:
        # in-place on the result (refused in PyTorch for a view made in the custom function)
        with p.no_grad(p.r.random() < 0.2):
            p.inplace(o)
    elif c < 0.55:
        # in-place on the input, then the result read (its base changed)
        tgt = p.r.choice(args)
        if p.kind[tgt] == "input" and p.T[tgt].requires_grad and p.r.random() < 0.7:
            with p.no_grad():
                p.inplace(tgt)
        else:
            p.inplace(tgt)
        if p.r.random() < 0.8:
            p.read(o)
    elif c < 0.7:
        # a view of the result, modified in place
        if p.T[o].dim() >= 1:
            v = gv.writable_view(p, o)
            p.inplace(v)
        else:
            p.read(o)
    else:
        p.read(o)
        if p.r.random() < 0.5:
            p.read(p.r.choice(outs + args))
    p.end()


def fam_saved(p):
    p.make_inputs(rg_prob=0.75)
    x = p.arg_source()
    fn = p.r.choice(SAVING)
    outs = p.call_on(fn, x)
    args = p.steps[-1]["a"]
    c = p.r.random()
    if c < 0.35:
        tgt = p.r.choice(args)
        if p.kind[tgt] == "input" and p.T[tgt].requires_grad:
            with p.no_grad():
                p.inplace(tgt)
        else:
            with p.no_grad(p.r.random() < 0.3):
                p.inplace(tgt if p.r.random() < 0.6 or p.T[tgt].dim() == 0
                          else gv.writable_view(p, tgt))
    elif c < 0.6:
        o = p.r.choice([i for i in outs if p.T[i].requires_grad] or outs)
        with p.no_grad(p.r.random() < 0.3):
            p.inplace(o)
    elif c < 0.75:
        d = p.view(p.r.choice(args), "detach")[0]
        p.inplace(d)
    for _ in range(p.r.randint(0, 2)):
        p.read(p.r.choice(outs))
    p.end()


def fam_dirty(p):
    p.make_inputs(rg_prob=0.75)
    c = p.r.random()
    ng = p.r.random() < 0.15
    if c < 0.15:
        x = p.r.choice(range(len(p.inputs)))  # a leaf: refused if it requires grad
    else:
        b = p.base()
        views = gv.some_views(p, b, p.r.randint(0, 2), no_expand=True)
        if c < 0.55 or p.T[b].dim() == 0:
            x = b
        else:
            x = gv.writable_view(p, b)
        if views and p.r.random() < 0.5:
            p.read(p.r.choice(views))
    fn = p.r.choice(DIRTY)
    with p.no_grad(ng):
        outs = p.call_on(fn, x)
    if p.r.random() < 0.3:
        with p.no_grad(p.r.random() < 0.3):
            p.call_on(p.r.choice(DIRTY), outs[0])
    for _ in range(p.r.randint(1, 3)):
        cands = p.live(lambda i: p.kind[i] in ("base", "view", "custom", "input"))
        p.read(p.r.choice(cands))
    p.end()


def fam_outputs(p):
    p.make_inputs(rg_prob=0.8)
    x = p.arg_source()
    outs = p.call_on(p.r.choice(OUTPUTS), x)
    for o in outs:
        if p.r.random() < 0.4:
            p.read(o)
    # a loss over one output only, or both
    use = outs if p.r.random() < 0.4 else [p.r.choice(outs)]
    use = [o for o in use if p.T[o].requires_grad]
    p.end(must=use)


def fam_hooks(p):
    p.make_inputs(rg_prob=0.8)
    x = p.arg_source()
    fn = p.r.choice(SAVING + ["mul_two_", "ident", "flatten"])
    kind = p.r.choice(["count", "copy"])
    outs = p.call_on(fn, x, hooks=kind)
    args = p.steps[-1]["a"]
    if p.r.random() < 0.5:
        # in-place after the forward: no version check through hooks (the saved tensor is the
        # original for `count`, a copy for `copy`)
        tgt = p.r.choice(args + outs)
        if p.T[tgt].requires_grad and (p.kind[tgt] == "input" or p.T[tgt].is_leaf):
            with p.no_grad():
                p.inplace(tgt)
        else:
            p.inplace(tgt)
    if p.r.random() < 0.3:
        p.call_on(p.r.choice(SAVING), p.r.choice(outs), hooks=p.r.choice(["count", "copy"]))
    for _ in range(p.r.randint(0, 2)):
        p.read(p.r.choice(outs))
    p.end()


def fam_no_grad(p):
    p.make_inputs(rg_prob=0.8)
    x = p.arg_source()
    fn = p.r.choice(list(SHAPES))
    if fn == "bad_grad":
        fn = "ident"
    with p.no_grad():
        outs = p.call_on(fn, x)
    o = p.r.choice(outs)
    c = p.r.random()
    if c < 0.4:
        p.inplace(o, mode=p.r.choice(["const", "rg_input", "var"]))
    elif c < 0.6:
        args = p.steps[-1]["a"] if p.steps[-1]["op"] == "custom" else [x]
        tgt = p.r.choice(args)
        with p.no_grad(p.kind[tgt] == "input"):
            p.inplace(tgt)
        p.read(o)
    else:
        p.read(o)
    if p.r.random() < 0.4:
        p.call_on(p.r.choice(list(SHAPES)), o)
    p.end()


def fam_double_backward(p):
    p.make_inputs(rg_prob=0.9)
    x = p.arg_source()
    outs = p.call_on(p.r.choice(SECOND_ORDER), x)
    if p.r.random() < 0.4:
        o = p.r.choice(outs)
        outs = p.call_on(p.r.choice(SECOND_ORDER), o)
    for _ in range(p.r.randint(0, 2)):
        p.read(p.r.choice(outs), op=p.r.choice(["mul", "sin", "pow", "tanh", None]))
    p.end("grad", must=[o for o in outs if p.T[o].requires_grad][:1])


def fam_chain(p):
    p.make_inputs(rg_prob=0.8)
    cur = p.arg_source()
    for _ in range(p.r.randint(2, 4)):
        c = p.r.random()
        if c < 0.55:
            outs = p.call_on(p.r.choice([f for f in SHAPES if f != "bad_grad"]), cur)
            cur = p.r.choice(outs)
        elif c < 0.75 and p.T[cur].dim() >= 1:
            cur = p.view(cur, single=True)[0]
        elif c < 0.9:
            cur = p.read(cur)
        else:
            p.inplace(cur)
    p.end()


def fam_errors(p):
    p.make_inputs(rg_prob=0.9)
    c = p.r.random()
    if c < 0.5:
        x = p.arg_source()
        outs = p.call("bad_grad", [x])
        p.end(must=outs)
    elif c < 0.75:
        rg = p.rg_inputs()
        p.call_on(p.r.choice(DIRTY), p.r.choice(rg))
        p.end()
    else:
        x = p.arg_source()
        outs = p.call_on("cube_once", x)
        if p.r.random() < 0.7:
            outs = [p.binary("mul", outs[0], outs[0])]
        p.end_second_backward(must=outs)


def fam_random(p):
    p.make_inputs()
    p.base()
    for _ in range(p.r.randint(3, 8)):
        c = p.r.random()
        cands = p.live(lambda i: p.kind[i] not in ("const", "grad"))
        src = p.r.choice(cands)
        ng = p.r.random() < 0.12
        with p.no_grad(ng):
            if c < 0.4:
                p.call_on(p.r.choice(list(SHAPES)), src,
                          hooks=p.r.choice([None, None, None, "count", "copy"]))
            elif c < 0.55:
                p.view(src)
            elif c < 0.75:
                if p.kind[src] == "input" and p.T[src].requires_grad and not ng:
                    src = p.base(src)
                p.inplace(src)
            else:
                p.read(src)
    p.end()


FAMILIES = {
    "alias": fam_alias,
    "saved": fam_saved,
    "dirty": fam_dirty,
    "outputs": fam_outputs,
    "hooks": fam_hooks,
    "no_grad": fam_no_grad,
    "double_backward": fam_double_backward,
    "chain": fam_chain,
    "errors": fam_errors,
    "random": fam_random,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20270301)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--out", default="tests/corpus/custom.jsonl.gz")
    args = ap.parse_args()
    fams = collections.Counter()
    errs = collections.Counter()
    errmsg = collections.Counter()
    calls = collections.Counter()
    n = 0
    with open(args.out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                                  mtime=0) as raw:
        header = {"header": {"generator": "tests/corpus/gen_custom.py", "seed": args.seed,
                             "count": args.count, "torch": torch.__version__,
                             "shapes": sorted(SHAPES),
                             "families": dict(FAMILY_WEIGHTS)}}
        raw.write((json.dumps(header) + "\n").encode())
        for prog in gv.generate(args.seed, args.count, True, FAMILY_WEIGHTS, FAMILIES,
                                CustomProg):
            raw.write((json.dumps(prog, separators=(",", ":")) + "\n").encode())
            n += 1
            fams[prog["family"]] += 1
            for st in prog["steps"]:
                if st["op"] == "custom":
                    calls[st["fn"]] += 1
            if "error" in prog:
                errs[prog["family"]] += 1
                errmsg[prog["error"]["msg"][:80]] += 1
    sys.stderr.write("programs: %d, ending in an error: %d\n" % (n, sum(errs.values())))
    for f, _ in FAMILY_WEIGHTS:
        sys.stderr.write("  %-16s %5d programs, %4d errors\n" % (f, fams[f], errs[f]))
    sys.stderr.write("calls: %s\n" % ", ".join("%s %d" % kv for kv in sorted(calls.items())))
    for k, v in errmsg.most_common():
        sys.stderr.write("  %5d  %s\n" % (v, k))


if __name__ == "__main__":
    main()
