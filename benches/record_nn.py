"""Records PyTorch's numbers for `autograd::nn`'s layers, losses and initialisers into
`tests/nn/data/layers.json`, which `tests/nn/layers.rs` replays.

    /tmp/torchenv/bin/python benches/record_nn.py

Everything is f64 and deterministic: the inputs are fixed values written into the JSON with the
results, so the Rust test feeds exactly the same numbers. For each case: the forward value and
the gradients of `(out * upstream).sum()` (a fixed `upstream` for non-scalar outputs) with
respect to the input and the parameters. Also: initialiser fans, gains and bounds, PyTorch's key
names for a `Sequential`, and PyTorch's error messages. Not part of the build or the tests.
"""

import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def values(n, seed, lo=-2.0, hi=2.0, away=0.1):
    """Deterministic values in [lo, hi], at least `away` from 0 (away from relu's kink)."""
    out = []
    s = seed * 2654435761 + 12345
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        u = (s >> 11) / float(1 << 53)
        v = lo + (hi - lo) * u
        if abs(v) < away:
            v = away if v >= 0 else -away
        out.append(v)
    return out


def tensor(shape, seed, **kw):
    n = math.prod(shape)
    return torch.tensor(values(n, seed, **kw)).reshape(shape)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def record(out, inputs):
    """Forward value and gradients of (out * upstream).sum() for each named input."""
    upstream = tensor(list(out.shape), 999) if out.dim() > 0 else torch.tensor(1.0)
    names = list(inputs)
    grads = torch.autograd.grad((out * upstream).sum(), [inputs[k] for k in names])
    case = {"shape": list(out.shape), "out": flat(out), "upstream": flat(upstream)}
    for k, g in zip(names, grads):
        case["grad_" + k] = flat(g)
    return case


def leaf(shape, seed, **kw):
    return tensor(shape, seed, **kw).requires_grad_(True)


data = {"inputs": {}, "cases": {}}
cases = data["cases"]

# ----- activations on x [3, 4] -----------------------------------------------------------------
x = leaf([3, 4], 1, lo=-3.0, hi=3.0)
data["inputs"]["act_x"] = {"shape": [3, 4], "values": flat(x)}
activations = {
    "relu": nn.ReLU(),
    "tanh": nn.Tanh(),
    "sigmoid": nn.Sigmoid(),
    "gelu": nn.GELU(),
    "gelu_tanh": nn.GELU(approximate="tanh"),
    "leaky_relu": nn.LeakyReLU(),
    "leaky_relu_02": nn.LeakyReLU(0.2),
    "softmax_1": nn.Softmax(dim=1),
    "softmax_0": nn.Softmax(dim=0),
    "log_softmax_m1": nn.LogSoftmax(dim=-1),
    "identity": nn.Identity(),
}
for name, m in activations.items():
    cases[name] = record(m(x), {"x": x})

# ----- Linear -------------------------------------------------------------------------------------
lin = nn.Linear(4, 3)
with torch.no_grad():
    lin.weight.copy_(tensor([3, 4], 2))
    lin.bias.copy_(tensor([3], 3))
cases["linear"] = record(lin(x), {"x": x, "weight": lin.weight, "bias": lin.bias})
cases["linear"]["weight"] = flat(lin.weight)
cases["linear"]["bias"] = flat(lin.bias)

# ----- LayerNorm ----------------------------------------------------------------------------------
ln_x = leaf([2, 3, 4], 4)
data["inputs"]["ln_x"] = {"shape": [2, 3, 4], "values": flat(ln_x)}
ln = nn.LayerNorm([3, 4])
with torch.no_grad():
    ln.weight.copy_(tensor([3, 4], 5))
    ln.bias.copy_(tensor([3, 4], 6))
cases["layer_norm"] = record(ln(ln_x), {"x": ln_x, "weight": ln.weight, "bias": ln.bias})
cases["layer_norm"]["weight"] = flat(ln.weight)
cases["layer_norm"]["bias"] = flat(ln.bias)
ln2 = nn.LayerNorm(4, eps=1e-3, elementwise_affine=False)
cases["layer_norm_plain"] = record(ln2(ln_x), {"x": ln_x})

# ----- Embedding ----------------------------------------------------------------------------------
emb = nn.Embedding(6, 3, padding_idx=0)
with torch.no_grad():
    emb.weight.copy_(tensor([6, 3], 7))
idx = torch.tensor([[1, 0, 4], [4, 2, 0]])
data["inputs"]["emb_idx"] = {"shape": [2, 3], "values": [float(v) for v in idx.reshape(-1)]}
cases["embedding_pad0"] = record(emb(idx), {"weight": emb.weight})
cases["embedding_pad0"]["weight"] = flat(emb.weight)
emb.padding_idx = None
cases["embedding"] = record(emb(idx), {"weight": emb.weight})

# ----- losses ---------------------------------------------------------------------------------------
logits = leaf([5, 4], 8, lo=-3.0, hi=3.0)
targets = [1, 0, 3, 3, 2]
w = torch.tensor([0.5, 2.0, 1.0, 1.5])
data["inputs"]["logits"] = {"shape": [5, 4], "values": flat(logits)}
data["inputs"]["targets"] = targets
data["inputs"]["class_weight"] = flat(w)
t = torch.tensor(targets)
ce_variants = {
    "ce_mean": {},
    "ce_sum": {"reduction": "sum"},
    "ce_none": {"reduction": "none"},
    "ce_smooth": {"label_smoothing": 0.1},
    "ce_smooth_none": {"label_smoothing": 0.25, "reduction": "none"},
    "ce_ignore": {"ignore_index": 3},
    "ce_ignore_none": {"ignore_index": 3, "reduction": "none"},
    "ce_weight": {"weight": w},
    "ce_weight_ignore_smooth": {"weight": w, "ignore_index": 0, "label_smoothing": 0.2},
    "ce_weight_smooth_sum": {"weight": w, "label_smoothing": 0.3, "reduction": "sum"},
}
for name, kw in ce_variants.items():
    cases[name] = record(F.cross_entropy(logits, t, **kw), {"x": logits})
nll_variants = {
    "nll_mean": {},
    "nll_sum": {"reduction": "sum"},
    "nll_none": {"reduction": "none"},
    "nll_weight_ignore": {"weight": w, "ignore_index": 3},
}
for name, kw in nll_variants.items():
    cases[name] = record(F.nll_loss(logits, t, **kw), {"x": logits})

# [N, C, d] logits (targets [N, d]) and one unbatched sample [C].
logits3 = leaf([2, 4, 3], 12, lo=-3.0, hi=3.0)
targets3 = torch.tensor([[1, 0, 3], [3, 2, 2]])
data["inputs"]["logits3"] = {"shape": [2, 4, 3], "values": flat(logits3)}
data["inputs"]["targets3"] = [int(v) for v in targets3.reshape(-1)]
for name, kw in {
    "ce3_mean": {"ignore_index": 3},
    "ce3_none": {"label_smoothing": 0.2, "reduction": "none", "weight": w},
    "nll3_sum": {"reduction": "sum"},
}.items():
    f = F.nll_loss if name.startswith("nll") else F.cross_entropy
    cases[name] = record(f(logits3, targets3, **kw), {"x": logits3})
logits1 = leaf([4], 13, lo=-3.0, hi=3.0)
data["inputs"]["logits1"] = {"shape": [4], "values": flat(logits1)}
cases["ce1_none"] = record(F.cross_entropy(logits1, torch.tensor(2), reduction="none", label_smoothing=0.1), {"x": logits1})

y = tensor([3, 4], 9)
data["inputs"]["mse_target"] = flat(y)
for red in ["mean", "sum", "none"]:
    cases["mse_" + red] = record(F.mse_loss(x, y, reduction=red), {"x": x})

soft = torch.tensor(values(12, 10, lo=0.0, hi=1.0, away=0.0)).reshape(3, 4)
pos_weight = torch.tensor([1.0, 2.0, 0.5, 3.0])
bce_weight = tensor([3, 4], 11, lo=0.1, hi=2.0)
data["inputs"]["bce_target"] = flat(soft)
data["inputs"]["pos_weight"] = flat(pos_weight)
data["inputs"]["bce_weight"] = flat(bce_weight)
bce_variants = {
    "bce_mean": {},
    "bce_sum": {"reduction": "sum"},
    "bce_none": {"reduction": "none"},
    "bce_pos_weight": {"pos_weight": pos_weight},
    "bce_weight_pos_weight_sum": {"weight": bce_weight, "pos_weight": pos_weight, "reduction": "sum"},
}
for name, kw in bce_variants.items():
    cases[name] = record(F.binary_cross_entropy_with_logits(x, soft, **kw), {"x": x})

# ----- Sequential: key names and a forward with given parameters -----------------------------------
torch.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 3), nn.Tanh(), nn.LayerNorm(3),
    nn.Linear(3, 2, bias=False),
)
mlp.eval()
sd = mlp.state_dict()
data["sequential"] = {
    "keys": list(sd.keys()),
    "shapes": [list(v.shape) for v in sd.values()],
    "values": [flat(v) for v in sd.values()],
    "out": flat(mlp(x)),
}

# ----- initialisers ---------------------------------------------------------------------------------
shapes = [[3, 5], [16, 8, 3, 3], [10, 4, 5], [7, 2, 1, 1, 2], [1, 300]]
init = {"shapes": shapes, "fans": [], "kaiming": [], "xavier": []}
for s in shapes:
    tt = torch.empty(s)
    fi, fo = nn.init._calculate_fan_in_and_fan_out(tt)
    init["fans"].append([fi, fo])
    for a, mode, nl in [(math.sqrt(5), "fan_in", "leaky_relu"), (0.0, "fan_out", "relu"),
                        (0.0, "fan_in", "tanh"), (0.3, "fan_out", "leaky_relu")]:
        std = nn.init.calculate_gain(nl, a) / math.sqrt(nn.init._calculate_correct_fan(tt, mode))
        init["kaiming"].append({"shape": s, "a": a, "mode": mode, "nonlinearity": nl,
                                "std": std, "bound": math.sqrt(3.0) * std})
    for gain in [1.0, 5.0 / 3.0]:
        std = gain * math.sqrt(2.0 / float(fi + fo))
        init["xavier"].append({"shape": s, "gain": gain, "std": std, "bound": math.sqrt(3.0) * std})
init["gains"] = {nl: nn.init.calculate_gain(nl) for nl in
                 ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]}
init["leaky_relu_gain_02"] = nn.init.calculate_gain("leaky_relu", 0.2)
# nn.Linear(in, out)'s default: the weight and bias bounds.
init["linear_bounds"] = []
for fan_in, fan_out in [(4, 3), (100, 10), (784, 256)]:
    w_ = torch.empty(fan_out, fan_in)
    std = nn.init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan_in)
    init["linear_bounds"].append({"in": fan_in, "out": fan_out, "weight": math.sqrt(3.0) * std,
                                  "bias": 1.0 / math.sqrt(fan_in)})
data["init"] = init

# ----- error messages -------------------------------------------------------------------------------


def message(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the message is what is recorded
        return str(e)
    raise AssertionError("no error")


data["errors"] = {
    "dropout_p": message(lambda: nn.Dropout(1.5)),
    "dropout_p_neg": message(lambda: F.dropout(x, -0.25)),
    "dropout_p_2": message(lambda: nn.Dropout(2.0)),
    "dropout_p_tiny": message(lambda: F.dropout(x, -1e-05)),
    "target_oob": message(lambda: F.cross_entropy(logits, torch.tensor([1, 0, 4, 3, 2]))),
    "nll_target_oob": message(lambda: F.nll_loss(logits, torch.tensor([1, 0, 7, 3, 2]))),
    "batch_mismatch": message(lambda: F.cross_entropy(logits, torch.tensor([1, 0]))),
    "label_smoothing": message(lambda: F.cross_entropy(logits, t, label_smoothing=1.5)),
    "embedding_oob": message(lambda: nn.Embedding(6, 3)(torch.tensor([6]))),
    "layer_norm_shape": message(lambda: F.layer_norm(torch.zeros(2, 3), [4])),
    "bce_size": message(lambda: F.binary_cross_entropy_with_logits(torch.zeros(3), torch.zeros(2))),
    "fan_1d": message(lambda: nn.init._calculate_fan_in_and_fan_out(torch.zeros(5))),
    "padding_idx": message(lambda: nn.Embedding(6, 3, padding_idx=6)),
}

path = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "data", "layers.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump(data, f, separators=(",", ":"))
print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")
