#!/usr/bin/env python3
"""Records random view + in-place programs from PyTorch, for `tests/corpus/main.rs`.

Each program is run eagerly in PyTorch (float64, CPU, one thread) while it is generated: the
generator looks at the live tensors to pick ops that are valid by construction (shapes that
broadcast, denominators away from zero, ...), and every step's result is recorded. A step that
raises stops the program; the error is kept when it is one of the view / in-place / version
errors this corpus is about, and the whole program is drawn again otherwise.

    /tmp/torchenv/bin/python tests/corpus/gen_views_inplace.py \
        --seed 20240601 --count 6000 --out tests/corpus/views_inplace.jsonl.gz

The output is gzipped JSON lines: a header line (`{"header": ...}`) and then one program per
line. The op language is described in `tests/corpus/README.md`.
"""

import argparse
import collections
import contextlib
import gzip
import json
import math
import random
import sys
import warnings

import torch

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)
# `.grad` of a non-leaf is read on purpose (it must be None): keep PyTorch quiet about it.
warnings.filterwarnings("ignore")

# The errors this corpus wants (substrings of PyTorch's messages). Any other error means the
# generator built an invalid program by mistake: the program is drawn again.
WANTED_ERRORS = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    "a leaf Variable that requires grad is being used in an in-place operation.",
    # multi-output views, views created in no_grad mode (and views of those):
    "is a view and is being modified inplace",
    "is a view and its base or another view of its base has been modified inplace",
    "is a view of a view which was created in no_grad mode",
    "A view was created in no_grad mode and",
    "unsupported operation: some elements of the input tensor and the written-to tensor refer",
    "unsupported operation: more than one element of the written-to tensor refers",
    "one of the variables needed for gradient computation has been modified by an inplace",
)

# Shapes of inputs, with weights: views want at least 2-D data most of the time.
INPUT_SHAPES = [
    ((), 2), ((1,), 2), ((3,), 3), ((4,), 3), ((2, 3), 5), ((3, 4), 8), ((3, 3), 3),
    ((2, 3, 4), 5), ((1, 3), 2), ((3, 1), 2), ((2, 1, 3), 2), ((4, 2), 2),
]

# Scenario families and their weights (see the README). Every family gets hundreds of programs.
FAMILY_WEIGHTS = [
    ("base_inplace", 12),     # in-place on a non-leaf base; views taken before, read after
    ("view_inplace", 13),     # in-place on views (CopySlices); siblings and base read after
    ("view_chain", 11),       # views of views, non-contiguous views, in-place on the innermost
    ("multi_output", 8),      # split / chunk outputs modified in place or read
    ("no_grad", 9),           # views and in-place ops under no_grad, mixed with grad mode
    ("detach_alias", 8),      # detach() aliases as operands and as targets
    ("overlap", 7),           # operands that are views of the written tensor
    ("leaf", 7),              # in-place on leaves and on views of leaves
    ("version", 9),           # saved tensors modified through views, backward checks versions
    ("double_backward", 10),  # create_graph through in-place ops on views, then second order
    ("random", 7),            # everything mixed
]


class Stop(Exception):
    """A step raised a wanted error: the program ends there."""


class Reject(Exception):
    """The program is unusable (unwanted error, values out of range): draw it again."""


def prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def rnd(v):
    """Recorded values keep 12 significant digits (the replay compares to rtol 1e-9)."""
    return float("%.12g" % v)


def enc(t):
    """A tensor's value: shape, flat C-order values, requires_grad. Read through a copy: PyTorch
    may give a tensor without storage of its own (a second-order gradient that is an expanded
    zero), whose `tolist()` fails."""
    flat = t.detach().clone().reshape(-1).tolist()
    for v in flat:
        if not math.isfinite(v) or abs(v) > 1e4:
            raise Reject("value out of range")
    return {"s": list(t.shape), "d": [rnd(v) for v in flat], "rg": bool(t.requires_grad)}


def broadcasts_to(small, big):
    """Whether `small` broadcasts to exactly `big`."""
    if len(small) > len(big):
        return False
    for a, b in zip(reversed(small), reversed(big)):
        if a != b and a != 1:
            return False
    return True


def broadcast_shape(a, b):
    try:
        return tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError:
        return None


def same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


class Prog:
    # The errors a step may end the program with (a subclass widens them).
    WANTED_ERRORS = WANTED_ERRORS

    def __init__(self, rng, family, use_select):
        self.r = rng
        self.family = family
        self.use_select = use_select
        self.T = []  # torch tensor per var id (None for a gradient that is None)
        self.kind = []  # input const base view multi alias read loss grad
        self.root = []  # var id owning the storage (views, aliases), else the var itself
        self.steps = []
        self.inputs = []
        self.error = None
        self.quirk = None
        self.ng = False  # grad mode of the steps being emitted (True: under no_grad)

    # ----- bookkeeping ---------------------------------------------------------------------

    def add_var(self, t, kind, root=None):
        self.T.append(t)
        self.kind.append(kind)
        i = len(self.T) - 1
        self.root.append(i if root is None else self.root[root])
        return i

    def val(self, lo=0.5, hi=1.5, signed=True):
        v = round(self.r.uniform(lo, hi), 3)
        if signed and self.r.random() < 0.4:
            v = -v
        return v

    def live(self, pred=None):
        return [i for i, t in enumerate(self.T) if t is not None and self.kind[i] not in ("loss",)
                and (pred is None or pred(i))]

    def run(self, rec, fn, ng=None):
        """Runs one recorded step; returns fn's result. Errors stop (wanted) or reject."""
        ng = self.ng if ng is None else ng
        if ng:
            rec["ng"] = 1
        idx = len(self.steps)
        self.steps.append(rec)
        try:
            with torch.no_grad() if ng else contextlib.nullcontext():
                return fn()
        except (RuntimeError, IndexError, ValueError) as e:
            # PyTorch raises IndexError for dims and indices out of range, ValueError for some
            # loss sizes: errors of the program all the same.
            msg = str(e)
            if not any(w in msg for w in self.WANTED_ERRORS):
                raise Reject(msg)
            self.error = {"step": idx, "msg": msg}
            if msg.startswith("a leaf Variable") and rec.get("a") and \
                    self.T[rec["a"][0]]._is_view():
                # PyTorch calls a view of a base modified in place a leaf until something
                # regenerates the view's grad_fn (reading `.grad_fn` would make this op pass).
                self.quirk = "stale view treated as a leaf"
            raise Stop()

    @contextlib.contextmanager
    def no_grad(self, on=True):
        old = self.ng
        self.ng = on
        try:
            yield
        finally:
            self.ng = old

    # ----- leaves and constants ---------------------------------------------------------------

    def make_inputs(self, n=None, rg_prob=0.6, shapes=None):
        n = n or self.r.choice([1, 1, 2, 2, 2, 3])
        rgs = [self.r.random() < rg_prob for _ in range(n)]
        if not any(rgs):
            rgs[self.r.randrange(n)] = True
        for k in range(n):
            shape = shapes[k] if shapes and k < len(shapes) else self.pick_shape()
            data = [self.val() for _ in range(prod(shape))]
            t = torch.tensor(data).reshape(shape).clone().requires_grad_(rgs[k])
            i = self.add_var(t, "input")
            self.inputs.append({"s": list(shape), "d": data, "rg": rgs[k]})
        return list(range(n))

    def pick_shape(self, min_nd=0):
        shapes = [(s, w) for s, w in INPUT_SHAPES if len(s) >= min_nd]
        total = sum(w for _, w in shapes)
        x = self.r.uniform(0, total)
        for s, w in shapes:
            x -= w
            if x <= 0:
                return s
        return shapes[-1][0]

    def const(self, shape, lo=0.5, hi=1.5):
        data = [self.val(lo, hi) for _ in range(prod(shape))]
        t = torch.tensor(data).reshape(tuple(shape)).clone()
        i = self.add_var(t, "const")
        self.steps.append({"op": "const", "s": list(shape), "d": data, "o": [i]})
        return i

    def rg_inputs(self):
        return [i for i in range(len(self.inputs)) if self.T[i].requires_grad]

    # ----- out-of-place ops that make non-leaf bases ------------------------------------------

    def base(self, src=None, op=None):
        """A non-leaf base: an out-of-place op on an input (`x * 1`, `x.clone()`, `x + y`...)."""
        if src is None:
            src = self.r.choice(range(len(self.inputs)))
        t = self.T[src]
        # mostly ops that save nothing the later in-place ops could invalidate
        ops = ["mul1", "mul1", "mul1", "mul1", "copy", "copy", "copy", "copy", "add", "add",
               "add", "mul_scalar", "mul_scalar", "mul", "mul", "sin", "tanh", "exp"]
        op = op or self.r.choice(ops)
        if op == "exp" and t.max().item() > 2:
            op = "mul1"
        if op in ("add", "mul"):
            others = [i for i in self.live() if i != src
                      and broadcasts_to(self.T[i].shape, t.shape)]
            if not others:
                op = "copy"
            else:
                other = self.r.choice(others)
                return self.binary(op, src, other, kind="base")
        if op == "mul1":
            return self.unary("mul_scalar", src, {"s": 1.0}, kind="base")
        if op == "mul_scalar":
            return self.unary("mul_scalar", src, {"s": self.val()}, kind="base")
        return self.unary(op, src, {}, kind="base")

    # ----- views -----------------------------------------------------------------------------

    def view_kinds(self, src):
        t = self.T[src]
        nd = t.dim()
        kinds = ["expand", "detach"]
        if nd >= 1:
            kinds += ["narrow", "narrow"]
        if nd >= 2:
            kinds += ["transpose", "transpose", "permute"]
        if t.is_contiguous():
            kinds += ["reshape"]
        if any(s >= 2 for s in t.shape):
            kinds += ["split", "chunk"]
        if self.use_select and nd >= 1:
            kinds += ["select"]
        return kinds

    def view(self, src, kind=None, single=False, no_expand=False):
        """A view of `src`; returns the new var ids (several for split/chunk)."""
        t = self.T[src]
        shape = list(t.shape)
        nd = len(shape)
        kinds = self.view_kinds(src)
        if single:
            kinds = [k for k in kinds if k not in ("split", "chunk")]
        if no_expand:
            kinds = [k for k in kinds if k != "expand"]
        if kind is None or kind not in kinds:
            kind = self.r.choice(kinds)
        rec = {"op": kind, "a": [src]}
        if kind == "narrow":
            dims = [d for d in range(nd) if shape[d] >= 2] or list(range(nd))
            d = self.r.choice(dims)
            ln = self.r.randint(1, max(1, shape[d] - 1)) if shape[d] >= 2 else 1
            st = self.r.randint(0, shape[d] - ln)
            rec.update(dim=d, start=st, len=ln)
            fn = lambda: [t.narrow(d, st, ln)]
        elif kind == "select":
            d = self.r.randrange(nd)
            ix = self.r.randrange(shape[d])
            rec.update(dim=d, index=ix)
            fn = lambda: [t.select(d, ix)]
        elif kind == "transpose":
            d0, d1 = self.r.sample(range(nd), 2)
            rec.update(d0=d0, d1=d1)
            fn = lambda: [t.transpose(d0, d1)]
        elif kind == "permute":
            dims = list(range(nd))
            while dims == list(range(nd)):
                self.r.shuffle(dims)
            rec.update(dims=dims)
            fn = lambda: [t.permute(*dims)]
        elif kind == "expand":
            new = [self.r.choice([2, 3]) if s == 1 else s for s in shape]
            if new == shape or self.r.random() < 0.3:
                new = [self.r.choice([2, 3])] + new
            if self.r.random() < 0.03:
                new = list(shape)  # same shape: still a view in PyTorch
            rec.update(shape=new)
            fn = lambda: [t.expand(new)]
        elif kind == "reshape":
            new = self.reshape_target(shape)
            rec.update(shape=new)
            fn = lambda: [t.reshape(new)]
        elif kind == "split":
            d = self.r.choice([d for d in range(nd) if shape[d] >= 2])
            sizes = self.partition(shape[d])
            rec.update(sizes=sizes, dim=d)
            fn = lambda: list(t.split(sizes, d))
        elif kind == "chunk":
            d = self.r.choice([d for d in range(nd) if shape[d] >= 2])
            ch = self.r.randint(2, shape[d])
            rec.update(chunks=ch, dim=d)
            fn = lambda: list(t.chunk(ch, d))
        elif kind == "detach":
            fn = lambda: [t.detach()]
        else:
            raise AssertionError(kind)
        outs = self.run(rec, fn)
        vk = "multi" if kind in ("split", "chunk") else ("alias" if kind == "detach" else "view")
        ids = [self.add_var(o, vk, src) for o in outs]
        rec["o"] = ids
        rec["r"] = [enc(o) for o in outs]
        return ids

    def reshape_target(self, shape):
        n = prod(shape)
        cands = {
            1: [[], [1], [1, 1]],
            2: [[2], [1, 2], [2, 1]],
            3: [[3], [1, 3], [3, 1]],
            4: [[4], [2, 2], [1, 4]],
            6: [[6], [2, 3], [3, 2], [1, 6]],
            8: [[8], [2, 4], [4, 2], [2, 2, 2]],
            9: [[9], [3, 3], [1, 9]],
            12: [[12], [3, 4], [4, 3], [2, 6], [6, 2], [2, 2, 3]],
            16: [[16], [4, 4], [2, 8]],
            24: [[24], [4, 6], [6, 4], [2, 12], [4, 3, 2], [2, 3, 4], [3, 8]],
        }.get(n, [[n]])
        cands = [c for c in cands if c != list(shape)] or [[n]]
        return self.r.choice(cands)

    def partition(self, n):
        parts = []
        left = n
        while left > 0:
            p = self.r.randint(1, left if parts else max(1, left - 1))
            parts.append(p)
            left -= p
        return parts

    # ----- out-of-place ops ------------------------------------------------------------------

    UNARY = {
        "neg": lambda t, a: -t,
        "exp": lambda t, a: t.exp(),
        "log": lambda t, a: t.log(),
        "sqrt": lambda t, a: t.sqrt(),
        "tanh": lambda t, a: t.tanh(),
        "sigmoid": lambda t, a: t.sigmoid(),
        "sin": lambda t, a: t.sin(),
        "cos": lambda t, a: t.cos(),
        "pow": lambda t, a: t.pow(a["p"]),
        "mul_scalar": lambda t, a: t * a["s"],
        "add_scalar": lambda t, a: t + a["s"],
        "div_scalar": lambda t, a: t / a["s"],
        "rsub_scalar": lambda t, a: a["s"] - t,
        "rdiv_scalar": lambda t, a: a["s"] / t,
        "sum": lambda t, a: t.sum(),
        "mean": lambda t, a: t.mean(),
        "sum_dims": lambda t, a: t.sum(dim=a["dims"], keepdim=a["keepdim"]),
        "softmax": lambda t, a: torch.softmax(t, a["dim"]),
        "log_softmax": lambda t, a: torch.log_softmax(t, a["dim"]),
        "copy": lambda t, a: t.clone(),
        "contiguous": lambda t, a: t.contiguous(),
    }
    BINARY = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b,
        "matmul": lambda a, b: a.matmul(b),
    }

    def unary(self, op, src, attrs, kind="read"):
        t = self.T[src]
        rec = {"op": op, "a": [src]}
        rec.update(attrs)
        out = self.run(rec, lambda: self.UNARY[op](t, attrs))
        i = self.add_var(out, kind)
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def binary(self, op, a, b, kind="read"):
        ta, tb = self.T[a], self.T[b]
        rec = {"op": op, "a": [a, b]}
        out = self.run(rec, lambda: self.BINARY[op](ta, tb))
        i = self.add_var(out, kind)
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def listop(self, op, ids, dim):
        ts = [self.T[i] for i in ids]
        rec = {"op": op, "a": list(ids), "dim": dim}
        f = torch.cat if op == "cat" else torch.stack
        out = self.run(rec, lambda: f(ts, dim))
        i = self.add_var(out, "read")
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def read(self, src=None, op=None, prefer=None):
        """An out-of-place op reading `src` (an old view, a base...)."""
        if src is None:
            cands = prefer or self.live(
                lambda i: self.kind[i] in ("view", "multi", "base", "alias"))
            cands = cands or self.live()
            src = self.r.choice(cands)
        t = self.T[src]
        nd = t.dim()
        amin = t.detach().abs().min().item() if t.numel() else 1.0
        tmin = t.detach().min().item()
        tmax = t.detach().max().item()
        ops = ["neg", "tanh", "sigmoid", "sin", "cos", "pow", "mul_scalar", "add_scalar",
               "div_scalar", "rsub_scalar", "sum", "mean", "copy", "mul", "mul", "add", "sub",
               "mul", "div", "contiguous"]
        if tmax < 2.5:
            ops += ["exp"]
        if tmin > 0.25:
            ops += ["log", "sqrt"]
        if amin > 0.3:
            ops += ["rdiv_scalar"]
        if nd >= 1:
            ops += ["sum_dims", "softmax", "log_softmax", "cat", "stack"]
        if nd >= 2:
            ops += ["matmul", "matmul"]
        if nd == 0:
            ops += ["stack"]
        op = op if op in ops else self.r.choice(ops)
        if op == "pow":
            ps = [2.0, 3.0, 2.0]
            if tmin > 0.25:
                ps += [0.5, 1.5]
            if amin > 0.3:
                ps += [-1.0]
            return self.unary("pow", src, {"p": self.r.choice(ps)})
        if op in ("mul_scalar", "add_scalar", "div_scalar", "rsub_scalar", "rdiv_scalar"):
            return self.unary(op, src, {"s": self.val()})
        if op == "sum_dims":
            k = self.r.randint(1, nd)
            dims = sorted(self.r.sample(range(nd), k))
            return self.unary(op, src, {"dims": dims, "keepdim": self.r.random() < 0.4})
        if op in ("softmax", "log_softmax"):
            return self.unary(op, src, {"dim": self.r.randrange(nd)})
        if op in ("add", "sub", "mul", "div"):
            if op == "div":
                others = [i for i in self.live() if broadcast_shape(self.T[i].shape, t.shape)
                          is not None and self.T[i].numel() > 0
                          and self.T[i].detach().abs().min().item() > 0.3]
            else:
                others = [i for i in self.live()
                          if broadcast_shape(self.T[i].shape, t.shape) is not None]
            # Keep results small: the other operand may not grow the shape beyond 3-D / 24.
            others = [i for i in others if len(broadcast_shape(self.T[i].shape, t.shape)) <= 3
                      and prod(broadcast_shape(self.T[i].shape, t.shape)) <= 24]
            if not others or self.r.random() < 0.25:
                other = self.const(self.broadcast_partner(t.shape))
            else:
                other = self.r.choice(others)
            if self.r.random() < 0.5 or op == "div":
                return self.binary(op, src, other)
            return self.binary(op, other, src)
        if op == "matmul":
            if nd > 2:
                return self.unary("sum", src, {})
            m, k = t.shape
            others = [i for i in self.live() if self.T[i].dim() == 2 and self.T[i].shape[0] == k]
            if not others or self.r.random() < 0.3:
                other = self.const([k, self.r.choice([1, 2, 3])])
            else:
                other = self.r.choice(others)
            return self.binary("matmul", src, other)
        if op in ("cat", "stack"):
            return self.read_list(op, src)
        return self.unary(op, src, {})

    def broadcast_partner(self, shape):
        shape = list(shape)
        c = self.r.random()
        if c < 0.5 or not shape:
            return shape
        if c < 0.7:
            return shape[1:]
        if c < 0.85:
            return [1] * len(shape) if len(shape) <= 2 else shape[-1:]
        return [s if self.r.random() < 0.5 else 1 for s in shape]

    def read_list(self, op, src):
        t = self.T[src]
        nd = t.dim()
        if op == "cat":
            d = self.r.randrange(nd)
            cands = [i for i in self.live() if self.T[i].dim() == nd and all(
                a == b for j, (a, b) in enumerate(zip(self.T[i].shape, t.shape)) if j != d)]
        else:
            d = self.r.randint(0, nd)
            cands = [i for i in self.live() if tuple(self.T[i].shape) == tuple(t.shape)]
        ids = [src]
        for _ in range(self.r.randint(1, 2)):
            ids.append(self.r.choice(cands))
        self.r.shuffle(ids)
        return self.listop(op, ids, d)

    # ----- in-place ops ------------------------------------------------------------------------

    def operand(self, tgt, mode=None):
        """An operand for an in-place op on `tgt` (it broadcasts to `tgt`'s shape)."""
        t = self.T[tgt]
        shape = list(t.shape)
        modes = ["const", "const", "var", "var", "rg_input"]
        mode = mode or self.r.choice(modes)
        if mode == "rg_input":
            cands = [i for i in self.rg_inputs() if broadcasts_to(self.T[i].shape, shape)]
            if cands:
                return self.r.choice(cands)
            # a view of an rg input with a fitting shape, else a product with one
            mode = "var"
        if mode == "var":
            cands = [i for i in self.live() if i != tgt and broadcasts_to(self.T[i].shape, shape)
                     and self.kind[i] != "loss"]
            if self.family not in ("overlap", "random") and self.r.random() < 0.7:
                # aliasing operands are the overlap family's business, mostly
                cands = [i for i in cands if not same_storage(self.T[i], t)]
            if cands:
                return self.r.choice(cands)
        if mode == "self":
            return tgt
        if mode == "detach":
            return self.view(tgt, "detach")[0]
        if mode == "selfview":
            return self.self_view(tgt)
        return self.const(self.broadcast_partner(shape))

    def self_view(self, tgt):
        """A view of `tgt` (or of its base) that broadcasts to `tgt`: overlapping or not."""
        t = self.T[tgt]
        shape = list(t.shape)
        nd = len(shape)
        if nd == 0:
            return self.view(tgt, "detach")[0]
        c = self.r.random()
        d = self.r.randrange(nd)
        if c < 0.4 and shape[d] >= 2:
            # one slice along d, broadcast back over d: partial overlap
            st = self.r.randrange(shape[d])
            return self.view_rec(tgt, "narrow", dim=d, start=st, len=1)
        if c < 0.6:
            # identical view: full overlap, allowed
            return self.view_rec(tgt, "narrow", dim=d, start=0, len=shape[d])
        if c < 0.8:
            # a sibling view of the same root, same shape, shifted
            root = self.root[tgt]
            rt = self.T[root]
            if rt.dim() == t.dim():
                for dd in range(nd):
                    if rt.shape[dd] > shape[dd] and all(
                            rt.shape[j] == shape[j] for j in range(nd) if j != dd):
                        st = self.r.randint(0, rt.shape[dd] - shape[dd])
                        return self.view_rec(root, "narrow", dim=dd, start=st, len=shape[dd])
            return self.view(tgt, "detach")[0]
        # a slice expanded back: partial overlap through an expand
        if shape[d] >= 2:
            n = self.view_rec(tgt, "narrow", dim=d, start=self.r.randrange(shape[d]), len=1)
            return self.view_rec(n, "expand", shape=shape)
        return self.view(tgt, "detach")[0]

    def view_rec(self, src, op, **attrs):
        t = self.T[src]
        rec = {"op": op, "a": [src]}
        rec.update(attrs)
        if op == "narrow":
            fn = lambda: t.narrow(attrs["dim"], attrs["start"], attrs["len"])
        elif op == "expand":
            fn = lambda: t.expand(attrs["shape"])
        elif op == "transpose":
            fn = lambda: t.transpose(attrs["d0"], attrs["d1"])
        else:
            raise AssertionError(op)
        out = self.run(rec, fn)
        i = self.add_var(out, "view", src)
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def inplace(self, tgt, op=None, opnd=None, mode=None):
        """`tgt.op_(operand)`; returns tgt."""
        t = self.T[tgt]
        if op is None:
            op = self.r.choice(["add_", "sub_", "mul_", "mul_", "mul_", "div_", "fill_", "zero_",
                                "add_", "mul_"])
            if op == "zero_" and self.r.random() < 0.5:
                op = "mul_"
        if op in ("fill_", "zero_"):
            rec = {"op": op, "a": [tgt]}
            if op == "fill_":
                v = self.val()
                rec["value"] = v
                fn = lambda: t.fill_(v)
            else:
                fn = lambda: t.zero_()
            self.run(rec, fn)
            rec["r"] = [enc(t)]
            return tgt
        if opnd is None:
            opnd = self.operand(tgt, mode)
        o = self.T[opnd]
        if op == "div_" and (o.numel() == 0 or o.detach().abs().min().item() < 0.3):
            op = "mul_"
        if op == "mul_" and t.detach().abs().max().item() * o.detach().abs().max().item() > 50:
            op = "add_"
        rec = {"op": op, "a": [tgt, opnd]}
        expected = None
        if same_storage(t, o):
            with torch.no_grad():
                ta, tb = t.detach().clone(), o.detach().clone()
                expected = {"add_": ta + tb, "sub_": ta - tb, "mul_": ta * tb, "div_": ta / tb}[op]
        fn = {"add_": lambda: t.add_(o), "sub_": lambda: t.sub_(o), "mul_": lambda: t.mul_(o),
              "div_": lambda: t.div_(o)}[op]
        self.run(rec, fn)
        if expected is not None and not torch.allclose(t.detach(), expected, rtol=1e-14,
                                                       atol=1e-14):
            # PyTorch accepted an aliasing operand whose result depends on the kernel's order.
            raise Reject("ill-defined aliasing")
        rec["r"] = [enc(t)]
        return tgt

    # ----- the end: a loss and gradients -----------------------------------------------------

    def check(self):
        ids = self.live(lambda i: self.kind[i] != "const")
        rec = {"op": "check", "a": ids, "r": [enc(self.T[i]) for i in ids]}
        self.steps.append(rec)

    def loss(self, ids):
        ts = [self.T[i] for i in ids]
        cs = [[self.val() for _ in range(t.numel())] for t in ts]
        rec = {"op": "loss", "a": list(ids), "c": cs}

        def fn():
            total = None
            for t, c in zip(ts, cs):
                term = (t * torch.tensor(c).reshape(t.shape)).sum()
                total = term if total is None else total + term
            return total

        out = self.run(rec, fn)
        i = self.add_var(out, "loss")
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def pick_loss_vars(self, must=(), avoid=()):
        live = self.live(lambda i: self.kind[i] not in ("const", "grad") and i not in avoid)
        rg = [i for i in live if self.T[i].requires_grad]
        if not rg:
            return None
        n = self.r.randint(1, 4)
        # recent and interesting variables first
        weights = [(1 + (3 if self.kind[i] in ("view", "multi", "base", "alias") else 0))
                   * (1 + j / len(live)) for j, i in enumerate(live)]
        chosen = []
        for _ in range(n):
            x = self.r.uniform(0, sum(weights))
            for i, w in zip(live, weights):
                x -= w
                if x <= 0:
                    if i not in chosen:
                        chosen.append(i)
                    break
        for i in must:
            if i not in chosen and self.T[i] is not None:
                chosen.append(i)
        if not any(self.T[i].requires_grad for i in chosen):
            chosen.append(self.r.choice(rg))
        return chosen

    def end(self, mode=None, must=(), avoid=()):
        self.check()
        mode = mode or self.r.choice(["backward", "grad"])
        ids = self.pick_loss_vars(must, avoid)
        if ids is None:
            return
        L = self.loss(ids)
        if mode == "backward":
            rec = {"op": "backward", "a": [L]}
            self.run(rec, lambda: self.T[L].backward())
            gr = {}
            for i, t in enumerate(self.T):
                if t is not None and t.grad is not None:
                    gr[str(i)] = enc(t.grad)
            rec["gr"] = gr
            return
        wrt = self.rg_inputs()
        self.grad_step(L, wrt, True)
        gs = [i for i in range(len(self.T)) if self.kind[i] == "grad" and self.T[i] is not None]
        if self.family == "double_backward" and gs and self.r.random() < 0.3:
            # modify a gradient in place through a view before the second order
            g = self.r.choice(gs)
            if self.T[g].dim() >= 1 and self.T[g].requires_grad:
                v = self.view(g, self.r.choice(["narrow", "transpose", "reshape", "narrow"]),
                              single=True, no_expand=True)[0]
                self.inplace(v, self.r.choice(["mul_", "add_", "mul_"]),
                             mode=self.r.choice(["const", "rg_input", "var"]))
        if not any(self.T[i].requires_grad for i in gs):
            return
        L2 = self.loss(gs)
        self.grad_step(L2, wrt, False)

    def grad_step(self, L, wrt, create_graph):
        rec = {"op": "grad", "a": [L], "wrt": list(wrt), "cg": create_graph}
        res = self.run(rec, lambda: torch.autograd.grad(
            self.T[L], [self.T[i] for i in wrt], create_graph=create_graph, allow_unused=True))
        ids = []
        for g in res:
            ids.append(self.add_var(g, "grad"))
        rec["o"] = ids
        rec["r"] = [None if g is None else enc(g) for g in res]


# ----- the families ---------------------------------------------------------------------------

def some_views(p, src, n, single=True, no_expand=False):
    out = []
    for _ in range(n):
        out += p.view(src, single=single, no_expand=no_expand)
    return out


def fam_base_inplace(p):
    p.make_inputs()
    b = p.base()
    views = some_views(p, b, p.r.randint(1, 3))
    if p.r.random() < 0.3:
        p.read(p.r.choice(views))
    for _ in range(p.r.randint(1, 3)):
        p.inplace(b)
        if p.r.random() < 0.4:
            views += some_views(p, b, 1)
    for _ in range(p.r.randint(1, 3)):
        p.read(p.r.choice(views + [b]))
    p.end()


def writable_view(p, src, depth=1):
    """A chain of `depth` single views of src, avoiding expand (in-place on it is refused)."""
    v = src
    for _ in range(depth):
        kinds = [k for k in p.view_kinds(v) if k not in ("split", "chunk", "expand", "detach")]
        if not kinds:
            break
        v = p.view(v, p.r.choice(kinds))[0]
    return v


def fam_view_inplace(p):
    p.make_inputs(rg_prob=0.7)
    plain = [i for i in range(len(p.inputs)) if not p.T[i].requires_grad]
    b = p.r.choice(plain) if plain and p.r.random() < 0.15 else p.base()
    if p.T[b].dim() == 0:
        b = p.view(b, "expand")[0] if p.r.random() < 0.3 else p.base(p.rg_inputs()[0])
    sib = some_views(p, b, p.r.randint(0, 2))
    v = writable_view(p, b)
    if p.r.random() < 0.4:
        p.read(v)
    p.inplace(v, mode=p.r.choice(["const", "var", "rg_input", "rg_input"]))
    for s in sib:
        if p.r.random() < 0.7:
            p.read(s)
    if p.r.random() < 0.5:
        p.read(b)
    if sib and p.r.random() < 0.4:
        s = [s for s in sib if p.kind[s] == "view"]
        if s:
            p.inplace(p.r.choice(s))
    if p.r.random() < 0.3:
        p.inplace(b)
    for _ in range(p.r.randint(0, 2)):
        p.read(p.r.choice([v, b] + sib))
    p.end()


def fam_view_chain(p):
    p.make_inputs(rg_prob=0.7, shapes=[p.pick_shape(min_nd=2)])
    b = p.base(0) if p.T[0].requires_grad or p.r.random() < 0.5 else p.base()
    chain = [b]
    for _ in range(p.r.randint(2, 3)):
        k = p.r.choice(["transpose", "permute", "narrow", "narrow", "reshape", "transpose"]
                       + (["expand"] if p.r.random() < 0.08 else []))
        chain += p.view(chain[-1], k, single=True)
    tgt = p.r.choice(chain[1:]) if p.r.random() < 0.3 else chain[-1]
    p.inplace(tgt, mode=p.r.choice(["const", "var", "rg_input"]))
    for c in chain:
        if p.r.random() < 0.5:
            p.read(c)
    if p.r.random() < 0.2:
        p.inplace(p.r.choice(chain))
    p.end()


def fam_multi_output(p):
    p.make_inputs(rg_prob=0.6, shapes=[p.pick_shape(min_nd=1)])
    src = p.base(0) if p.r.random() < 0.7 else 0
    if not any(s >= 2 for s in p.T[src].shape):
        src = p.view(src, "expand")[0]
    ng = p.r.random() < 0.15
    with p.no_grad(ng):
        parts = p.view(src, p.r.choice(["split", "chunk"]))
    if p.r.random() < 0.5:
        p.read(p.r.choice(parts))
    c = p.r.random()
    tgt = p.r.choice(parts)
    if c < 0.25:
        tgt = p.view(tgt, single=True, no_expand=True)[0]
    if c < 0.5:
        with p.no_grad(p.r.random() < 0.4):
            p.inplace(tgt, mode=p.r.choice(["const", "var", "rg_input"]))
    for q in parts:
        if p.r.random() < 0.5:
            p.read(q)
    if p.r.random() < 0.3 and all(p.T[q].dim() >= 1 for q in parts):
        dim = next(s for s in reversed(p.steps) if s["op"] in ("split", "chunk"))["dim"]
        p.listop("cat", parts, dim)
    p.end()


def fam_no_grad(p):
    p.make_inputs(rg_prob=0.7)
    scenario = p.r.random()
    if scenario < 0.25:
        # everything touching the no_grad views stays under no_grad; the base is used with grad
        b = p.base()
        with p.no_grad():
            vs = some_views(p, b, p.r.randint(1, 2), single=p.r.random() < 0.8,
                            no_expand=p.r.random() < 0.8)
            for _ in range(p.r.randint(1, 2)):
                p.inplace(p.r.choice(vs) if p.r.random() < 0.7 else b)
            for _ in range(p.r.randint(0, 2)):
                p.read(p.r.choice(vs))
        p.read(b)
        p.end(avoid=vs)
        return
    if scenario < 0.45:
        # no_grad views of a tensor that does not require grad, written in grad mode
        plain = [i for i in range(len(p.inputs)) if not p.T[i].requires_grad]
        b = plain[0] if plain else p.const(list(p.pick_shape(min_nd=1)))
        with p.no_grad():
            vs = some_views(p, b, p.r.randint(1, 2), single=True, no_expand=p.r.random() < 0.8)
        for _ in range(p.r.randint(1, 2)):
            p.inplace(p.r.choice(vs), mode=p.r.choice(["const", "const", "var", "rg_input"]))
        for _ in range(p.r.randint(1, 2)):
            p.read(p.r.choice(vs + [b]))
        p.end()
        return
    if scenario < 0.65:
        # views taken with grad, written under no_grad (or their base is), read with grad
        b = p.base()
        gv = some_views(p, b, p.r.randint(1, 2), no_expand=p.r.random() < 0.8)
        if p.r.random() < 0.5:
            p.read(p.r.choice(gv))
        with p.no_grad():
            p.inplace(p.r.choice(gv) if p.r.random() < 0.6 else b)
        for _ in range(p.r.randint(1, 3)):
            p.read(p.r.choice(gv + [b]))
        p.end()
        return
    b = p.base() if p.r.random() < 0.8 else p.r.choice(range(len(p.inputs)))
    with p.no_grad():
        vs = some_views(p, b, p.r.randint(1, 2), single=p.r.random() < 0.8,
                        no_expand=p.r.random() < 0.8)
    gv = some_views(p, b, p.r.randint(0, 1), no_expand=p.r.random() < 0.8)
    for _ in range(p.r.randint(1, 2)):
        c = p.r.random()
        if c < 0.2:
            p.inplace(p.r.choice(vs))  # grad mode on a no_grad view
        elif c < 0.5:
            with p.no_grad():
                p.inplace(p.r.choice(vs))
        elif c < 0.7:
            with p.no_grad():
                p.inplace(b)
        elif gv:
            with p.no_grad(p.r.random() < 0.7):
                p.inplace(p.r.choice(gv))
        else:
            p.read(p.r.choice(vs))
    for _ in range(p.r.randint(1, 3)):
        src = p.r.choice(vs + gv + [b, b])
        with p.no_grad(src in vs and p.r.random() < 0.5):
            p.read(src)
    p.end()


def fam_detach_alias(p):
    p.make_inputs(rg_prob=0.7)
    b = p.base() if p.r.random() < 0.8 else p.r.choice(p.rg_inputs())
    if p.r.random() < 0.5:
        p.read(b)  # something that may save b
    c = p.r.random()
    if c < 0.3:
        # y.mul_(y.detach()) and friends
        tgt = b if p.kind[b] != "input" else p.base(b)
        p.inplace(tgt, p.r.choice(["mul_", "add_", "div_", "mul_"]), mode="detach")
    elif c < 0.55:
        # in-place on a detached alias (shares the version counter)
        d = p.view(b, "detach")[0]
        if p.r.random() < 0.4:
            d = writable_view(p, d)
        with p.no_grad(p.r.random() < 0.3):
            p.inplace(d)
    elif c < 0.75:
        # the detached alias of a view, as the operand of an in-place op on the view
        v = writable_view(p, b)
        d = p.view(v, "detach")[0]
        tgt = v if p.kind[b] != "input" else p.base(b)
        if p.kind[b] == "input":
            d = p.view(tgt, "detach")[0]
        p.inplace(tgt, opnd=d)
    else:
        # a view of a detached alias, modified, then the original read
        d = p.view(b, "detach")[0]
        v = writable_view(p, d)
        p.inplace(v, mode=p.r.choice(["const", "rg_input"]))
    for _ in range(p.r.randint(1, 2)):
        p.read(p.r.choice(p.live(lambda i: p.kind[i] in ("view", "alias", "base", "input"))))
    p.end()


def fam_overlap(p):
    p.make_inputs(rg_prob=0.6, shapes=[p.pick_shape(min_nd=1)])
    b = p.base(0) if p.r.random() < 0.75 else 0
    if p.kind[b] == "input" and p.T[b].requires_grad:
        b = p.base(b)
    c = p.r.random()
    if c < 0.12:
        # written-to tensor with internal overlap (an expanded view)
        n = p.view(b, "narrow") [0] if p.T[b].dim() >= 1 else b
        e = p.view(n, "expand")[0]
        with p.no_grad(p.r.random() < 0.3):
            p.inplace(e)
    else:
        tgt = b if p.r.random() < 0.5 else writable_view(p, b)
        mode = p.r.choice(["selfview", "selfview", "selfview", "self", "detach"])
        with p.no_grad(p.r.random() < 0.2):
            p.inplace(tgt, p.r.choice(["mul_", "add_", "sub_", "div_", "mul_"]), mode=mode)
    for _ in range(p.r.randint(1, 2)):
        p.read()
    p.end()


def fam_leaf(p):
    p.make_inputs(rg_prob=0.8)
    c = p.r.random()
    rg = p.rg_inputs()
    x = p.r.choice(rg)
    if c < 0.2:
        with p.no_grad(p.r.random() < 0.5):
            p.inplace(x)
    elif c < 0.4:
        v = writable_view(p, x)
        with p.no_grad(p.r.random() < 0.5):
            p.inplace(v)
    elif c < 0.55:
        with p.no_grad():
            v = writable_view(p, x)
        with p.no_grad(p.r.random() < 0.5):
            p.inplace(v)
    elif c < 0.7:
        # a plain leaf (no grad) written with a requires-grad operand, directly or via a view
        plain = [i for i in range(len(p.inputs)) if not p.T[i].requires_grad]
        z = plain[0] if plain else p.const(list(p.T[x].shape))
        tgt = z if p.r.random() < 0.4 else writable_view(p, z)
        p.inplace(tgt, p.r.choice(["mul_", "add_", "sub_"]), mode="rg_input")
        p.read(z)
    else:
        # a leaf updated under no_grad (an optimizer step) after it was used
        y = p.read(x)
        with p.no_grad():
            p.inplace(x, p.r.choice(["add_", "sub_", "mul_"]))
        p.read(y)
    for _ in range(p.r.randint(1, 2)):
        p.read()
    p.end()


def fam_version(p):
    p.make_inputs(rg_prob=0.7)
    b = p.base()
    src = b if p.r.random() < 0.5 else writable_view(p, b)
    r = p.read(src, p.r.choice(["sin", "mul", "pow", "exp", "tanh", "sigmoid", "div", "matmul",
                                "cos", "log_softmax", "softmax"]))
    c = p.r.random()
    if c < 0.4:
        tgt = writable_view(p, b) if p.r.random() < 0.7 else b
        with p.no_grad(p.r.random() < 0.3):
            p.inplace(tgt)
    elif c < 0.7 and p.T[r].dim() >= 1:
        tgt = writable_view(p, r)
        p.inplace(tgt)
    else:
        d = p.view(b, "detach")[0]
        p.inplace(d if p.r.random() < 0.5 else writable_view(p, d))
    if p.r.random() < 0.5:
        p.read()
    p.end(must=[r] if p.r.random() < 0.8 else [])


def fam_double_backward(p):
    p.make_inputs(rg_prob=0.8)
    b = p.base(p.r.choice(p.rg_inputs()), p.r.choice(["mul1", "copy", "sin", "tanh", "mul"]))
    if p.T[b].dim() == 0:
        b = p.view(b, "expand")[0]
        b = p.base(b, "copy")
    for _ in range(p.r.randint(1, 2)):
        v = writable_view(p, b, p.r.randint(1, 2))
        p.inplace(v, p.r.choice(["mul_", "mul_", "div_", "add_"]),
                  mode=p.r.choice(["rg_input", "var", "rg_input"]))
    for _ in range(p.r.randint(1, 2)):
        p.read(op=p.r.choice(["mul", "sin", "pow", "exp", "tanh", "matmul", "softmax", None]))
    p.end("grad")


def fam_random(p):
    p.make_inputs()
    p.base()
    for _ in range(p.r.randint(4, 10)):
        c = p.r.random()
        cands = p.live(lambda i: p.kind[i] != "const")
        src = p.r.choice(cands)
        ng = p.r.random() < 0.15
        with p.no_grad(ng):
            if c < 0.3:
                p.view(src)
            elif c < 0.6:
                if p.kind[src] == "input" and p.T[src].requires_grad and not ng \
                        and p.r.random() < 0.8:
                    src = p.base(src)
                p.inplace(src)
            elif c < 0.9:
                p.read(src)
            else:
                p.base()
    p.end()


FAMILIES = {
    "base_inplace": fam_base_inplace,
    "view_inplace": fam_view_inplace,
    "view_chain": fam_view_chain,
    "multi_output": fam_multi_output,
    "no_grad": fam_no_grad,
    "detach_alias": fam_detach_alias,
    "overlap": fam_overlap,
    "leaf": fam_leaf,
    "version": fam_version,
    "double_backward": fam_double_backward,
    "random": fam_random,
}


def generate(seed, count, use_select, family_weights=FAMILY_WEIGHTS, families=FAMILIES,
             prog_class=Prog):
    """The programs of `families` (name -> builder) in the mix `family_weights`, built on
    `prog_class` (`Prog` or a subclass): the views corpus by default, the ops corpus from `gen_ops.py`."""
    rng = random.Random(seed)
    names = [n for n, _ in family_weights]
    weights = [w for _, w in family_weights]
    # an exact mix: each family gets its share of `count`, in a shuffled order
    total = sum(weights)
    plan = []
    for n, w in family_weights:
        plan += [n] * round(count * w / total)
    while len(plan) < count:
        plan.append(rng.choices(names, weights)[0])
    plan = plan[:count]
    rng.shuffle(plan)
    rejects = collections.Counter()
    for pid, fam in enumerate(plan):
        while True:
            p = prog_class(random.Random(rng.getrandbits(64)), fam, use_select)
            try:
                families[fam](p)
            except Stop:
                pass
            except Reject as e:
                rejects[str(e)[:90]] += 1
                continue
            break
        prog = {"id": pid, "family": fam, "inputs": p.inputs, "steps": p.steps}
        if p.error:
            prog["error"] = p.error
        if p.quirk:
            prog["quirk"] = p.quirk
        yield prog
    sys.stderr.write("rejected programs: %d\n" % sum(rejects.values()))
    for k, v in rejects.most_common(12):
        sys.stderr.write("  %5d  %s\n" % (v, k))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--count", type=int, default=6000)
    ap.add_argument("--out", default="tests/corpus/views_inplace.jsonl.gz")
    ap.add_argument("--no-select", dest="select", action="store_false",
                    help="draw no Tensor.select views (for a replay without Tensor::select)")
    args = ap.parse_args()
    fams = collections.Counter()
    errs = collections.Counter()
    errmsg = collections.Counter()
    n = 0
    # no file name or time in the gzip header: the same seed gives the same bytes
    with open(args.out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                                  mtime=0) as raw:
        header = {"header": {"generator": "tests/corpus/gen_views_inplace.py", "seed": args.seed,
                             "count": args.count, "select": args.select,
                             "torch": torch.__version__,
                             "families": dict(FAMILY_WEIGHTS)}}
        raw.write((json.dumps(header) + "\n").encode())
        for prog in generate(args.seed, args.count, args.select):
            raw.write((json.dumps(prog, separators=(",", ":")) + "\n").encode())
            n += 1
            fams[prog["family"]] += 1
            if "error" in prog:
                errs[prog["family"]] += 1
                m = prog["error"]["msg"]
                key = next(w for w in WANTED_ERRORS if w in m)
                errmsg[key[:70]] += 1
    sys.stderr.write("programs: %d, ending in an error: %d (%.1f%%)\n"
                     % (n, sum(errs.values()), 100.0 * sum(errs.values()) / max(n, 1)))
    for f, _ in FAMILY_WEIGHTS:
        sys.stderr.write("  %-16s %5d programs, %4d errors\n" % (f, fams[f], errs[f]))
    for k, v in errmsg.most_common():
        sys.stderr.write("  %5d  %s\n" % (v, k))


if __name__ == "__main__":
    main()
