"""Records the PyTorch 2.15 values that tests/nn/functional.rs replays: run
`python tests/nn/functional_values.py` (from the repository root, with PyTorch installed) to
rewrite tests/nn/data/functional.json.

Each case runs one function of torch.nn.functional (or torch.lstm_cell / torch.gru_cell) on f64
inputs drawn here and recorded, then backpropagates `sum_k (out_k * upstream_k).sum()` (the
upstreams recorded too). It records the outputs, the gradient of every input that requires grad,
and the value after the call of every input the call changed (batch_norm's running
statistics). A
case with a seed calls `torch.manual_seed(seed)` just before the function, for its dropout masks.
The `errors` section holds PyTorch's messages for bad arguments."""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
CASES = {}
ERRORS = {}
GEN = torch.Generator().manual_seed(36)


def randn(*shape, scale=1.0, shift=0.0):
    return torch.randn(*shape, generator=GEN) * scale + shift


def upstream(shape, k):
    n = math.prod(shape)
    return torch.cos(torch.arange(n, dtype=torch.float64) * 0.7 + k).reshape(shape)


def num(v):
    # JSON has no infinities: "inf" and "-inf" as strings
    return v if isinstance(v, bool) or math.isfinite(v) else str(v)


def enc(t):
    return {"shape": list(t.shape), "values": [num(v) for v in t.detach().flatten().tolist()],
            "dtype": str(t.dtype).replace("torch.", "")}


def record(name, fn, inputs, seed=None):
    """inputs: list of (tensor, requires_grad)."""
    leaves = [t.detach().clone().requires_grad_(g) for t, g in inputs]
    before = [enc(t) for t in leaves]
    if seed is not None:
        torch.manual_seed(seed)
    out = fn(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    outs = [o for o in outs if o is not None]
    ups = [upstream(o.shape, k) for k, o in enumerate(outs)]
    loss = sum((o * u).sum() for o, u in zip(outs, ups))
    if any(g for _, g in inputs):
        loss.backward()
    CASES[name] = {
        "inputs": before,
        "requires_grad": [g for _, g in inputs],
        "outputs": [enc(o) for o in outs],
        "upstreams": [enc(u) for u in ups],
        "grads": [enc(t.grad) if t.grad is not None else None for t in leaves],
        # only the inputs the call changed (batch_norm's running statistics)
        "after": [enc(t) if enc(t) != b else None for t, b in zip(leaves, before)],
    }


def error(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the message is what is recorded
        ERRORS[name] = str(e)
        return
    raise AssertionError(f"{name}: no error")


# ----- batch_norm ---------------------------------------------------------------------------
def bn_two_calls(x1, x2, rm, rv, w, b):
    y1 = F.batch_norm(x1, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    y2 = F.batch_norm(x2, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    return y1, y2


record("batch_norm_train_2d_twice", bn_two_calls, [
    (randn(4, 3, scale=2.0, shift=1.0), True), (randn(4, 3, shift=-0.5), True),
    (randn(3, scale=0.1), False), (randn(3, scale=0.1).abs() + 1.0, False),
    (randn(3, shift=1.0), True), (randn(3), True)])
record("batch_norm_train_3d_no_stats",
       lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
       [(randn(2, 3, 5), True), (randn(3, shift=1.0), True), (randn(3), True)])
record("batch_norm_train_4d_momentum",
       lambda x, rm, rv: F.batch_norm(x, rm, rv, None, None, True, 0.3, 1e-3),
       [(randn(2, 3, 4, 4, scale=3.0), True), (torch.zeros(3), False), (torch.ones(3), False)])
record("batch_norm_eval_4d",
       lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-4),
       [(randn(2, 3, 4, 4), True), (randn(3, scale=0.3), False),
        (randn(3).abs() + 0.5, False), (randn(3, shift=1.0), True), (randn(3), True)])

# ----- group_norm / rms_norm ----------------------------------------------------------------
record("group_norm_affine",
       lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-5),
       [(randn(2, 6, 5, scale=2.0), True), (randn(6, shift=1.0), True), (randn(6), True)])
record("group_norm_plain_4d", lambda x: F.group_norm(x, 2, eps=1e-3),
       [(randn(2, 4, 3, 3), True)])
record("rms_norm_weight", lambda x, w: F.rms_norm(x, [4], w, eps=1e-5),
       [(randn(2, 3, 4), True), (randn(4, shift=1.0), True)])
record("rms_norm_default_eps", lambda x: F.rms_norm(x, [3, 4]), [(randn(2, 3, 4), True)])

# ----- scaled_dot_product_attention ---------------------------------------------------------
q, k, v = randn(2, 2, 4, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 3)
QKV = [(q, True), (k, True), (v, True)]
SDPA = F.scaled_dot_product_attention
record("sdpa_plain", lambda q, k, v: SDPA(q, k, v), QKV)
bool_mask = torch.rand(4, 5, generator=GEN) > 0.4
bool_mask[2] = False  # a query that may attend to nothing: zeros
bool_mask[0, 0] = True
record("sdpa_bool_mask", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m), QKV + [(bool_mask, False)])
record("sdpa_float_mask_broadcast", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m),
       QKV + [(randn(2, 1, 4, 5), False)])
record("sdpa_causal", lambda q, k, v: SDPA(q, k, v, is_causal=True), QKV)
record("sdpa_scale", lambda q, k, v: SDPA(q, k, v, scale=0.3), QKV)
record("sdpa_negative_scale", lambda q, k, v: SDPA(q, k, v, scale=-0.5), QKV)
record("sdpa_broadcast_batch", lambda q, k, v: SDPA(q, k, v),
       [(randn(2, 1, 4, 4), True), (randn(3, 5, 4), True), (randn(3, 5, 3), True)])
record("sdpa_dropout", lambda q, k, v, m: SDPA(q, k, v, attn_mask=m, dropout_p=0.3),
       QKV + [(bool_mask, False)], seed=7)
record("sdpa_3d_causal_square", lambda q, k, v: SDPA(q, k, v, is_causal=True),
       [(randn(2, 5, 4), True), (randn(2, 5, 4), True), (randn(2, 5, 3), True)])

# ----- multi_head_attention_forward ----------------------------------------------------------
E, H, L, S, N = 6, 2, 4, 5, 2


def mha(q, k, v, w_in, b_in, w_out, b_out, **kw):
    return F.multi_head_attention_forward(
        q, k, v, E, H, w_in, b_in, None, None, False, kw.pop("dropout_p", 0.0), w_out, b_out,
        **kw)


WEIGHTS = [(randn(3 * E, E, scale=0.5), True), (randn(3 * E, scale=0.1), True),
           (randn(E, E, scale=0.5), True), (randn(E, scale=0.1), True)]
xq, xk, xv = randn(L, N, E), randn(S, N, E), randn(S, N, E)
record("mha_self_weights", lambda x, *w: mha(x, x, x, *w), [(xq, True)] + WEIGHTS)
record("mha_cross_no_weights", lambda q, k, v, *w: mha(q, k, v, *w, need_weights=False),
       [(xq, True), (xk, True), (xv, True)] + WEIGHTS)
kpm = torch.tensor([[False, False, True, False, True], [False, True, False, False, False]])
am = torch.zeros(L, S, dtype=torch.bool)
am[1, 3] = True
am[3, 0] = True
record("mha_masks_per_head_weights",
       lambda q, k, v, m1, m2, *w: mha(q, k, v, *w, key_padding_mask=m1, attn_mask=m2,
                                       average_attn_weights=False),
       [(xq, True), (xk, True), (xv, True), (kpm, False), (am, False)] + WEIGHTS)
record("mha_masks_sdpa",
       lambda q, k, v, m1, m2, *w: mha(q, k, v, *w, key_padding_mask=m1, attn_mask=m2,
                                       need_weights=False),
       [(xq, True), (xk, True), (xv, True), (kpm, False), (randn(L, S), False)] + WEIGHTS)
causal = torch.triu(torch.full((L, L), float("-inf")), 1)
record("mha_causal_hint", lambda x, m, *w: mha(x, x, x, *w, attn_mask=m, is_causal=True,
                                               need_weights=False),
       [(xq, True), (causal, False)] + WEIGHTS)
record("mha_batch_first",
       lambda q, k, v, *w: tuple(
           o.transpose(0, 1) if i == 0 else o
           for i, o in enumerate(mha(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                     *w))),
       [(xq.transpose(0, 1).contiguous(), True), (xk.transpose(0, 1).contiguous(), True),
        (xv.transpose(0, 1).contiguous(), True)] + WEIGHTS)
record("mha_unbatched", lambda q, k, v, m, *w: mha(q, k, v, *w, key_padding_mask=m),
       [(randn(L, E), True), (randn(S, E), True), (randn(S, E), True),
        (torch.tensor([False, True, False, False, False]), False)] + WEIGHTS)
record("mha_dropout_weights", lambda x, *w: mha(x, x, x, *w, dropout_p=0.25),
       [(xq, True)] + WEIGHTS, seed=11)
record("mha_dropout_sdpa", lambda x, *w: mha(x, x, x, *w, dropout_p=0.25, need_weights=False),
       [(xq, True)] + WEIGHTS, seed=12)

# ----- LSTM / GRU cells ---------------------------------------------------------------------
I, Hd, B = 4, 5, 3
record("lstm_cell_bias", lambda x, h, c, wi, wh, bi, bh: torch.lstm_cell(x, (h, c), wi, wh, bi, bh),
       [(randn(B, I), True), (randn(B, Hd), True), (randn(B, Hd), True),
        (randn(4 * Hd, I, scale=0.5), True), (randn(4 * Hd, Hd, scale=0.5), True),
        (randn(4 * Hd, scale=0.3), True), (randn(4 * Hd, scale=0.3), True)])
record("lstm_cell_no_bias", lambda x, h, c, wi, wh: torch.lstm_cell(x, (h, c), wi, wh),
       [(randn(B, I), True), (randn(B, Hd), True), (randn(B, Hd), True),
        (randn(4 * Hd, I, scale=0.5), True), (randn(4 * Hd, Hd, scale=0.5), True)])
record("gru_cell_bias", lambda x, h, wi, wh, bi, bh: torch.gru_cell(x, h, wi, wh, bi, bh),
       [(randn(B, I), True), (randn(B, Hd), True),
        (randn(3 * Hd, I, scale=0.5), True), (randn(3 * Hd, Hd, scale=0.5), True),
        (randn(3 * Hd, scale=0.3), True), (randn(3 * Hd, scale=0.3), True)])
record("gru_cell_no_bias", lambda x, h, wi, wh: torch.gru_cell(x, h, wi, wh),
       [(randn(B, I), True), (randn(B, Hd), True),
        (randn(3 * Hd, I, scale=0.5), True), (randn(3 * Hd, Hd, scale=0.5), True)])

# ----- activations --------------------------------------------------------------------------
act_x = randn(3, 7, scale=3.0)
for name, fn in [
    ("silu", F.silu), ("mish", F.mish),
    ("softplus", lambda x: F.softplus(x, beta=2.0, threshold=5.0)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.7)), ("relu6", F.relu6),
    ("elu", lambda x: F.elu(x, alpha=1.3)), ("selu", F.selu),
    ("celu", lambda x: F.celu(x, alpha=0.8)), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh),
]:
    record(f"act_{name}", fn, [(act_x, True)])

# ----- errors -------------------------------------------------------------------------------
z3, o3 = torch.zeros(3), torch.ones(3)
error("bn_one_value", lambda: F.batch_norm(randn(1, 3), z3, o3, training=True))
error("bn_one_value_3d", lambda: F.batch_norm(randn(1, 3, 1), None, None, training=True))
error("bn_eval_no_mean", lambda: F.batch_norm(randn(2, 3), None, None))
error("bn_eval_no_var", lambda: F.batch_norm(randn(2, 3), z3, None))
error("bn_train_one_stat", lambda: F.batch_norm(randn(2, 3), z3, None, training=True))
error("bn_running_mean_size", lambda: F.batch_norm(randn(2, 3), torch.zeros(4), o3, training=True))
error("bn_weight_size", lambda: F.batch_norm(randn(2, 3), z3, o3, torch.ones(4)))
error("bn_bias_size", lambda: F.batch_norm(randn(2, 3), z3, o3, None, torch.ones(4)))
error("bn_stat_requires_grad",
      lambda: F.batch_norm(randn(2, 3), torch.zeros(3, requires_grad=True), o3, training=True))
error("gn_divisible", lambda: F.group_norm(randn(2, 6, 4), 4))
error("gn_1d", lambda: F.group_norm(randn(2), 1))
error("gn_one_value", lambda: F.group_norm(randn(1, 2, 1), 2))
error("gn_weight", lambda: F.group_norm(randn(2, 6, 4), 3, torch.ones(5)))
error("gn_bias", lambda: F.group_norm(randn(2, 6, 4), 3, None, torch.ones(5)))
error("rms_shape", lambda: F.rms_norm(randn(2, 3, 4), [2, 4]))
error("rms_weight", lambda: F.rms_norm(randn(2, 3), [3], torch.ones(4)))
error("rms_empty", lambda: F.rms_norm(randn(2, 3), []))
qe = randn(2, 4, 8)
error("sdpa_causal_and_mask",
      lambda: SDPA(qe, qe, qe, attn_mask=torch.ones(4, 4, dtype=torch.bool), is_causal=True))
error("sdpa_dropout_p", lambda: SDPA(qe, qe, qe, dropout_p=1.5))
error("sdpa_dtypes", lambda: SDPA(qe.float(), qe, qe))
error("sdpa_mask_dtype", lambda: SDPA(qe, qe, qe, attn_mask=torch.ones(4, 4, dtype=torch.int64)))
error("sdpa_mask_f16", lambda: SDPA(qe, qe, qe, attn_mask=torch.ones(4, 4, dtype=torch.float16)))
error("sdpa_1d", lambda: SDPA(randn(8), randn(8), randn(8)))
W = [w for w, _ in WEIGHTS]
error("mha_heads", lambda: F.multi_head_attention_forward(
    xq, xq, xq, E, 4, W[0], W[1], None, None, False, 0.0, W[2], W[3]))
error("mha_causal_without_mask", lambda: mha(xq, xq, xq, *W, is_causal=True))
error("mha_mask_2d_shape", lambda: mha(xq, xq, xq, *W, attn_mask=torch.ones(3, 4)))
error("mha_mask_3d_shape", lambda: mha(xq, xq, xq, *W, attn_mask=torch.ones(5, 4, 4)))
error("mha_mask_dtype", lambda: mha(xq, xq, xq, *W, attn_mask=torch.ones(4, 4, dtype=torch.int64)))
error("mha_key_dims", lambda: mha(xq, xk[0], xv, *W))
wi, wh = randn(8, 3), randn(8, 2)
h2 = (randn(1, 2), randn(1, 2))
error("lstm_1d", lambda: torch.lstm_cell(randn(3), h2, wi, wh))
error("lstm_input_size", lambda: torch.lstm_cell(randn(1, 4), h2, wi, wh))
error("lstm_weight_ih", lambda: torch.lstm_cell(randn(1, 3), h2, randn(7, 3), wh))
error("lstm_weight_hh", lambda: torch.lstm_cell(randn(1, 3), h2, wi, randn(7, 2)))
error("lstm_batch", lambda: torch.lstm_cell(randn(2, 3), h2, wi, wh))
error("lstm_hidden1", lambda: torch.lstm_cell(randn(1, 3), (h2[0], randn(1, 3)), wi, wh))
error("gru_weight_ih", lambda: torch.gru_cell(randn(1, 3), randn(1, 2), randn(5, 3), randn(6, 2)))
error("gru_hidden", lambda: torch.gru_cell(randn(1, 3), randn(1, 3), randn(6, 3), randn(6, 2)))
error("hardtanh_range", lambda: F.hardtanh(randn(3), 2.0, 1.0))
error("celu_zero", lambda: F.celu(randn(3), 0.0))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "functional.json")
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": CASES, "errors": ERRORS}, f,
              separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote {out}: {len(CASES)} cases, {len(ERRORS)} errors")
