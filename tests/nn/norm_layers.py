"""Records the PyTorch 2.15 values that tests/nn/norm_layers.rs replays: run
`python tests/nn/norm_layers.py` (from the repository root, with PyTorch and safetensors
installed) to rewrite tests/nn/data/norm_layers.json and tests/nn/data/norm_resnet.safetensors.

- `init`: the state dicts of the layers (and of a small ResNet) built after `torch.manual_seed`.
- `layers`: f64 cases of BatchNorm1d/2d (train and eval, momentum None, no running stats),
  GroupNorm, RMSNorm, the activation modules: parameters, buffers, input, output, the gradients
  of `(out * upstream).sum()` for the input and every parameter, and the buffers afterwards.
- `resize`: `F.interpolate` and `F.adaptive_avg_pool2d` cases, output and input gradient.
- `resnet`: a BasicBlock (conv-BN-ReLU-conv-BN + a conv-BN shortcut), global average pooling and
  a linear head, in f64, loaded from norm_resnet.safetensors (a PyTorch state_dict with perturbed
  BN statistics); one training-mode step and one eval-mode step.
- `errors`, `reprs`: PyTorch's messages and `str(module)` texts."""
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

GEN = torch.Generator().manual_seed(3636)


def randn(*shape):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64)


def upstream(shape):
    n = math.prod(shape)
    return torch.cos(torch.arange(n, dtype=torch.float64) * 0.37 + 0.1).reshape(shape)


def enc(t):
    t = t.detach()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "data": t.flatten().tolist()}


def enc_dict(d):
    # A list of [key, tensor] pairs: the order is part of what is compared.
    return [[k, enc(v)] for k, v in d.items()]


OUT = {"init": {}, "layers": [], "resize": [], "errors": {}, "reprs": {}}

# ----- initial state dicts after manual_seed -------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                        nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.downsample(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = BasicBlock(3, 4, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.pool(self.block(x)).flatten(1))


for name, make in [
    ("batch_norm1d", lambda: nn.BatchNorm1d(5)),
    ("batch_norm2d_no_affine", lambda: nn.BatchNorm2d(3, affine=False)),
    ("group_norm", lambda: nn.GroupNorm(2, 6)),
    ("rms_norm", lambda: nn.RMSNorm([2, 3])),
    ("resnet", Net),
]:
    torch.manual_seed(7)
    OUT["init"][name] = enc_dict(make().state_dict())

# ----- single layers in f64 ------------------------------------------------------------------


def run_layer(name, module, inputs, train=True):
    """inputs: list of input tensors, run one after another; each records its output and
    gradients (grads zeroed between)."""
    module = module.double()
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(*p.shape) * 0.5 + 1.0)
        for n, b in module.named_buffers():
            if n.endswith("running_mean"):
                b.copy_(randn(*b.shape) * 0.3)
            elif n.endswith("running_var"):
                b.copy_(randn(*b.shape).abs() + 0.5)
    module.train(train)
    case = {"name": name, "state": enc_dict(module.state_dict()), "steps": []}
    for x in inputs:
        x = x.clone().requires_grad_(True)
        module.zero_grad()
        y = module(x)
        y.mul(upstream(y.shape)).sum().backward()
        case["steps"].append({
            "input": enc(x), "output": enc(y), "grad_input": enc(x.grad),
            "grads": {n: enc(p.grad) for n, p in module.named_parameters()},
            "state_after": enc_dict(module.state_dict()),
        })
    OUT["layers"].append(case)


run_layer("bn1d_2d_train", nn.BatchNorm1d(4), [randn(6, 4), randn(6, 4) * 2 + 1])
run_layer("bn1d_3d_train_momentum_none", nn.BatchNorm1d(3, momentum=None, eps=1e-3),
          [randn(4, 3, 5), randn(4, 3, 5) + 2, randn(2, 3, 5) * 3])
run_layer("bn1d_eval", nn.BatchNorm1d(3), [randn(4, 3, 5)], train=False)
run_layer("bn1d_no_running_stats_eval", nn.BatchNorm1d(3, track_running_stats=False),
          [randn(4, 3, 2)], train=False)
run_layer("bn2d_train_no_affine", nn.BatchNorm2d(3, affine=False, momentum=0.3),
          [randn(2, 3, 4, 5), randn(3, 3, 2, 2)])
run_layer("bn2d_eval_no_bias", nn.BatchNorm2d(3, bias=False), [randn(2, 3, 4, 5)], train=False)
run_layer("group_norm_3d", nn.GroupNorm(2, 6), [randn(3, 6, 4)])
run_layer("group_norm_4d_no_affine", nn.GroupNorm(3, 6, eps=1e-3, affine=False),
          [randn(2, 6, 3, 3)])
run_layer("rms_norm", nn.RMSNorm([3, 4]), [randn(2, 3, 4)])
run_layer("rms_norm_eps_no_affine", nn.RMSNorm(4, eps=1e-2, elementwise_affine=False),
          [randn(5, 4) * 0.1])
for name, m in [("silu", nn.SiLU()), ("mish", nn.Mish()), ("softplus", nn.Softplus(2.0, 1.5)),
                ("hardtanh", nn.Hardtanh(-0.5, 0.75)), ("relu6", nn.ReLU6()),
                ("elu", nn.ELU(0.7)), ("selu", nn.SELU()), ("celu", nn.CELU(1.3))]:
    run_layer(name, m, [randn(3, 7) * 3])

# ----- interpolate and adaptive average pooling ------------------------------------------------


def resize(name, x, fn, **kw):
    x = x.clone().requires_grad_(True)
    y = fn(x)
    y.mul(upstream(y.shape)).sum().backward()
    OUT["resize"].append({"name": name, "input": enc(x), "output": enc(y),
                          "grad_input": enc(x.grad), **kw})


def interp(name, shape, size=None, scale_factor=None, mode="nearest", align_corners=None,
           recompute_scale_factor=None):
    resize(name, randn(*shape),
           lambda x: F.interpolate(x, size=size, scale_factor=scale_factor, mode=mode,
                                   align_corners=align_corners,
                                   recompute_scale_factor=recompute_scale_factor),
           op="interpolate", size=size, scale_factor=scale_factor, mode=mode,
           align_corners=align_corners, recompute_scale_factor=recompute_scale_factor)


interp("nearest_size", (2, 2, 3, 4), size=(5, 7))
interp("nearest_down", (1, 2, 7, 9), size=(3, 4))
interp("nearest_scale2", (1, 2, 3, 3), scale_factor=2.0)
interp("nearest_scale_1_7", (1, 1, 5, 6), scale_factor=(1.7, 2.3))
interp("nearest_scale_0_6_recompute", (1, 1, 7, 9), scale_factor=0.6,
       recompute_scale_factor=True)
interp("nearest_3d", (2, 3, 4), size=9)
interp("nearest_5d", (1, 2, 2, 3, 4), size=(3, 5, 6))
interp("nearest_exact", (1, 2, 5, 4), size=(7, 3), mode="nearest-exact")
interp("nearest_exact_scale", (1, 1, 4, 6), scale_factor=1.5, mode="nearest-exact")
interp("bilinear", (2, 2, 3, 4), size=(5, 7), mode="bilinear")
interp("bilinear_align", (2, 2, 3, 4), size=(5, 7), mode="bilinear", align_corners=True)
interp("bilinear_down", (1, 2, 8, 9), size=(3, 4), mode="bilinear")
interp("bilinear_scale", (1, 2, 4, 5), scale_factor=(1.5, 2.5), mode="bilinear")
interp("bilinear_scale_align", (1, 1, 4, 5), scale_factor=1.7, mode="bilinear",
       align_corners=True)
interp("bilinear_same_rows", (1, 1, 4, 5), size=(4, 9), mode="bilinear")
interp("bilinear_one", (1, 1, 4, 5), size=(1, 3), mode="bilinear", align_corners=True)
interp("linear", (2, 3, 5), size=8, mode="linear")
interp("trilinear", (1, 1, 3, 4, 2), size=(5, 3, 4), mode="trilinear", align_corners=False)
interp("area", (1, 2, 7, 9), size=(3, 4), mode="area")
interp("area_scale", (1, 2, 6, 6), scale_factor=0.5, mode="area")


def adaptive(name, shape, output_size):
    resize(name, randn(*shape), lambda x: F.adaptive_avg_pool2d(x, output_size),
           op="adaptive_avg_pool2d", output_size=output_size)


adaptive("adaptive_uneven", (2, 3, 7, 5), (3, 2))
adaptive("adaptive_divisible", (1, 2, 8, 6), (4, 3))
adaptive("adaptive_global", (2, 3, 5, 4), 1)
adaptive("adaptive_keep_rows", (2, 3, 5, 4), (None, 3))
adaptive("adaptive_3d_upsample", (3, 2, 3), (5, 4))

# ----- the ResNet block ------------------------------------------------------------------------

torch.manual_seed(7)
net = Net().double()
with torch.no_grad():
    for n, b in net.named_buffers():
        if n.endswith("running_mean"):
            b.copy_(randn(*b.shape) * 0.2)
        elif n.endswith("running_var"):
            b.copy_(randn(*b.shape).abs() + 0.6)
        elif n.endswith("num_batches_tracked"):
            b.fill_(5)
    for n, p in net.named_parameters():
        if ".bn" in n or "downsample.1" in n:
            p.add_(randn(*p.shape) * 0.1)
save_file({k: v.contiguous() for k, v in net.state_dict().items()},
          "tests/nn/data/norm_resnet.safetensors")
res = {"steps": []}
for mode, shape in [("train", (4, 3, 8, 8)), ("eval", (2, 3, 6, 7))]:
    net.train(mode == "train")
    net.zero_grad()
    x = randn(*shape).requires_grad_(True)
    y = net(x)
    y.mul(upstream(y.shape)).sum().backward()
    res["steps"].append({
        "mode": mode, "input": enc(x), "output": enc(y), "grad_input": enc(x.grad),
        "grads": {n: enc(p.grad) for n, p in net.named_parameters()},
        "state_after": enc_dict(net.state_dict()),
    })
OUT["resnet"] = res
OUT["reprs"]["resnet"] = str(net)

# ----- errors and reprs ------------------------------------------------------------------------


def err(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        OUT["errors"][name] = str(e)
        return
    raise AssertionError(f"{name}: no error")


z = torch.zeros
err("bn1d_4d", lambda: nn.BatchNorm1d(3)(z(2, 3, 4, 5)))
err("bn2d_3d", lambda: nn.BatchNorm2d(3)(z(2, 3, 4)))
err("bn3d_4d", lambda: nn.BatchNorm3d(3)(z(2, 3, 4, 4)))
err("bn1d_one_value", lambda: nn.BatchNorm1d(3)(z(1, 3)))
err("bn1d_channels", lambda: nn.BatchNorm1d(3)(z(2, 4)))
err("bn1d_channels_eval", lambda: nn.BatchNorm1d(3).eval()(z(2, 4)))
err("gn_divisible", lambda: nn.GroupNorm(4, 6))
err("gn_channels", lambda: nn.GroupNorm(2, 4)(z(2, 6, 3)))
err("rms_shape", lambda: nn.RMSNorm(4)(z(2, 3)))
err("adaptive_2d", lambda: F.adaptive_avg_pool2d(z(2, 3), 2))
err("adaptive_5d", lambda: F.adaptive_avg_pool2d(z(2, 3, 4, 5, 6), 2))
err("adaptive_len", lambda: F.adaptive_avg_pool2d(z(2, 3, 4, 5), (2, 2, 2)))
err("adaptive_short", lambda: F.adaptive_avg_pool2d(z(3, 4), (None, 2)))
err("adaptive_empty", lambda: F.adaptive_avg_pool2d(z(2, 3, 0, 5), (2, 2)))
err("interp_neither", lambda: F.interpolate(z(2, 3, 4, 5)))
err("interp_both", lambda: F.interpolate(z(2, 3, 4, 5), size=3, scale_factor=2.0))
err("interp_align_nearest", lambda: F.interpolate(z(2, 3, 4, 5), size=3, align_corners=True))
err("interp_bilinear_3d", lambda: F.interpolate(z(2, 3, 4), size=3, mode="bilinear"))
err("interp_linear_4d", lambda: F.interpolate(z(2, 3, 4, 4), size=3, mode="linear"))
err("interp_size_len", lambda: F.interpolate(z(2, 3, 4, 5), size=(3, 4, 5)))
err("interp_scale_len", lambda: F.interpolate(z(2, 3, 4, 5), scale_factor=(3.0, 4.0, 5.0)))
err("interp_2d", lambda: F.interpolate(z(2, 3), size=3))
err("interp_zero_out", lambda: F.interpolate(z(2, 3, 4, 5), size=(0, 3)))
err("interp_zero_scale", lambda: F.interpolate(z(2, 3, 4, 5), scale_factor=0.1))
err("interp_zero_in", lambda: F.interpolate(z(2, 3, 0, 5), size=(2, 3), mode="bilinear"))
err("interp_zero_1d", lambda: F.interpolate(z(2, 3, 4), size=0))
err("interp_zero_3d", lambda: F.interpolate(z(1, 1, 2, 3, 4), size=(1, 0, 2)))
err("interp_recompute_size", lambda: F.interpolate(z(2, 3, 4, 5), size=3,
                                                   recompute_scale_factor=True))
err("hardtanh_range", lambda: nn.Hardtanh(2.0, 1.0))

for name, m in [
    ("bn1d", nn.BatchNorm1d(4)),
    ("bn2d_options", nn.BatchNorm2d(3, eps=1e-3, momentum=None, affine=False,
                                     track_running_stats=False)),
    ("bn2d_no_bias", nn.BatchNorm2d(3, momentum=0.25, bias=False)),
    ("bn3d", nn.BatchNorm3d(2)),
    ("gn", nn.GroupNorm(2, 4)),
    ("gn_options", nn.GroupNorm(2, 4, eps=1e-6, affine=False)),
    ("rms", nn.RMSNorm(4)),
    ("rms_options", nn.RMSNorm([2, 3], eps=1e-6, elementwise_affine=False)),
    ("pool_1", nn.AdaptiveAvgPool2d(1)),
    ("pool_none", nn.AdaptiveAvgPool2d((None, 7))),
    ("pool_pair", nn.AdaptiveAvgPool2d((5, 7))),
    ("up_scale", nn.Upsample(scale_factor=2)),
    ("up_size_pair", nn.Upsample(size=(4, 6), mode="bilinear", align_corners=True)),
    ("up_size", nn.Upsample(size=5, mode="bilinear")),
    ("up_scale_pair", nn.Upsample(scale_factor=(2, 1.5), mode="nearest-exact")),
    ("silu", nn.SiLU()), ("mish", nn.Mish()), ("softplus", nn.Softplus()),
    ("softplus_options", nn.Softplus(beta=2.0, threshold=10.0)),
    ("hardtanh", nn.Hardtanh()), ("hardtanh_options", nn.Hardtanh(-2.0, 3.0)),
    ("relu6", nn.ReLU6()), ("elu", nn.ELU()), ("selu", nn.SELU()), ("celu", nn.CELU(0.5)),
]:
    OUT["reprs"][name] = str(m)

with open("tests/nn/data/norm_layers.json", "w") as f:
    json.dump(OUT, f)
print("wrote tests/nn/data/norm_layers.json and tests/nn/data/norm_resnet.safetensors")
