"""Records the PyTorch 2.15 values that tests/nn/conv_layers.rs replays: run
`python tests/nn/conv_layers.py` (from the repository root, with PyTorch and safetensors
installed) to rewrite tests/nn/data/conv_layers.json and tests/nn/data/conv_decoder.safetensors.

- `conv1d`, `conv_transpose2d`: F.conv1d / F.conv_transpose2d on f64 inputs drawn here, then
  `y.backward(upstream)`; the outputs and the gradients of input, weight and bias.
- `init`: `torch.manual_seed(seed)` then the layer's constructor: its state_dict (f32 values,
  exact in JSON as doubles) and the next `torch.rand(1)` draw (where the stream continues).
- `modules`: a layer built with options, its parameters replaced by f64 ones (the state dict
  recorded), forward (with `output_size` where given) and the gradients; and its repr.
- `decoder`: a small ConvTranspose2d stack in f64 whose state_dict is saved with
  safetensors (conv_decoder.safetensors); its input, output and gradients.
- `errors`: PyTorch's messages for bad arguments."""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = torch.Generator().manual_seed(1036)


def randn(*shape):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64)


def upstream(shape):
    n = math.prod(shape)
    return torch.cos(torch.arange(n, dtype=torch.float64) * 0.7 + 0.3).reshape(shape)


def enc(t):
    return {"shape": list(t.shape), "data": t.detach().double().flatten().tolist()}


def functional_case(name, f, x_shape, w_shape, bias, **kw):
    x = randn(*x_shape).requires_grad_()
    w = randn(*w_shape).requires_grad_()
    b = randn(bias).requires_grad_() if bias else None
    y = f(x, w, b, **kw)
    g = upstream(y.shape)
    y.backward(g)
    return {
        "name": name,
        "args": kw,
        "input": enc(x),
        "weight": enc(w),
        "bias": enc(b) if b is not None else None,
        "output": enc(y),
        "grad_output": enc(g),
        "grad_input": enc(x.grad),
        "grad_weight": enc(w.grad),
        "grad_bias": enc(b.grad) if b is not None else None,
    }


def conv1d_cases():
    c = lambda *a, **k: functional_case(a[0], F.conv1d, *a[1:], **k)
    return [
        c("plain", (2, 3, 9), (4, 3, 3), 4),
        c("no_bias", (2, 3, 9), (4, 3, 3), None),
        c("stride_padding", (2, 3, 10), (5, 3, 4), 5, stride=3, padding=2),
        c("dilation", (1, 2, 12), (3, 2, 3), 3, dilation=3, padding=1),
        c("groups", (2, 6, 8), (4, 3, 3), 4, groups=2),
        c("depthwise", (2, 4, 7), (8, 1, 2), 8, groups=4, stride=2),
        c("unbatched", (3, 6), (2, 3, 2), 2, padding=1),
        c("kernel_1", (3, 2, 5), (4, 2, 1), 4),
        c("everything", (2, 6, 11), (6, 2, 3), 6, stride=2, padding=3, dilation=2, groups=3),
    ]


def conv_transpose2d_cases():
    c = lambda *a, **k: functional_case(a[0], F.conv_transpose2d, *a[1:], **k)
    return [
        c("plain", (2, 3, 4, 4), (3, 2, 3, 3), 2),
        c("no_bias", (2, 3, 3, 5), (3, 4, 2, 3), None),
        c("stride2", (2, 3, 4, 4), (3, 2, 3, 3), 2, stride=2),
        c("upsample", (2, 4, 3, 3), (4, 3, 4, 4), 3, stride=2, padding=1),
        c("output_padding", (1, 3, 4, 5), (3, 2, 3, 3), 2, stride=2, padding=1, output_padding=1),
        c("rect", (2, 2, 3, 4), (2, 3, 2, 3), 3, stride=(2, 3), padding=(1, 0),
          output_padding=(1, 2), dilation=(1, 2)),
        c("dilation", (1, 2, 4, 4), (2, 2, 3, 3), 2, dilation=2, padding=1),
        c("output_padding_dilation", (1, 2, 3, 3), (2, 1, 2, 2), 1, dilation=3,
          output_padding=2),
        c("groups", (2, 4, 3, 3), (4, 3, 3, 3), 6, groups=2, stride=2),
        c("depthwise", (2, 3, 3, 4), (3, 1, 2, 2), 3, groups=3, stride=2, padding=1),
        c("unbatched", (3, 3, 3), (3, 2, 2, 2), 2, stride=2),
        c("kernel_1", (2, 3, 3, 3), (3, 4, 1, 1), 4, stride=2),
        c("padding_crops", (1, 2, 5, 5), (2, 2, 3, 3), 2, padding=2),
    ]


def state(m):
    return {k: enc(v) for k, v in m.state_dict().items()}


def init_cases():
    out = []

    def rec(name, seed, build):
        torch.manual_seed(seed)
        m = build()
        out.append({"name": name, "seed": seed, "keys": list(m.state_dict()),
                    "state_dict": state(m),
                    "next": torch.rand(1).item()})

    rec("conv1d", 0, lambda: nn.Conv1d(3, 4, 3))
    rec("conv1d_groups", 1, lambda: nn.Conv1d(4, 6, 5, groups=2))
    rec("conv1d_no_bias", 2, lambda: nn.Conv1d(2, 3, 2, bias=False))
    rec("conv_transpose2d", 0, lambda: nn.ConvTranspose2d(3, 4, 3))
    rec("conv_transpose2d_rect", 3, lambda: nn.ConvTranspose2d(5, 2, (2, 3), stride=2))
    rec("conv_transpose2d_groups", 4, lambda: nn.ConvTranspose2d(4, 6, 3, groups=2))
    rec("conv_transpose2d_no_bias", 5, lambda: nn.ConvTranspose2d(2, 3, 2, bias=False))
    return out


def f64_params(m):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(randn(*p.shape))
    return m.double()


def module_cases():
    out = []

    def rec(name, kind, build, x_shape, output_size=None, eval_mode=False):
        m = f64_params(build())
        if eval_mode:
            m.eval()
        x = randn(*x_shape).requires_grad_()
        y = m(x) if output_size is None else m(x, output_size=output_size)
        g = upstream(y.shape)
        y.backward(g)
        out.append({
            "name": name, "kind": kind, "repr": repr(m), "keys": list(m.state_dict()),
            "state_dict": state(m),
            "input": enc(x), "output_size": output_size, "output": enc(y),
            "grad_output": enc(g), "grad_input": enc(x.grad),
            "grad_params": {k: enc(p.grad) for k, p in m.named_parameters()},
        })

    rec("conv1d", "conv1d", lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2,
                                              groups=2), (2, 4, 9))
    rec("conv1d_no_bias", "conv1d", lambda: nn.Conv1d(3, 2, 2, bias=False), (3, 5))
    rec("conv_transpose2d", "conv_transpose2d",
        lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1,
                                   dilation=(1, 2), groups=2), (2, 4, 3, 3))
    rec("conv_transpose2d_eval_no_bias", "conv_transpose2d",
        lambda: nn.ConvTranspose2d(3, 2, 3, bias=False), (3, 2, 2), eval_mode=True)
    rec("conv_transpose2d_output_size", "conv_transpose2d",
        lambda: nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1), (2, 3, 3, 4),
        output_size=[8, 10])
    rec("conv_transpose2d_output_size_full", "conv_transpose2d",
        lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (1, 3, 4, 4),
        output_size=[1, 2, 10, 9])
    return out


class Decoder(nn.Module):
    """A DCGAN-style decoder: 8×3×3 latents up to 1×24×24 images."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1),  # 6
            nn.Tanh(),
            nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2),  # 12
            nn.Tanh(),
            nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1, bias=False),  # 24
        )

    def forward(self, z):
        return self.net(z)


def decoder_case():
    torch.manual_seed(7)
    d = Decoder().double()
    save_file({k: v.contiguous() for k, v in d.state_dict().items()},
              os.path.join(HERE, "data", "conv_decoder.safetensors"))
    z = randn(2, 8, 3, 3).requires_grad_()
    y = d(z)
    g = upstream(y.shape)
    y.backward(g)
    return {"repr": repr(d.net), "input": enc(z), "output": enc(y), "grad_output": enc(g),
            "grad_input": enc(z.grad),
            "grad_params": {k: enc(p.grad) for k, p in d.named_parameters()}}


def message(f):
    try:
        f()
    except (RuntimeError, ValueError) as e:
        return str(e).split("\n")[0]
    raise AssertionError("no error")


def error_cases():
    z = lambda *s: torch.zeros(*s, dtype=torch.float64)
    out = []

    def rec(op, x, w, b=None, **kw):
        f = F.conv1d if op == "conv1d" else F.conv_transpose2d
        out.append({"op": op, "input_shape": list(x), "weight_shape": list(w),
                    "bias_shape": None if b is None else list(b), "args": kw,
                    "message": message(lambda: f(z(*x), z(*w), None if b is None else z(*b),
                                                 **kw))})

    rec("conv1d", (3,), (4, 3, 3))
    rec("conv1d", (1, 2, 3, 4), (4, 3, 3))
    rec("conv1d", (2, 5, 10), (4, 3, 3))
    rec("conv1d", (5, 10), (4, 3, 3))
    rec("conv1d", (2, 3, 10), (4, 3, 3, 1))
    rec("conv1d", (2, 3, 10), (4, 3))
    rec("conv1d", (2, 3, 10), (4, 3, 3), (3,))
    rec("conv1d", (2, 3, 10), (4, 3, 20))
    rec("conv1d", (2, 3, 10), (4, 3, 6), dilation=2)
    rec("conv1d", (2, 3, 0), (4, 3, 3))
    rec("conv1d", (2, 3, 10), (4, 3, 3), stride=0)
    rec("conv1d", (2, 3, 10), (4, 3, 3), dilation=0)
    rec("conv1d", (2, 3, 10), (4, 3, 3), groups=0)
    rec("conv1d", (2, 6, 10), (4, 3, 3), groups=3)
    rec("conv1d", (2, 6, 10), (4, 3, 3), groups=8)
    with torch.backends.mkldnn.flags(enabled=False):  # oneDNN words this one its own way
        rec("conv1d", (2, 3, 10), (4, 3, 0))
    rec("conv_transpose2d", (2, 3, 4), (3, 2, 3, 3))
    rec("conv_transpose2d", (2, 3, 4, 4, 4), (3, 2, 3, 3))
    rec("conv_transpose2d", (4,), (3, 2, 3, 3))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), stride=2, output_padding=2)
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), output_padding=1)
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), stride=(1, 2), output_padding=(0, 2))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), stride=0)
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), stride=0, dilation=0)
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), dilation=(0, 1))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), groups=0)
    rec("conv_transpose2d", (1, 4, 4, 4), (3, 2, 3, 3))
    rec("conv_transpose2d", (1, 4, 4, 4), (3, 2, 3, 3), groups=0, output_padding=3)
    rec("conv_transpose2d", (1, 4, 4, 4), (4, 2, 3, 3), groups=3)
    rec("conv_transpose2d", (1, 4, 4, 4), (4, 2, 3, 3), groups=8)
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3, 3))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), (3,))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), (2, 1))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), padding=3)
    rec("conv_transpose2d", (1, 3, 1, 4), (3, 2, 1, 1), padding=(1, 0))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 0, 3), dilation=0)
    rec("conv_transpose2d", (1, 3, 0, 4), (3, 2, 3, 3))
    rec("conv_transpose2d", (1, 3, 0, 4), (3, 2, 3, 3), (3,))
    rec("conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), padding=3, output_padding=3)

    modules = []

    def mod(build, call=None):
        modules.append(message(lambda: build() if call is None else call(build())))

    mod(lambda: nn.ConvTranspose2d(3, 4, 3, groups=2))
    mod(lambda: nn.ConvTranspose2d(4, 3, 3, groups=2))
    mod(lambda: nn.ConvTranspose2d(4, 4, 3, groups=0))
    mod(lambda: nn.Conv1d(3, 4, 3, groups=2))
    mod(lambda: nn.Conv1d(4, 3, 3, groups=2))
    mod(lambda: nn.Conv1d(4, 4, 3, groups=0))
    out_size = lambda size, shape=(1, 3, 4, 4): lambda m: m(torch.zeros(*shape), output_size=size)
    build = lambda: nn.ConvTranspose2d(3, 4, 3, stride=2)
    mod(build, out_size([11, 11]))
    mod(build, out_size([8, 10]))
    mod(build, out_size([4, 10, 10]))
    mod(build, out_size([1, 2, 3, 4, 10]))
    mod(build, out_size([11, 10], (3, 4, 4)))
    return out, modules


def main():
    errors, module_errors = error_cases()
    data = {
        "conv1d": conv1d_cases(),
        "conv_transpose2d": conv_transpose2d_cases(),
        "init": init_cases(),
        "modules": module_cases(),
        "decoder": decoder_case(),
        "errors": errors,
        "module_errors": module_errors,
    }
    with open(os.path.join(HERE, "data", "conv_layers.json"), "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
