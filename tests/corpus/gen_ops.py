#!/usr/bin/env python3
"""Records random programs of out-of-place ops from PyTorch, for `tests/corpus/main.rs`
(its `ops_corpus_matches_pytorch` test): the ops' own semantics, where the views + in-place
corpus (`gen_views_inplace.py`, whose program builder and op language this reuses) looks at
aliasing. Families:

* `kinks`: relu, abs, clamp (one or both bounds), pow, sqrt, erf, reciprocal, sigmoid on inputs
  that hold exact zeros and exact clamp bounds, where a gradient is a convention (PyTorch's:
  relu'(0) = 0, abs'(0) = 0, clamp passes the gradient at a bound);
* `reduce`: max over a dim (with ties, which PyTorch breaks by the first maximum), mean, sum
  over dims with and without keepdim, softmax and log_softmax over every dim;
* `matmul`: every rank pairing of `matmul` up to 3-D, batch dims broadcast;
* `index`: index_select with repeated indices (gradients accumulate), select, narrow, cat and
  stack over every dim;
* `broadcast`: chains of binary ops whose operands broadcast both ways, 0-d included;
* `nn`: `torch.nn.functional`'s gelu (both forms), leaky_relu, mse_loss, cross_entropy (class
  weights, ignore_index, label smoothing), nll_loss, binary_cross_entropy_with_logits (weights,
  pos_weight), layer_norm, max_pool2d over windows with ties, avg_pool2d (padding, ceil_mode,
  count_include_pad, divisor_override) and conv2d (stride, padding, dilation, groups), with
  every reduction;
* `nn_errors`: a mistake in a `torch.nn.functional` call (targets, class weights, layer_norm
  and conv2d shapes, pool sizes), with PyTorch's error text;
* `empty`: tensors with a dim of size 0 through broadcasting, reductions, softmax, matmul
  (an empty inner dim gives zeros), cat with empty parts, index_select with no index, stack;
* `numerics`: softmax, log_softmax, cross_entropy, nll_loss, BCE with logits, sigmoid and tanh
  on logits up to ±750, where a naive formula overflows;
* `casts`: float64 to float32 and back inside a program (the float32 part compared at float32's
  tolerance), gradients cast back;
* `accumulate`: `backward(retain_graph=True)` twice (gradients add up), `backward(inputs=...)`
  on a subset, and a `grad` after them;
* `modules`: `nn.Linear` (1-D, 2-D and 3-D inputs, with and without bias) and `nn.Embedding`
  (repeated indices, index shapes, a padding index whose row gets no gradient);
* `errors`: a shape mistake at the last step (operands that do not broadcast, matmul sizes at
  every rank, cat and stack sizes, a dim out of range), with PyTorch's error text.

Programs end with `backward()` of a weighted sum, or `grad(create_graph=True)` followed by a
second-order `grad`, as in the views corpus.

    /tmp/torchenv/bin/python tests/corpus/gen_ops.py \
        --seed 20261127 --count 6000 --out tests/corpus/ops.jsonl.gz
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
import torch.nn.functional as F  # noqa: E402

# The shape errors the `errors` family provokes (substrings of PyTorch's messages).
SHAPE_ERRORS = (
    "must match the size of tensor b",
    "shapes cannot be multiplied",
    "inconsistent tensor size",
    "Sizes of tensors must match except in dimension",
    "stack expects each tensor to be equal size",
    "Dimension out of range",
    "size mismatch",
    "Expected size for first two dimensions of batch2 tensor",
    "Target ",
    "Expected input batch_size",
    "weight tensor should be defined either for all",
    "Given normalized_shape=",
    "Expected weight to be of same shape as normalized_shape",
    "Given groups=",
    "Given weight of size",
    "Kernel size can't be greater than actual input size",
    "Output size is too small",
    "pad should be at most half of effective kernel size",
    "Target size (",
)
FAMILY_WEIGHTS = [
    ("kinks", 20),
    ("reduce", 18),
    ("matmul", 16),
    ("index", 16),
    ("broadcast", 15),
    ("errors", 15),
    ("nn", 25),
    ("nn_errors", 10),
    ("empty", 8),
    ("numerics", 10),
    ("casts", 8),
    ("accumulate", 8),
    ("modules", 8),
]


class OpsProg(Prog):
    WANTED_ERRORS = Prog.WANTED_ERRORS + SHAPE_ERRORS
    UNARY = dict(Prog.UNARY)
    UNARY.update({
        "relu": lambda t, a: t.relu(),
        "abs": lambda t, a: t.abs(),
        "erf": lambda t, a: t.erf(),
        "reciprocal": lambda t, a: t.reciprocal(),
        "sub_scalar": lambda t, a: t - a["s"],
        "clamp": lambda t, a: t.clamp(a["min"], a["max"]),
        "index_select": lambda t, a: t.index_select(a["dim"], torch.tensor(a["index"], dtype=torch.long)),
        "to_dtype": lambda t, a: t.to(getattr(torch, a["dtype"])),
        "select": lambda t, a: t.select(a["dim"], a["index"]),
        "narrow": lambda t, a: t.narrow(a["dim"], a["start"], a["len"]),
    })

    def inputs_with(self, shapes, kinks=False, rg_prob=0.85):
        """Leaves of `shapes`; with `kinks`, some values are exact zeros, halves and ones."""
        rgs = [self.r.random() < rg_prob for _ in shapes]
        if not any(rgs):
            rgs[0] = True
        ids = []
        for shape, rg in zip(shapes, rgs):
            data = []
            for _ in range(prod(shape)):
                if kinks and self.r.random() < 0.35:
                    data.append(self.r.choice([0.0, 0.0, 0.5, -0.5, 1.0, -1.0]))
                else:
                    data.append(self.val())
            t = torch.tensor(data).reshape(shape).clone().requires_grad_(rg)
            ids.append(self.add_var(t, "input"))
            self.inputs.append({"s": list(shape), "d": data, "rg": rg})
        return ids

    def nn_step(self, op, args, attrs, fn):
        """A `torch.nn.functional` step over the variables `args`, attributes recorded as given."""
        rec = {"op": op, "a": list(args)}
        rec.update(attrs)
        out = self.run(rec, fn)
        i = self.add_var(out, "read")
        rec["o"] = [i]
        rec["r"] = [enc(out)]
        return i

    def max_dim(self, src, dim, keepdim):
        t = self.T[src]
        rec = {"op": "max_dim", "a": [src], "dim": dim, "keepdim": keepdim}
        out = self.run(rec, lambda: t.max(dim=dim, keepdim=keepdim))
        i = self.add_var(out.values, "read")
        rec["o"] = [i]
        rec["r"] = [enc(out.values)]
        rec["ix"] = out.indices.reshape(-1).tolist()
        return i

    def pointwise(self, src):
        t = self.T[src]
        op = self.r.choice(["relu", "abs", "clamp", "clamp", "pow", "erf", "sigmoid", "tanh",
                            "reciprocal", "sqrt", "sub_scalar", "mul_scalar"])
        lo = t.detach().abs().min().item() if t.numel() else 1.0
        tmin = t.detach().min().item() if t.numel() else 1.0
        if op == "reciprocal" and lo < 0.3:
            op = "abs"
        if op == "sqrt" and tmin < 0.25:
            op = "relu"
        if op == "clamp":
            bounds = self.r.choice([(-0.5, 0.5), (0.0, None), (None, 0.5), (-1.0, 1.0),
                                    (None, 0.0), (0.5, None)])
            return self.unary("clamp", src, {"min": bounds[0], "max": bounds[1]})
        if op == "pow":
            ps = [2.0, 3.0]
            if lo > 0.3:
                ps += [-1.0, -2.0]
            if tmin > 0.25:
                ps += [0.5, 1.5]
            return self.unary("pow", src, {"p": self.r.choice(ps)})
        if op in ("sub_scalar", "mul_scalar"):
            return self.unary(op, src, {"s": self.r.choice([0.5, -1.0, 1.0, self.val()])})
        return self.unary(op, src, {})


def fam_kinks(p):
    ids = p.inputs_with([p.pick_shape() for _ in range(p.r.randint(1, 2))], kinks=True)
    cur = p.r.choice(ids)
    for _ in range(p.r.randint(2, 5)):
        cur = p.pointwise(cur)
        if p.r.random() < 0.3:
            others = [i for i in p.live() if gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)
                      and prod(gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)) <= 24]
            if others:
                cur = p.binary(p.r.choice(["add", "mul", "sub"]), cur, p.r.choice(others))
    p.end()


def fam_reduce(p):
    shape = p.r.choice([(3,), (2, 3), (3, 4), (2, 3, 4), (4, 1, 3), (1, 4)])
    (x,) = p.inputs_with([shape])
    if p.r.random() < 0.5:
        # ties: equal values along some dim
        x = p.unary("pow", x, {"p": 2.0}) if p.r.random() < 0.5 else x
        x = p.unary("clamp", x, {"min": None, "max": 0.7})
    for _ in range(p.r.randint(1, 3)):
        t = p.T[x]
        nd = t.dim()
        c = p.r.random()
        if nd == 0:
            x = p.pointwise(x)
        elif c < 0.35:
            x = p.max_dim(x, p.r.randrange(nd), p.r.random() < 0.4)
        elif c < 0.55:
            k = p.r.randint(1, nd)
            x = p.unary("sum_dims", x, {"dims": sorted(p.r.sample(range(nd), k)),
                                        "keepdim": p.r.random() < 0.5})
        elif c < 0.8:
            x = p.unary(p.r.choice(["softmax", "log_softmax"]), x, {"dim": p.r.randrange(nd)})
        elif c < 0.9:
            x = p.unary("mean", x, {})
        else:
            x = p.pointwise(x)
    p.end()


def fam_matmul(p):
    pairs = [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 2)),
             ((3,), (2, 3, 2)), ((2, 2, 3), (3,)), ((2, 2, 3), (2, 3, 2)), ((1, 2, 3), (2, 3, 2)),
             ((2, 2, 3), (1, 3, 2)), ((2, 3), (2, 3, 1))]
    sa, sb = p.r.choice(pairs)
    a, b = p.inputs_with([sa, sb])
    out = p.binary("matmul", a, b)
    if p.r.random() < 0.5 and p.T[out].dim() >= 1:
        out = p.pointwise(out)
    if p.r.random() < 0.3 and p.T[out].dim() == 2:
        k = p.T[out].shape[1]
        c = p.const([k, p.r.choice([1, 2])])
        out = p.binary("matmul", out, c)
    p.end()


def fam_index(p):
    shape = p.r.choice([(3,), (2, 3), (3, 4), (2, 3, 2), (4, 2)])
    ids = p.inputs_with([shape, shape] if p.r.random() < 0.4 else [shape])
    cur = ids[0]
    for _ in range(p.r.randint(1, 3)):
        t = p.T[cur]
        nd = t.dim()
        if nd == 0:
            cur = p.pointwise(cur)
            continue
        c = p.r.random()
        d = p.r.randrange(nd)
        n = t.shape[d]
        if c < 0.4:
            index = [p.r.randrange(n) for _ in range(p.r.randint(1, 5))]
            cur = p.unary("index_select", cur, {"dim": d, "index": index})
        elif c < 0.55:
            cur = p.unary("select", cur, {"dim": d, "index": p.r.randrange(n)})
        elif c < 0.7 and n >= 2:
            ln = p.r.randint(1, n - 1)
            cur = p.unary("narrow", cur, {"dim": d, "start": p.r.randint(0, n - ln), "len": ln})
        else:
            same = [i for i in p.live() if tuple(p.T[i].shape) == tuple(t.shape)]
            parts = [cur] + [p.r.choice(same) for _ in range(p.r.randint(1, 2))]
            if p.r.random() < 0.5:
                cur = p.listop("cat", parts, d)
            else:
                cur = p.listop("stack", parts, p.r.randint(0, nd))
    p.end()


def fam_broadcast(p):
    big = p.r.choice([(2, 3), (3, 4), (2, 3, 4), (2, 1, 3), (4, 1)])
    partners = [(), (1,), big[-1:], big, tuple(1 for _ in big)]
    if len(big) >= 2:
        partners += [big[1:], (big[0],) + (1,) * (len(big) - 1)]
    if big == (4, 1):
        partners += [(3,), (1, 3)]
    shapes = [big, p.r.choice(partners)]
    if p.r.random() < 0.4:
        shapes.append(p.r.choice(partners))
    p.r.shuffle(shapes)
    ids = p.inputs_with(shapes)
    cur = ids[0]
    for _ in range(p.r.randint(2, 5)):
        op = p.r.choice(["add", "sub", "mul", "mul", "div"])
        cands = [i for i in p.live() if gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)
                 and prod(gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)) <= 24]
        other = p.r.choice(cands)
        a, b = (cur, other) if p.r.random() < 0.5 else (other, cur)
        if op == "div" and p.T[b].detach().abs().min().item() < 0.3:
            op = "mul"  # a denominator near 0: second derivatives would cancel badly
        cur = p.binary(op, a, b)
        if p.r.random() < 0.3:
            cur = p.pointwise(cur)
    p.end()


def fam_errors(p):
    # Not an index out of range: PyTorch's text for it depends on the kernel it runs ("index out
    # of range in self", "INDICES element is out of DATA bounds, id=5 axis_dim=3"), and ours
    # names the index, the dim and its size instead.
    kind = p.r.choice(["broadcast", "matmul", "dot", "cat", "stack", "dim"])
    if kind == "broadcast":
        sa, sb = p.r.choice([((2, 3), (4,)), ((3,), (4,)), ((2, 3), (3, 2)), ((2, 3, 4), (2, 1, 3)),
                             ((4, 1), (2, 3))])
        a, b = p.inputs_with([sa, sb])
        p.binary(p.r.choice(["add", "sub", "mul", "div"]), a, b)
    elif kind == "matmul":
        sa, sb = p.r.choice([((2, 3), (4, 2)), ((3,), (4, 2)), ((2, 3), (4,)), ((2, 2, 3), (4, 2)),
                             ((2, 2, 3), (3, 2, 2))])
        a, b = p.inputs_with([sa, sb])
        p.binary("matmul", a, b)
    elif kind == "dot":
        a, b = p.inputs_with([(3,), (4,)])
        p.binary("matmul", a, b)
    elif kind in ("cat", "stack"):
        sa, sb = p.r.choice([((2, 3), (3, 3)), ((2, 3), (2, 4)), ((3,), (4,))])
        a, b = p.inputs_with([sa, sb])
        d = 1 if kind == "cat" and sa[0] != sb[0] and len(sa) > 1 else 0
        p.listop(kind, [a, b], d)
    elif kind == "dim":
        shape = p.r.choice([(3,), (2, 3), (2, 3, 4)])
        (a,) = p.inputs_with([shape])
        d = len(shape) + p.r.randrange(2)
        op = p.r.choice(["softmax", "log_softmax", "sum_dims", "select", "narrow",
                         "index_select"])
        attrs = {"dim": d}
        if op == "sum_dims":
            attrs = {"dims": [d], "keepdim": False}
        elif op == "select":
            attrs["index"] = 0
        elif op == "narrow":
            attrs.update(start=0, len=1)
        elif op == "index_select":
            attrs["index"] = [0]
        p.unary(op, a, attrs)
    raise Reject("the shape mistake did not raise")


REDUCTIONS = ["mean", "sum", "none"]


def fam_nn(p):
    r = p.r
    kind = r.choice(["gelu", "leaky_relu", "mse", "cross_entropy", "nll", "bce", "layer_norm",
                     "max_pool", "avg_pool", "conv", "conv"])
    red = r.choice(REDUCTIONS)
    if kind in ("gelu", "leaky_relu"):
        (x,) = p.inputs_with([p.pick_shape()], kinks=True)
        if kind == "gelu":
            ap = r.choice(["none", "tanh"])
            p.nn_step("gelu", [x], {"approximate": ap}, lambda: F.gelu(p.T[x], approximate=ap))
        else:
            slope = r.choice([0.01, 0.2, 0.0, 1.5])
            p.nn_step("leaky_relu", [x], {"slope": slope},
                      lambda: F.leaky_relu(p.T[x], slope))
    elif kind == "mse":
        shape = p.pick_shape()
        ids = p.inputs_with([shape, shape], kinks=True)
        p.nn_step("mse_loss", ids, {"reduction": red},
                  lambda: F.mse_loss(p.T[ids[0]], p.T[ids[1]], reduction=red))
    elif kind in ("cross_entropy", "nll"):
        n, c = r.choice([(1, 3), (3, 4), (4, 2), (2, 5)])
        (x,) = p.inputs_with([(n, c)], rg_prob=1.0)
        targets = [r.randrange(c) for _ in range(n)]
        attrs = {"targets": targets, "reduction": red}
        kw = {"reduction": red}
        if r.random() < 0.4:
            w = [round(r.uniform(0.2, 2.0), 3) for _ in range(c)]
            attrs["weight"] = w
            kw["weight"] = torch.tensor(w)
        if r.random() < 0.3:
            ig = r.choice(targets)
            attrs["ignore_index"] = ig
            kw["ignore_index"] = ig
        if kind == "cross_entropy":
            if r.random() < 0.4:
                ls = r.choice([0.1, 0.25, 1.0])
                attrs["label_smoothing"] = ls
                kw["label_smoothing"] = ls
            p.nn_step("cross_entropy", [x], attrs,
                      lambda: F.cross_entropy(p.T[x], torch.tensor(targets), **kw))
        else:
            x = p.unary("log_softmax", x, {"dim": 1}) if r.random() < 0.5 else x
            p.nn_step("nll_loss", [x], attrs,
                      lambda: F.nll_loss(p.T[x], torch.tensor(targets), **kw))
    elif kind == "bce":
        shape = r.choice([(3,), (2, 3), (4, 1)])
        (x,) = p.inputs_with([shape], kinks=True, rg_prob=1.0)
        t = [r.choice([0.0, 1.0, 0.5, round(r.random(), 3)]) for _ in range(prod(shape))]
        attrs = {"target": t, "reduction": red}
        kw = {"reduction": red}
        if r.random() < 0.3:
            w = [round(r.uniform(0.2, 2.0), 3) for _ in range(prod(shape))]
            attrs["weight"] = w
            kw["weight"] = torch.tensor(w).reshape(shape)
        if r.random() < 0.4:
            pw = [round(r.uniform(0.2, 3.0), 3) for _ in range(shape[-1])]
            attrs["pos_weight"] = pw
            kw["pos_weight"] = torch.tensor(pw)
        p.nn_step("bce_with_logits", [x], attrs, lambda: F.binary_cross_entropy_with_logits(
            p.T[x], torch.tensor(t).reshape(shape), **kw))
    elif kind == "layer_norm":
        shape = r.choice([(2, 3), (3, 4), (2, 2, 3)])
        k = r.randint(1, len(shape) - 1)
        ns = list(shape[-k:])
        affine = r.random() < 0.6
        ids = p.inputs_with([shape] + ([tuple(ns), tuple(ns)] if affine else []))
        eps = r.choice([1e-5, 0.1])
        def f():
            w = p.T[ids[1]] if affine else None
            b = p.T[ids[2]] if affine else None
            return F.layer_norm(p.T[ids[0]], ns, w, b, eps)
        p.nn_step("layer_norm", ids, {"shape": ns, "eps": eps}, f)
    elif kind in ("max_pool", "avg_pool"):
        shape = (r.randint(1, 2), r.randint(1, 2), r.randint(3, 5), r.randint(3, 5))
        (x,) = p.inputs_with([shape], rg_prob=1.0)
        if kind == "max_pool" and r.random() < 0.6:
            # ties inside windows
            x = p.unary("clamp", x, {"min": -0.5, "max": 0.5})
        k = [r.randint(1, 3), r.randint(1, 3)]
        st = [r.randint(1, 2), r.randint(1, 2)]
        pad = [r.randint(0, k[0] // 2), r.randint(0, k[1] // 2)]
        ceil = r.random() < 0.3
        if kind == "max_pool":
            dil = [r.randint(1, 2), r.randint(1, 2)]
            attrs = {"k": k, "stride": st, "padding": pad, "dilation": dil, "ceil": ceil}
            p.nn_step("max_pool2d", [x], attrs,
                      lambda: F.max_pool2d(p.T[x], k, st, pad, dil, ceil_mode=ceil))
        else:
            cip = r.random() < 0.5
            div = r.choice([None, None, 2, 5])
            attrs = {"k": k, "stride": st, "padding": pad, "ceil": ceil,
                     "count_include_pad": cip, "divisor": div}
            p.nn_step("avg_pool2d", [x], attrs, lambda: F.avg_pool2d(
                p.T[x], k, st, pad, ceil_mode=ceil, count_include_pad=cip, divisor_override=div))
    else:
        groups = r.choice([1, 1, 2])
        cin = groups * r.randint(1, 2)
        cout = groups * r.randint(1, 2)
        n = r.randint(1, 2)
        hw = (r.randint(3, 5), r.randint(3, 5))
        k = (r.randint(1, 3), r.randint(1, 3))
        bias = r.random() < 0.6
        # Every operand requires grad: see `first_order_only` for why.
        ids = p.inputs_with([(n, cin) + hw, (cout, cin // groups) + k] + ([(cout,)] if bias else []),
                            rg_prob=1.0)
        st = [r.randint(1, 2), r.randint(1, 2)]
        pad = [r.randint(0, 1), r.randint(0, 1)]
        dil = [r.randint(1, 2), r.randint(1, 2)]
        attrs = {"stride": st, "padding": pad, "dilation": dil, "groups": groups}
        p.nn_step("conv2d", ids, attrs, lambda: F.conv2d(
            p.T[ids[0]], p.T[ids[1]], p.T[ids[2]] if bias else None, st, pad, dil, groups))
    if p.r.random() < 0.3:
        last = len(p.T) - 1
        if p.T[last].dim() >= 1:
            p.pointwise(last)
    # First order only for the ops PyTorch runs as one kernel with a backward kernel that takes
    # the input (pools, nll_loss, layer_norm): PyTorch records that backward with the input as an
    # operand, so a gradient made with `create_graph` requires grad even where it does not
    # depend on the input, while ours, composed of differentiable ops, requires grad only where
    # it does (values and second derivatives agree; the flag differs). Likewise conv2d's bias
    # gradient, and conv2d's gradients when an operand does not require grad (so all do).
    first_order_only = kind in ("nll", "layer_norm", "max_pool", "avg_pool") or \
        (kind == "conv" and len(p.inputs) == 3)
    p.end("backward" if first_order_only else None)


def fam_nn_errors(p):
    r = p.r
    kind = r.choice(["target", "batch", "weight", "ln_shape", "ln_weight", "conv_channels",
                     "conv_kernel", "conv_groups", "conv_bias", "pool_small", "pool_pad", "bce"])
    if kind in ("target", "batch", "weight"):
        n, c = r.choice([(3, 4), (2, 3)])
        (x,) = p.inputs_with([(n, c)], rg_prob=1.0)
        targets = [r.randrange(c) for _ in range(n)]
        attrs = {"reduction": "mean"}
        kw = {}
        if kind == "target":
            targets[r.randrange(n)] = c + r.randrange(3)
        elif kind == "batch":
            targets = targets[:-1]
        else:
            w = [1.0] * (c + r.choice([-1, 1]))
            attrs["weight"] = w
            kw["weight"] = torch.tensor(w)
        attrs["targets"] = targets
        op = r.choice(["cross_entropy", "nll_loss"])
        f = F.cross_entropy if op == "cross_entropy" else F.nll_loss
        p.nn_step(op, [x], attrs, lambda: f(p.T[x], torch.tensor(targets), **kw))
    elif kind in ("ln_shape", "ln_weight"):
        (x,) = p.inputs_with([(2, 3)])
        if kind == "ln_shape":
            p.nn_step("layer_norm", [x], {"shape": [4], "eps": 1e-5},
                      lambda: F.layer_norm(p.T[x], [4]))
        else:
            w, b = p.inputs_with([(4,), (4,)])
            p.nn_step("layer_norm", [x, w, b], {"shape": [3], "eps": 1e-5},
                      lambda: F.layer_norm(p.T[x], [3], p.T[w], p.T[b]))
    elif kind.startswith("conv"):
        shapes = {"conv_channels": ((1, 2, 5, 5), (2, 3, 3, 3), None, 1),
                  "conv_kernel": ((1, 2, 4, 4), (2, 2, 5, 3), None, 1),
                  "conv_groups": ((1, 4, 5, 5), (3, 2, 3, 3), None, 2),
                  "conv_bias": ((1, 2, 5, 5), (2, 2, 3, 3), (3,), 1)}[kind]
        xs, ws, bs, g = shapes
        ids = p.inputs_with([xs, ws] + ([bs] if bs else []))
        attrs = {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": g}
        p.nn_step("conv2d", ids, attrs, lambda: F.conv2d(
            p.T[ids[0]], p.T[ids[1]], p.T[ids[2]] if bs else None, 1, 0, 1, g))
    elif kind in ("pool_small", "pool_pad"):
        (x,) = p.inputs_with([(1, 1, 3, 3)])
        k, pad = ([4, 4], [0, 0]) if kind == "pool_small" else ([2, 2], [2, 1])
        if r.random() < 0.5:
            attrs = {"k": k, "stride": k, "padding": pad, "dilation": [1, 1], "ceil": False}
            p.nn_step("max_pool2d", [x], attrs, lambda: F.max_pool2d(p.T[x], k, k, pad))
        else:
            attrs = {"k": k, "stride": k, "padding": pad, "ceil": False,
                     "count_include_pad": True, "divisor": None}
            p.nn_step("avg_pool2d", [x], attrs, lambda: F.avg_pool2d(p.T[x], k, k, pad))
    else:
        (x,) = p.inputs_with([(3,)], rg_prob=1.0)
        t = [0.0, 1.0, 0.5, 1.0]
        p.nn_step("bce_with_logits", [x], {"target": t, "ts": [4], "reduction": "mean"},
                  lambda: F.binary_cross_entropy_with_logits(p.T[x], torch.tensor(t)))
    raise Reject("the nn mistake did not raise")


def fam_empty(p):
    r = p.r
    shape = r.choice([(0,), (2, 0), (0, 3), (2, 0, 3), (3, 0)])
    ids = p.inputs_with([shape])
    x = ids[0]
    for _ in range(r.randint(1, 3)):
        t = p.T[x]
        nd = t.dim()
        c = r.random()
        if nd == 0 or t.numel() > 0:
            x = p.pointwise(x)
        elif c < 0.2:
            x = p.pointwise(x)
        elif c < 0.35:
            partner = r.choice([(), (1,), tuple(1 for _ in t.shape), tuple(t.shape)])
            other = p.const(list(partner))
            x = p.binary(r.choice(["add", "mul", "sub"]), x, other)
        elif c < 0.5:
            k = r.randint(1, nd)
            x = p.unary("sum_dims", x, {"dims": sorted(r.sample(range(nd), k)),
                                        "keepdim": r.random() < 0.5})
        elif c < 0.6:
            x = p.unary("sum", x, {})
        elif c < 0.7:
            x = p.unary(r.choice(["softmax", "log_softmax"]), x, {"dim": r.randrange(nd)})
        elif c < 0.8 and nd == 2:
            m, k = t.shape
            # (constants: the inputs are the program's first variables)
            w = p.const([k, r.randint(1, 3)])
            x = p.binary("matmul", x, w)
        elif c < 0.9:
            d = r.randrange(nd)
            other_shape = list(t.shape)
            other_shape[d] = r.randint(0, 2)
            # a 1-D size-0 part is skipped whatever the other's rank (PyTorch's legacy rule)
            o = p.const([0] if r.random() < 0.3 else other_shape)
            x = p.listop("cat", [x, o] if r.random() < 0.5 else [o, x], d)
        else:
            d = r.randrange(nd)
            if t.shape[d] == 0:
                x = p.unary("index_select", x, {"dim": d, "index": []})
            else:
                x = p.unary("index_select", x, {"dim": d, "index": [0]})
    p.end()


def fam_numerics(p):
    r = p.r
    n, c = r.choice([(2, 3), (3, 4), (1, 5)])
    (x,) = p.inputs_with([(n, c)], rg_prob=1.0)
    scale = r.choice([10.0, 50.0, 100.0, 500.0])
    x = p.unary("mul_scalar", x, {"s": scale})
    kind = r.choice(["softmax", "log_softmax", "cross_entropy", "nll", "bce", "sigmoid", "tanh"])
    if kind in ("softmax", "log_softmax"):
        p.unary(kind, x, {"dim": r.randrange(2)})
    elif kind == "cross_entropy":
        targets = [r.randrange(c) for _ in range(n)]
        red = r.choice(REDUCTIONS)
        p.nn_step("cross_entropy", [x], {"targets": targets, "reduction": red},
                  lambda: F.cross_entropy(p.T[x], torch.tensor(targets), reduction=red))
    elif kind == "nll":
        targets = [r.randrange(c) for _ in range(n)]
        y = p.unary("log_softmax", x, {"dim": 1})
        p.nn_step("nll_loss", [y], {"targets": targets, "reduction": "sum"},
                  lambda: F.nll_loss(p.T[y], torch.tensor(targets), reduction="sum"))
    elif kind == "bce":
        t = [r.choice([0.0, 1.0, 0.5]) for _ in range(n * c)]
        red = r.choice(REDUCTIONS)
        p.nn_step("bce_with_logits", [x], {"target": t, "reduction": red},
                  lambda: F.binary_cross_entropy_with_logits(
                      p.T[x], torch.tensor(t).reshape(n, c), reduction=red))
    else:
        p.unary(kind, x, {})
    # First order only: a second derivative through logits scaled by 500 carries rounding of
    # 500² times the float64 epsilon, past the corpus's tolerance on both sides.
    p.end("backward")


def fam_casts(p):
    r = p.r
    shape = p.pick_shape()
    ids = p.inputs_with([shape, shape] if r.random() < 0.4 else [shape])
    x = p.unary("to_dtype", ids[0], {"dtype": "float32"})
    for _ in range(r.randint(1, 3)):
        x = p.pointwise(x)
    if len(ids) > 1:
        y = p.unary("to_dtype", ids[1], {"dtype": "float32"})
        x = p.binary(r.choice(["add", "mul"]), x, y)
    x = p.unary("to_dtype", x, {"dtype": "float64"})
    if r.random() < 0.5:
        x = p.pointwise(x)
    p.end()


def fam_accumulate(p):
    r = p.r
    ids = p.inputs_with([p.pick_shape() for _ in range(r.randint(2, 3))], rg_prob=1.0)
    cur = ids[0]
    for _ in range(r.randint(1, 3)):
        cur = p.pointwise(cur)
    others = [i for i in ids[1:] if gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)
              and prod(gv.broadcast_shape(p.T[i].shape, p.T[cur].shape)) <= 24]
    if others:
        cur = p.binary("mul", cur, r.choice(others))
    p.check()
    L = p.loss(p.pick_loss_vars())
    for k in range(r.randint(1, 2)):
        rec = {"op": "backward", "a": [L], "retain": True}
        if r.random() < 0.4:
            subset = sorted(r.sample(ids, r.randint(1, len(ids))))
            rec["inputs"] = subset
            p.run(rec, lambda: p.T[L].backward(retain_graph=True,
                                               inputs=[p.T[i] for i in subset]))
        else:
            p.run(rec, lambda: p.T[L].backward(retain_graph=True))
        rec["gr"] = {str(i): enc(t.grad) for i, t in enumerate(p.T)
                     if t is not None and t.grad is not None}
    p.grad_step(L, ids, False)


def fam_modules(p):
    r = p.r
    if r.random() < 0.5:
        fin, fout = r.randint(1, 4), r.randint(1, 4)
        lead = r.choice([(), (3,), (2, 3)])
        bias = r.random() < 0.7
        ids = p.inputs_with([lead + (fin,), (fout, fin)] + ([(fout,)] if bias else []))
        p.nn_step("linear", ids, {}, lambda: F.linear(
            p.T[ids[0]], p.T[ids[1]], p.T[ids[2]] if bias else None))
    else:
        num, dim = r.randint(2, 5), r.randint(1, 3)
        pad = r.randrange(num) if r.random() < 0.5 else None
        # The padding row starts at zero, as nn.Embedding(padding_idx=) makes it.
        rgs = True
        data = []
        for row in range(num):
            data += [0.0 if row == pad else p.val() for _ in range(dim)]
        t = torch.tensor(data).reshape(num, dim).clone().requires_grad_(rgs)
        w = p.add_var(t, "input")
        p.inputs.append({"s": [num, dim], "d": data, "rg": rgs})
        shape = r.choice([[3], [2, 2], [4], [1]])
        idx = [r.randrange(num) for _ in range(prod(shape))]
        if pad is not None and r.random() < 0.7:
            idx[r.randrange(len(idx))] = pad
        attrs = {"indices": idx, "shape": shape, "padding": pad}
        p.nn_step("embedding", [w], attrs, lambda: F.embedding(
            torch.tensor(idx, dtype=torch.long).reshape(shape), p.T[w], padding_idx=pad))
    if r.random() < 0.4:
        p.pointwise(len(p.T) - 1)
    p.end()


FAMILIES = {
    "kinks": fam_kinks,
    "reduce": fam_reduce,
    "matmul": fam_matmul,
    "index": fam_index,
    "broadcast": fam_broadcast,
    "errors": fam_errors,
    "nn": fam_nn,
    "nn_errors": fam_nn_errors,
    "empty": fam_empty,
    "numerics": fam_numerics,
    "casts": fam_casts,
    "accumulate": fam_accumulate,
    "modules": fam_modules,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--count", type=int, default=6000)
    ap.add_argument("--out", default="tests/corpus/ops.jsonl.gz")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="the programs' element type (float32: tests/corpus/ops_f32.jsonl.gz)")
    args = ap.parse_args()
    torch.set_default_dtype(getattr(torch, args.dtype))
    fams = collections.Counter()
    errs = collections.Counter()
    with open(args.out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f,
                                                  mtime=0) as raw:
        header = {"header": {"generator": "tests/corpus/gen_ops.py", "seed": args.seed,
                             "count": args.count, "torch": torch.__version__,
                             "dtype": args.dtype,
                             "families": dict(FAMILY_WEIGHTS)}}
        raw.write((json.dumps(header) + "\n").encode())
        for prog in gv.generate(args.seed, args.count, True, FAMILY_WEIGHTS, FAMILIES, OpsProg):
            raw.write((json.dumps(prog, separators=(",", ":")) + "\n").encode())
            fams[prog["family"]] += 1
            if "error" in prog:
                errs[prog["error"]["msg"][:60]] += 1
    for f, _ in FAMILY_WEIGHTS:
        sys.stderr.write("  %-10s %5d programs\n" % (f, fams[f]))
    for k, v in errs.most_common():
        sys.stderr.write("  %5d  %s\n" % (v, k))


if __name__ == "__main__":
    main()
