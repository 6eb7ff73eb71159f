"""Records the PyTorch 2.15 values that tests/nn/transformer_layers.rs replays: run
`python tests/nn/transformer_layers.py` (from the repository root, with PyTorch and safetensors
installed) to rewrite tests/nn/data/transformer_layers.json and
tests/nn/data/transformer_encoder_f64.safetensors.

* `inits`: a layer built right after `torch.manual_seed(seed)` (f32, PyTorch's initialisation),
  its state dict in order, and `torch.rand(4)` drawn just after (where the generator stands).
* `cases`: a layer built after `torch.manual_seed(1234)`, made f64, its parameters shifted by
  recorded noise (so no bias is zero and no norm weight one), put in train or eval mode; then
  called on f64 inputs that require grad (so PyTorch takes its standard path, not the fused
  fast path), and `sum_k (out_k * upstream_k).sum()` backpropagated, with upstream_k =
  cos(0.7 i + k) over the flattened output. Recorded: the state dict, the inputs (bool masks
  too), the outputs and the gradients of the float inputs (null for one that takes no part) and of every parameter. A case with
  `seed` calls `torch.manual_seed(seed)` just before the forward (its dropout masks).
* `errors`: PyTorch's messages; `reprs`: `repr(module)`.
"""
import json
import math
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file

GEN = torch.Generator().manual_seed(36)
INITS = {}
CASES = {}
ERRORS = {}
REPRS = {}


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64) * scale


def upstream(shape, k):
    n = math.prod(shape)
    return torch.cos(torch.arange(n, dtype=torch.float64) * 0.7 + k).reshape(shape)


def num(v):
    # JSON has no infinities: "inf" and "-inf" as strings
    return v if isinstance(v, bool) or math.isfinite(v) else str(v)


def enc(t):
    return {"shape": list(t.shape), "values": [num(v) for v in t.detach().flatten().tolist()],
            "dtype": str(t.dtype).replace("torch.", "")}


def state(m):
    return [[k, enc(v)] for k, v in m.state_dict().items()]


def record_init(name, seed, make):
    torch.manual_seed(seed)
    m = make()
    INITS[name] = {"seed": seed, "state": state(m), "rand_after": enc(torch.rand(4))}
    return m


def causal_bool(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def causal_float(n):
    return nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64)


def record(name, make, train, inputs, call, seed=None):
    """inputs: list of (name, tensor); float tensors become leaves that require grad."""
    torch.manual_seed(1234)
    m = make().double()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(randn(*p.shape, scale=0.2))
    m.train(train)
    leaves = {}
    for k, t in inputs:
        t = t.detach().clone()
        if t.is_floating_point():
            t.requires_grad_(True)
        leaves[k] = t
    if seed is not None:
        torch.manual_seed(seed)
    out = call(m, leaves)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    loss = sum((o * upstream(o.shape, k)).sum() for k, o in enumerate(outs))
    loss.backward()
    CASES[name] = {
        "train": train,
        "seed": seed,
        "state": state(m),
        "inputs": {k: enc(t) for k, t in leaves.items()},
        "outputs": [enc(o) for o in outs],
        # None where the input takes no part (a causal mask replaced by the causal flag)
        "input_grads": {k: None if t.grad is None else enc(t.grad)
                        for k, t in leaves.items() if t.is_floating_point()},
        "param_grads": {k: enc(p.grad) for k, p in m.named_parameters()},
    }
    return m


def kpm(rows):
    return torch.tensor(rows, dtype=torch.bool)


# ----- initialisation ----------------------------------------------------------------------------

record_init("mha", 0, lambda: nn.MultiheadAttention(8, 2))
record_init("mha_no_bias", 1, lambda: nn.MultiheadAttention(8, 2, bias=False))
record_init("encoder_layer", 2, lambda: nn.TransformerEncoderLayer(8, 2, 16))
record_init("decoder_layer_no_bias", 3,
            lambda: nn.TransformerDecoderLayer(8, 2, 16, bias=False))
record_init("encoder_stack", 4, lambda: nn.TransformerEncoder(
    nn.TransformerEncoderLayer(8, 2, 16), 3, norm=nn.LayerNorm(8), enable_nested_tensor=False))
record_init("decoder_stack", 5, lambda: nn.TransformerDecoder(
    nn.TransformerDecoderLayer(8, 2, 16, norm_first=True), 2))

# ----- MultiheadAttention ------------------------------------------------------------------------

x = randn(5, 3, 8)
record("mha_self_weights", lambda: nn.MultiheadAttention(8, 2), True, [("x", x)],
       lambda m, i: m(i["x"], i["x"], i["x"]))

record("mha_cross_masks_per_head", lambda: nn.MultiheadAttention(8, 2, batch_first=True), False,
       [("q", randn(3, 4, 8)), ("k", randn(3, 6, 8)), ("v", randn(3, 6, 8)),
        ("key_padding_mask", kpm([[0, 0, 0, 0, 1, 1], [0, 1, 0, 0, 0, 0], [0] * 6])),
        ("attn_mask", randn(4, 6))],
       lambda m, i: m(i["q"], i["k"], i["v"], key_padding_mask=i["key_padding_mask"],
                      attn_mask=i["attn_mask"], average_attn_weights=False))

record("mha_causal_no_weights", lambda: nn.MultiheadAttention(8, 4), True,
       [("x", randn(5, 2, 8)), ("attn_mask", causal_bool(5))],
       lambda m, i: m(i["x"], i["x"], i["x"], attn_mask=i["attn_mask"], need_weights=False,
                      is_causal=True))

record("mha_unbatched_no_bias", lambda: nn.MultiheadAttention(8, 2, bias=False), False,
       [("q", randn(4, 8)), ("kv", randn(6, 8)),
        ("attn_mask", torch.tensor([[0, 1, 0, 0, 0, 1]] * 4, dtype=torch.bool)),
        ("key_padding_mask", kpm([0, 0, 1, 0, 0, 0]))],
       lambda m, i: m(i["q"], i["kv"], i["kv"], attn_mask=i["attn_mask"],
                      key_padding_mask=i["key_padding_mask"]))

record("mha_3d_mask_no_weights", lambda: nn.MultiheadAttention(8, 2), True,
       [("q", randn(4, 2, 8)), ("kv", randn(5, 2, 8)), ("attn_mask", randn(4, 4, 5))],
       lambda m, i: m(i["q"], i["kv"], i["kv"], attn_mask=i["attn_mask"], need_weights=False))

# ----- encoder and decoder layers ----------------------------------------------------------------

record("encoder_post_relu_train",
       lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), True,
       [("src", randn(5, 3, 8)), ("src_mask", causal_bool(5)),
        ("src_key_padding_mask", kpm([[0, 0, 0, 1, 1], [0] * 5, [0, 0, 0, 0, 1]]))],
       lambda m, i: m(i["src"], src_mask=i["src_mask"],
                      src_key_padding_mask=i["src_key_padding_mask"]))

record("encoder_pre_gelu_batch_first_eval",
       lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation="gelu",
                                          norm_first=True, batch_first=True), False,
       [("src", randn(3, 5, 8)),
        ("src_key_padding_mask", kpm([[0, 0, 1, 1, 1], [0] * 5, [0, 0, 0, 0, 1]]))],
       lambda m, i: m(i["src"], src_key_padding_mask=i["src_key_padding_mask"]))

record("encoder_causal_hint_unbatched",
       lambda: nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0, bias=False), True,
       [("src", randn(6, 8)), ("src_mask", causal_float(6))],
       lambda m, i: m(i["src"], src_mask=i["src_mask"], is_causal=True))

record("encoder_dropout_train",
       lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, activation="gelu"), True,
       [("src", randn(4, 2, 8))],
       lambda m, i: m(i["src"]), seed=7)

record("decoder_post_relu_train",
       lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), True,
       [("tgt", randn(4, 3, 8)), ("memory", randn(6, 3, 8)), ("tgt_mask", causal_float(4)),
        ("memory_key_padding_mask", kpm([[0, 0, 0, 0, 1, 1], [0] * 6, [1, 0, 0, 0, 0, 0]]))],
       lambda m, i: m(i["tgt"], i["memory"], tgt_mask=i["tgt_mask"], tgt_is_causal=True,
                      memory_key_padding_mask=i["memory_key_padding_mask"]))

record("decoder_pre_gelu_batch_first_eval",
       lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.1, activation="gelu",
                                          norm_first=True, batch_first=True), False,
       [("tgt", randn(3, 4, 8)), ("memory", randn(3, 6, 8)), ("memory_mask", randn(4, 6)),
        ("tgt_key_padding_mask", kpm([[0, 0, 0, 1], [0] * 4, [0, 0, 1, 1]]))],
       lambda m, i: m(i["tgt"], i["memory"], memory_mask=i["memory_mask"],
                      tgt_key_padding_mask=i["tgt_key_padding_mask"]))

# ----- stacks ------------------------------------------------------------------------------------

enc_stack = record(
    "encoder_stack_train",
    lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2,
                                  norm=nn.LayerNorm(8), enable_nested_tensor=False), True,
    [("src", randn(5, 3, 8)), ("mask", causal_float(5)),
     ("src_key_padding_mask", kpm([[0, 0, 0, 1, 1], [0] * 5, [0, 0, 0, 0, 1]]))],
    lambda m, i: m(i["src"], mask=i["mask"], src_key_padding_mask=i["src_key_padding_mask"]))

record(
    "decoder_stack_eval",
    lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, norm_first=True,
                                                             activation="gelu"), 2,
                                  norm=nn.LayerNorm(8)), False,
    [("tgt", randn(4, 2, 8)), ("memory", randn(5, 2, 8)), ("tgt_mask", causal_bool(4))],
    lambda m, i: m(i["tgt"], i["memory"], tgt_mask=i["tgt_mask"]))

# ----- errors and reprs --------------------------------------------------------------------------


def error(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the message is what is recorded
        ERRORS[name] = str(e)
    else:
        raise SystemExit(f"{name}: no error")


error("not_divisible", lambda: nn.MultiheadAttention(6, 4))
error("zero_heads", lambda: nn.MultiheadAttention(8, 0))
error("activation", lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"))
error("dropout", lambda: nn.TransformerEncoderLayer(8, 2, dropout=1.5))
mha = nn.MultiheadAttention(8, 2)
q6 = torch.zeros(3, 2, 6, requires_grad=True)
error("embed_dim", lambda: mha(q6, q6, q6))
q8 = torch.zeros(3, 2, 8, requires_grad=True)
error("causal_without_mask", lambda: mha(q8, q8, q8, is_causal=True))
error("attn_mask_shape", lambda: mha(q8, q8, q8, attn_mask=torch.zeros(3, 4)))
layer = nn.TransformerEncoderLayer(8, 2, 16)
error("int_padding_mask",
      lambda: layer(q8, src_key_padding_mask=torch.zeros(2, 3, dtype=torch.int64)))
error("int_stack_mask", lambda: nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)(
    q8, mask=torch.zeros(3, 3, dtype=torch.int64)))
error("empty_stack", lambda: nn.TransformerEncoder(layer, 0, enable_nested_tensor=False)(q8))

REPRS["mha"] = repr(nn.MultiheadAttention(8, 2))
REPRS["encoder_layer_gelu_no_bias"] = repr(
    nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", bias=False, layer_norm_eps=1e-6))
REPRS["encoder_stack"] = repr(nn.TransformerEncoder(
    nn.TransformerEncoderLayer(8, 2, 16), 3, norm=nn.LayerNorm(8), enable_nested_tensor=False))
REPRS["decoder_stack"] = repr(nn.TransformerDecoder(
    nn.TransformerDecoderLayer(8, 2, 32, dropout=0.0), 2))

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "data", "transformer_layers.json"), "w") as f:
    json.dump({"torch": torch.__version__, "inits": INITS, "cases": CASES, "errors": ERRORS,
               "reprs": REPRS}, f, separators=(",", ":"))
    f.write("\n")
# The stack's f64 state dict as PyTorch writes a checkpoint, for the loading test.
save_file({k: v.contiguous() for k, v in enc_stack.state_dict().items()},
          os.path.join(here, "data", "transformer_encoder_f64.safetensors"))
