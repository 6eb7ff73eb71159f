"""Records PyTorch's autocast behaviour for `tests/amp/autocast.rs` (writes
`tests/amp/data/autocast.json`). Run with PyTorch 2.15 (CPU is enough):

    python tests/amp/autocast_dtypes.py

* `cuda_lists`: the CUDA autocast lists, parsed from the `AT_FORALL_*` macros of the installed
  `ATen/autocast_mode.h` (op names without overloads).
* `cpu_ops`: for each op of the crate, its output dtype(s) (and values) inside
  `torch.autocast("cpu")` (bf16) with the deterministic inputs `det` below; `f16_ops` likewise
  in an f16 region. An entry with `error` records PyTorch's message instead.
* `mlp`: a two-layer MLP's forward under CPU bf16 autocast and its backward outside the region:
  the loss, the output and every parameter's gradient.
* `messages`: the warnings and errors of `torch.autocast` the crate reproduces.
"""

import json
import os
import re
import warnings

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def det(*shape, seed=0, dtype=torch.float32):
    """`((i * 7 + seed * 13) % 17 - 8) / 8` over the elements in order: multiples of 1/8 in
    [-1, 1], exact in bf16 and f16 (the Rust test builds the same tensors)."""
    n = 1
    for s in shape:
        n *= s
    v = [((i * 7 + seed * 13) % 17 - 8) / 8 for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape).to(dtype)


def cuda_lists():
    path = os.path.join(os.path.dirname(torch.__file__), "include/ATen/autocast_mode.h")
    text = open(path).read()
    lists = {}
    for macro, policy in [
        ("AT_FORALL_LOWER_PRECISION_FP", "lower_precision_fp"),
        ("AT_FORALL_FP32", "fp32"),
        ("AT_FORALL_FP32_SET_OPT_DTYPE", "fp32_set_opt_dtype"),
        ("AT_FORALL_PROMOTE", "promote"),
    ]:
        body = re.search(r"#define " + macro + r"\(_\)(.*?)\n\n", text, re.S).group(1)
        names = re.findall(r"_\((\w+)", body)
        lists[policy] = sorted(set(names))
    # `norm` (fp32_append_dtype): listed with ADD_NS in AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE.
    lists["fp32_append_dtype"] = ["norm"]
    return lists


def describe(r):
    if isinstance(r, tuple):
        return {"dtypes": [str(t.dtype) for t in r]}
    out = {"dtype": str(r.dtype)}
    if r.numel() <= 64:
        out["values"] = r.detach().double().reshape(-1).tolist()
        out["shape"] = list(r.shape)
    return out


def cpu_ops():
    m = det(4, 4, seed=1)
    v = det(4, seed=2)
    x = det(2, 3, 4, seed=3)
    tgt = torch.tensor([0, 1, 2, 3])
    lstm_args = (det(2, 3, seed=4), (det(2, 4, seed=5), det(2, 4, seed=6)), det(16, 3, seed=7),
                 det(16, 4, seed=8), det(16, seed=9), det(16, seed=10))
    cell = lambda g: (det(2, 3, seed=4), det(2, 4, seed=5), det(g * 4, 3, seed=7),
                      det(g * 4, 4, seed=8), det(g * 4, seed=9), det(g * 4, seed=10))
    q = det(3, 2, 4, seed=11)
    in_w, in_b, out_w, out_b = det(12, 4, seed=12), det(12, seed=13), det(4, 4, seed=14), det(4, seed=15)
    mha = lambda need: F.multi_head_attention_forward(
        q, q, q, 4, 2, in_w, in_b, None, None, False, 0.0, out_w, out_b, training=False,
        need_weights=need)
    ops = {
        "matmul": lambda: m.matmul(m),
        "matmul_vv": lambda: v.matmul(v),
        "matmul_f64": lambda: m.double().matmul(m.double()),
        "matmul_bf16": lambda: m.bfloat16().matmul(m.bfloat16()),
        "matmul_f16": lambda: m.half().matmul(m.half()),
        "bmm": lambda: x.bmm(x.transpose(1, 2)),
        "baddbmm": lambda: det(2, 3, 3, seed=5).baddbmm(x, x.transpose(1, 2), beta=0.5, alpha=2.0),
        "einsum_contract": lambda: torch.einsum("ij,jk->ik", m, m),
        "einsum_elementwise": lambda: torch.einsum("ij,ij->ij", m, m),
        "outer": lambda: torch.outer(v, v),
        "linear": lambda: F.linear(x, m, v),
        "linear_no_bias": lambda: F.linear(x, m),
        "conv1d": lambda: F.conv1d(det(1, 2, 5, seed=4), det(3, 2, 2, seed=5), det(3, seed=6)),
        "conv2d": lambda: F.conv2d(det(1, 2, 4, 4, seed=4), det(3, 2, 2, 2, seed=5), det(3, seed=6)),
        "conv_transpose2d": lambda: F.conv_transpose2d(det(1, 2, 3, 3, seed=4), det(2, 3, 2, 2, seed=5), det(3, seed=6)),
        "sdpa": lambda: F.scaled_dot_product_attention(x, x, x),
        "sdpa_causal": lambda: F.scaled_dot_product_attention(x, x, x, is_causal=True),
        "mha": lambda: mha(False)[0],
        "mha_weights": lambda: mha(True)[1],
        "lstm_cell": lambda: torch.lstm_cell(*lstm_args),
        "gru_cell": lambda: torch.gru_cell(*cell(3)),
        "rnn_tanh_cell": lambda: torch.rnn_tanh_cell(*cell(1)),
        "rnn_relu_cell": lambda: torch.rnn_relu_cell(*cell(1)),
        "softmax": lambda: m.softmax(0),
        "log_softmax": lambda: m.log_softmax(1),
        "layer_norm": lambda: F.layer_norm(x, (4,), det(4, seed=7), det(4, seed=8)),
        "group_norm": lambda: F.group_norm(det(2, 4, 3, seed=4), 2, det(4, seed=7), det(4, seed=8)),
        "rms_norm": lambda: F.rms_norm(x, (4,), det(4, seed=7)),
        "exp": lambda: m.exp(),
        "log": lambda: m.abs().add(1).log(),
        "pow": lambda: m.pow(2.0),
        "sum": lambda: m.sum(),
        "sum_dims": lambda: m.sum(0),
        "prod": lambda: m.prod(),
        "prod_dim": lambda: m.prod(0),
        "prod_bf16": lambda: m.bfloat16().prod(),
        "cumsum": lambda: m.cumsum(0),
        "logsumexp": lambda: m.logsumexp(0),
        "norm": lambda: m.norm(),
        "mse_loss": lambda: F.mse_loss(m, v.expand(4, 4)),
        "mse_loss_bf16": lambda: F.mse_loss(m.bfloat16(), v.expand(4, 4).bfloat16()),
        "mse_loss_f64": lambda: F.mse_loss(m.double(), m.bfloat16()),
        "nll_loss": lambda: F.nll_loss(m, tgt),
        "nll_loss_bf16": lambda: F.nll_loss(m.bfloat16(), tgt),
        "cross_entropy": lambda: F.cross_entropy(m, tgt),
        "cross_entropy_bf16": lambda: F.cross_entropy(m.bfloat16(), tgt),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(m, m.abs()),
        "bce_with_logits_bf16": lambda: F.binary_cross_entropy_with_logits(m.bfloat16(), m.abs()),
        "cat": lambda: torch.cat([m, m]),
        "cat_bf16_f32": lambda: torch.cat([m.bfloat16(), m]),
        "cat_bf16_bf16": lambda: torch.cat([m.bfloat16(), m.bfloat16()]),
        "cat_f32_f16": lambda: torch.cat([m, m.half()]),
        "cat_f16_f32": lambda: torch.cat([m.half(), m]),
        "stack": lambda: torch.stack([m, m]),
        "stack_bf16_f32": lambda: torch.stack([m.bfloat16(), m]),
        "scatter_add": lambda: m.scatter_add(0, torch.zeros(4, 4, dtype=torch.long), m),
        "atan2": lambda: m.atan2(m.flip(0)),
        "interpolate": lambda: F.interpolate(det(1, 1, 4, seed=4), scale_factor=2.0),
        "gelu": lambda: F.gelu(m),
        "relu_of_bf16": lambda: F.relu(m.matmul(m)),
        "add_bf16_f32": lambda: m.matmul(m) + m,
    }
    out = {}
    for name, f in ops.items():
        try:
            out[name] = describe(f())
        except RuntimeError as e:
            out[name] = {"error": str(e)}
    return out


def f16_ops():
    m = det(4, 4, seed=1)
    with torch.autocast("cpu", dtype=torch.float16):
        return {
            "matmul": describe(m.matmul(m)),
            "matmul_bf16": describe(m.bfloat16().matmul(m.bfloat16())),
            "cat_f16_f32": describe(torch.cat([m.half(), m])),
            "mse_loss": describe(F.mse_loss(m.half(), m)),
        }


def mlp():
    x = det(8, 3, seed=20)
    t = det(8, 2, seed=21)
    w1 = det(5, 3, seed=22).requires_grad_()
    b1 = det(5, seed=23).requires_grad_()
    w2 = det(2, 5, seed=24).requires_grad_()
    b2 = det(2, seed=25).requires_grad_()
    with torch.autocast("cpu"):
        h = F.relu(F.linear(x, w1, b1))
        y = F.linear(h, w2, b2)
        loss = F.mse_loss(y, t)
    loss.backward()
    return {
        "h_dtype": str(h.dtype),
        "y_dtype": str(y.dtype),
        "loss_dtype": str(loss.dtype),
        "y": y.detach().double().reshape(-1).tolist(),
        "loss": loss.item(),
        "grads": {n: p.grad.double().reshape(-1).tolist()
                  for n, p in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]},
        "grad_dtypes": [str(p.grad.dtype) for p in (w1, b1, w2, b2)],
    }


def messages():
    out = {}
    for key, args in [("cpu_f32", dict(device_type="cpu", dtype=torch.float32)),
                      ("cpu_f64", dict(device_type="cpu", dtype=torch.float64)),
                      ("cuda_unavailable", dict(device_type="cuda"))]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with torch.autocast(**args):
                enabled = torch.is_autocast_enabled(args["device_type"])
                dtype = torch.get_autocast_dtype(args["device_type"])
        out[key] = {"warning": str(w[0].message), "enabled": enabled, "dtype": str(dtype)}
    with torch.autocast("cpu"):
        try:
            torch.cat([det(2).half(), det(2).half()])
        except RuntimeError as e:
            out["prioritize"] = str(e)
    out["defaults"] = {"cpu": str(torch.get_autocast_dtype("cpu")),
                       "cuda": str(torch.get_autocast_dtype("cuda")),
                       "cache_enabled": torch.is_autocast_cache_enabled()}
    return out


def main():
    assert torch.__version__.startswith("2.15"), torch.__version__
    with torch.autocast("cpu"):
        cpu = cpu_ops()
    record = {
        "torch": torch.__version__,
        "cuda_lists": cuda_lists(),
        "cpu_ops": cpu,
        "f16_ops": f16_ops(),
        "mlp": mlp(),
        "messages": messages(),
    }
    path = os.path.join(HERE, "data", "autocast.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
