"""Records PyTorch's conv2d, max_pool2d and avg_pool2d (outputs, gradients and error texts) for
tests/nn/conv.rs, in f64, into tests/nn/data/conv.json.

    /tmp/torchenv/bin/python benches/record_conv.py

Every case carries its inputs (flat, C order) and the gradient fed to the output, so the Rust
test replays exactly the same numbers. Not needed by the build or the tests.
"""

import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(26)
torch.set_default_dtype(torch.float64)


def flat(t):
    """Flat C-order values to 12 significant digits (exact for the 2-decimal inputs; the tests
    compare at rtol 1e-10)."""
    return [float(f"{v:.12g}") for v in t.detach().reshape(-1).tolist()]


def tensor(t):
    return {"shape": list(t.shape), "data": flat(t)}


def pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def short(*shape):
    """Normal values rounded to 2 decimals: short in the JSON, the same f64 on both sides."""
    return torch.round(torch.randn(*shape) * 100) / 100


def conv_case(name, x_shape, w_shape, bias=True, stride=1, padding=0, dilation=1, groups=1):
    x = short(x_shape).requires_grad_(True)
    w = short(w_shape).requires_grad_(True)
    b = short(w_shape[0]).requires_grad_(True) if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    g = short(y.shape)
    y.backward(g)
    case = {
        "name": name,
        "input": tensor(x),
        "weight": tensor(w),
        "bias": tensor(b) if bias else None,
        "stride": pair(stride),
        "padding": pair(padding),
        "dilation": pair(dilation),
        "groups": groups,
        "grad_output": tensor(g),
        "output": tensor(y),
        "grad_input": tensor(x.grad),
        "grad_weight": tensor(w.grad),
        "grad_bias": tensor(b.grad) if bias else None,
    }
    return case


def pool_case(name, op, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    x = x.clone().requires_grad_(True)
    if op == "max":
        y = F.max_pool2d(x, kernel, stride=stride, padding=padding, dilation=dilation,
                         ceil_mode=ceil_mode)
    else:
        y = F.avg_pool2d(x, kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad, divisor_override=divisor_override)
    g = short(y.shape)
    y.backward(g)
    return {
        "name": name,
        "op": op,
        "input": tensor(x),
        "kernel_size": pair(kernel),
        "stride": pair(stride if stride is not None else kernel),
        "padding": pair(padding),
        "dilation": pair(dilation),
        "ceil_mode": ceil_mode,
        "count_include_pad": count_include_pad,
        "divisor_override": divisor_override,
        "grad_output": tensor(g),
        "output": tensor(y),
        "grad_input": tensor(x.grad),
    }


def error_case(op, input_shape, kwargs, weight_shape=None, bias_shape=None):
    x = torch.zeros(input_shape)
    try:
        if op == "conv2d":
            w = torch.zeros(weight_shape)
            b = torch.zeros(bias_shape) if bias_shape is not None else None
            F.conv2d(x, w, b, **kwargs)
        elif op == "max_pool2d":
            F.max_pool2d(x, **kwargs)
        else:
            F.avg_pool2d(x, **kwargs)
    except (RuntimeError, IndexError, ValueError) as e:
        message = str(e)
    else:
        raise AssertionError(f"{op} {input_shape} {kwargs} did not fail")
    args = {k: (pair(v) if k in ("kernel_size", "stride", "padding", "dilation") else v)
            for k, v in kwargs.items()}
    return {
        "op": op,
        "input_shape": list(input_shape),
        "weight_shape": weight_shape,
        "bias_shape": bias_shape,
        "args": args,
        "message": message,
    }


conv = [
    conv_case("basic", [2, 3, 6, 5], [4, 3, 3, 3]),
    conv_case("stride_2", [2, 2, 7, 7], [3, 2, 3, 3], stride=2),
    conv_case("padding_1", [1, 2, 5, 5], [3, 2, 3, 3], padding=1),
    conv_case("dilation_2", [2, 2, 7, 6], [2, 2, 3, 2], padding=1, dilation=2),
    conv_case("groups_2", [2, 4, 5, 5], [6, 2, 3, 3], padding=1, groups=2),
    conv_case("depthwise", [2, 3, 5, 5], [3, 1, 3, 3], stride=2, padding=1, groups=3),
    conv_case("no_bias", [2, 3, 5, 4], [2, 3, 2, 2], bias=False),
    conv_case("non_square", [2, 2, 6, 7], [3, 2, 2, 3], stride=(2, 1), padding=(1, 0),
              dilation=(1, 2)),
    conv_case("one_by_one", [2, 3, 3, 4], [5, 3, 1, 1]),
    conv_case("unbatched", [3, 5, 5], [2, 3, 3, 3], padding=1),
    conv_case("cnn_layer", [4, 1, 8, 8], [4, 1, 3, 3], padding=1),
]

ties = torch.randint(0, 3, (2, 2, 6, 6)).double()
pools = [
    pool_case("max_k2", "max", short(2, 3, 6, 6), 2),
    pool_case("max_k3_s2_p1", "max", short(2, 2, 7, 7), 3, stride=2, padding=1),
    pool_case("max_non_square", "max", short(1, 2, 5, 6), (2, 3), stride=(1, 2),
              padding=(1, 1)),
    pool_case("max_dilation_2", "max", short(1, 2, 7, 7), 3, stride=1, padding=1,
              dilation=2),
    pool_case("max_ceil", "max", short(1, 2, 6, 6), 3, stride=2, ceil_mode=True),
    pool_case("max_ties_overlapping", "max", ties, 2, stride=1),
    pool_case("max_ties_padded", "max", ties, 3, stride=2, padding=1),
    pool_case("max_unbatched", "max", short(2, 5, 5), 2),
    pool_case("avg_k2", "avg", short(2, 3, 6, 6), 2),
    pool_case("avg_k3_s2_p1", "avg", short(2, 2, 7, 7), 3, stride=2, padding=1),
    pool_case("avg_exclude_pad", "avg", short(2, 2, 7, 7), 3, stride=2, padding=1,
              count_include_pad=False),
    pool_case("avg_ceil", "avg", short(1, 2, 6, 6), 3, stride=2, padding=1,
              ceil_mode=True),
    pool_case("avg_ceil_exclude_pad", "avg", short(1, 2, 6, 6), 3, stride=2, padding=1,
              ceil_mode=True, count_include_pad=False),
    pool_case("avg_divisor_override", "avg", short(1, 2, 5, 5), 2, stride=1,
              divisor_override=3),
    pool_case("avg_non_square", "avg", short(1, 2, 5, 6), (2, 3), stride=(1, 2),
              padding=(1, 1)),
    pool_case("avg_unbatched", "avg", short(2, 5, 5), 2),
]

errors = [
    error_case("conv2d", [4, 4], {}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4, 4], {}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {"stride": 0}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {"dilation": 0}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {"groups": 0}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 3, 4, 4], {}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 4, 4, 4], {"groups": 2}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {}, [0, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {}, [3, 2, 3, 3], [2]),
    error_case("conv2d", [1, 2, 4, 4], {}, [3, 2, 3, 3], [3, 1]),
    error_case("conv2d", [1, 2, 2, 2], {}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {"padding": (1, 0), "dilation": 2}, [3, 2, 3, 3]),
    error_case("conv2d", [1, 2, 4, 4], {}, [3, 2, 0, 3]),
    error_case("max_pool2d", [4, 4], {"kernel_size": 2}),
    error_case("max_pool2d", [1, 1, 2, 4, 4], {"kernel_size": 2}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 2, "padding": 2}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": (3, 2), "padding": (1, 2)}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 3, "dilation": 2, "padding": 2}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 0}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": (0, 2), "stride": 1}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 2, "stride": 0}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 2, "stride": 1, "dilation": (0, 1)}),
    error_case("max_pool2d", [1, 2, 1, 1], {"kernel_size": 4}),
    error_case("max_pool2d", [1, 2, 4, 4], {"kernel_size": 3, "dilation": 2}),
    error_case("max_pool2d", [1, 0, 4, 4], {"kernel_size": 2}),
    error_case("max_pool2d", [1, 2, 0, 4], {"kernel_size": 2}),
    error_case("avg_pool2d", [4, 4], {"kernel_size": 2}),
    error_case("avg_pool2d", [1, 1, 2, 4, 4], {"kernel_size": 2}),
    error_case("avg_pool2d", [1, 2, 4, 4], {"kernel_size": 2, "padding": 2}),
    error_case("avg_pool2d", [1, 2, 4, 4], {"kernel_size": 0, "stride": 1}),
    error_case("avg_pool2d", [1, 2, 4, 4], {"kernel_size": 2, "stride": 0}),
    error_case("avg_pool2d", [1, 2, 1, 1], {"kernel_size": 4}),
    error_case("avg_pool2d", [1, 2, 5, 5], {"kernel_size": 2, "divisor_override": 0}),
]

out = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "data", "conv.json")
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "conv2d": conv, "pool2d": pools, "errors": errors}, f,
              separators=(",", ":"))
print(f"wrote {out}: {len(conv)} conv2d, {len(pools)} pooling, {len(errors)} error cases")
