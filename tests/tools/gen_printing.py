"""Prints `repr(t)` for each case of tests/tools/printing.rs, as the Rust table's rows.

Run with PyTorch 2.15 (CPU is enough):

    python tests/tools/gen_printing.py

Each row is `("name", r#"repr"#),`; the expected strings in printing.rs are this output, pasted.
Every case here is built the same way in printing.rs (same values, same dtype, same ops), so a
change to a case changes both. Values are given as Python floats (doubles) and rounded to the
tensor's dtype by `torch.tensor`, as `v as f32` does in Rust.
"""

import math

import torch

f32, f64 = torch.float32, torch.float64


def t(values, dtype=f32, shape=None):
    x = torch.tensor(values, dtype=dtype)
    return x if shape is None else x.reshape(shape)


def lin(n, a, b, dtype=f32, shape=None):
    """Element i is a * i + b, computed in double and rounded to `dtype`."""
    return t([a * i + b for i in range(n)], dtype, shape)


def wave(n, dtype=f32, shape=None):
    """Element i is 10 * sin(i) (non-integral, mixed signs, no summary-breaking magnitudes)."""
    return t([10.0 * math.sin(i) for i in range(n)], dtype, shape)


def cases():
    yield "one_d", t([1.5, -2.25, 3.125])
    yield "two_d", t([[0.1, 0.2, 0.3], [-1.5, 2.0, 3.75]])
    yield "three_d", lin(24, 0.25, -2.0, shape=(2, 3, 4))
    yield "four_d", lin(16, 1.5, -7.0, shape=(2, 2, 2, 2))
    yield "integral", t([1.0, -2.0, 30.0])
    yield "integral_two_d", t([[1.0, 2.0], [300.0, 4.0]])
    yield "sci_ratio", t([1e-3, 1.0, 12345.0])
    yield "sci_negative", t([-1e-5, 1.0, 250.0])
    yield "tiny", t([1e-5, 2e-5])
    yield "large_integral", t([1e9, 2.5e9])
    yield "large_fraction", t([1.5e10, 0.5])
    yield "ratio_exactly_1000", t([0.5, 500.0])
    yield "summarised_1d", lin(1001, 0.5, 0.0)
    yield "summarised_2d", lin(1200, 0.01, -3.0, shape=(40, 30))
    yield "summarised_3d", lin(1210, 0.01, 1.0, shape=(10, 11, 11))
    yield "summarised_rows_only", lin(1004, 1.0, 0.0, shape=(251, 4))
    yield "summarised_view", lin(1000 * 1000, 1.0, 0.0, shape=(1000, 1000)).t()
    yield "long_row", wave(30)
    yield "sci_wrap", t([1.5 * 10.0**k for k in range(-3, 7)])
    yield "long_rows_2d", wave(40, shape=(2, 20))
    yield "transposed", lin(6, 1.0, 0.0, shape=(2, 3)).t()
    yield "requires_grad_leaf", t([1.0, 2.0, 3.0]).requires_grad_()
    x = t([1.0, 2.0, 3.0]).requires_grad_()
    yield "grad_fn_mul", x * 2.0
    yield "grad_fn_sum", (x * 2.0).sum()
    yield "grad_fn_exp", x.exp()
    yield "suffix_wraps", t([-123.4567, 1.5, 2.5, 3.5, 4.5, 5.5]).requires_grad_()
    yield "f64", t([1.0, 2.5], f64)
    yield "f64_thirds", t([1.0 / 3.0, 2.0 / 3.0, -1.0 / 3.0], f64)
    yield "f64_requires_grad", t([1.0, 2.5], f64).requires_grad_()
    yield "f64_grad_fn", t([1.0, 2.5], f64).requires_grad_() * 2.0
    yield "zero_dim", torch.tensor(3.5)
    yield "zero_dim_integral", torch.tensor(-2.0)
    yield "zero_dim_f64", torch.tensor(3.5, dtype=f64)
    yield "zero_dim_tiny", torch.tensor(1e-7)
    yield "empty", torch.zeros(0)
    yield "empty_0x3", torch.zeros(0, 3)
    yield "empty_f64", torch.zeros(0, dtype=f64)
    yield "empty_2x0x3_f64", torch.zeros(2, 0, 3, dtype=f64)
    yield "nan_inf_neg_zero", t([math.nan, math.inf, -math.inf, -0.0, 1.5])
    yield "nan_inf_integral", t([math.nan, 1.0, -math.inf])
    yield "all_nan", t([math.nan, math.nan])
    yield "zeros_and_neg_zero", t([-0.0, 0.0])
    yield "neg_zero_sci", t([-0.0, 1e-6, 1.0])
    yield "neg_zero_fraction", t([-0.0, 0.25])
    yield "zeros_2d", torch.zeros(2, 3)


def print_options_cases():
    """Cases printed under `torch.set_printoptions(**opts)`, reset to the defaults after each."""
    yield "opt_precision_2", dict(precision=2), t([1.12345, -2.5])
    yield "opt_threshold_5", dict(threshold=5), lin(10, 1.0, 0.0)
    yield "opt_edgeitems_1", dict(threshold=5, edgeitems=1), lin(24, 1.0, 0.0, shape=(4, 6))
    yield "opt_edgeitems_0", dict(threshold=5, edgeitems=0), lin(24, 1.0, 0.0, shape=(4, 6))
    yield "opt_linewidth_30", dict(linewidth=30), wave(12)
    yield "opt_sci_true", dict(sci_mode=True), t([1.5, 2.0])
    yield "opt_sci_false", dict(sci_mode=False), t([1e-5, 1.0, 12345.0])
    yield "opt_profile_short", dict(profile="short"), lin(10, 1.0 / 3.0, 0.0)


def main():
    print("// cases")
    for name, x in cases():
        print(f'("{name}", r#"{repr(x)}"#),')
    print("// print-options cases")
    for name, opts, x in print_options_cases():
        torch.set_printoptions(**opts)
        print(f'("{name}", r#"{repr(x)}"#),')
        torch.set_printoptions(profile="default", sci_mode=None)


if __name__ == "__main__":
    main()
