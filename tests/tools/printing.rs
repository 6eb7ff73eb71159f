//! `Display` for tensors against PyTorch 2.15's `repr(t)`: every case's string is exactly what
//! PyTorch prints for the same values, dtype and autograd state.
//!
//! The expected strings are the output of `tests/tools/gen_printing.py` (run it with PyTorch and
//! paste its rows into `EXPECTED`); [`cases`] and [`option_cases`] build the same tensors here,
//! case for case. The print options are process wide, so every test here that prints holds
//! [`PRINTING`] (tests in this binary run in parallel).

use std::sync::{Mutex, MutexGuard};

use autograd::*;

/// Serialises the tests that print or change the print options.
static PRINTING: Mutex<()> = Mutex::new(());

fn printing() -> MutexGuard<'static, ()> {
    PRINTING.lock().unwrap_or_else(|e| e.into_inner())
}

/// An f32 tensor of `values` (doubles rounded to f32, as `torch.tensor(.., dtype=float32)`).
fn t(values: &[f64], shape: &[usize]) -> Tensor {
    let v: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// An f64 tensor of `values`.
fn t64(values: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape).unwrap()
}

/// Element `i` is `a * i + b` (in f64, then f32): the script's `lin`.
fn lin(n: usize, a: f64, b: f64, shape: &[usize]) -> Tensor {
    let v: Vec<f64> = (0..n).map(|i| a * i as f64 + b).collect();
    t(&v, shape)
}

/// Element `i` is `10 sin(i)`: the script's `wave`.
fn wave(n: usize, shape: &[usize]) -> Tensor {
    let v: Vec<f64> = (0..n).map(|i| 10.0 * (i as f64).sin()).collect();
    t(&v, shape)
}

/// The script's `cases()`, in its order, built the same way.
fn cases() -> Result<Vec<(&'static str, Tensor)>> {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let x = t(&[1.0, 2.0, 3.0], &[3]).requires_grad_(true)?;
    Ok(vec![
        ("one_d", t(&[1.5, -2.25, 3.125], &[3])),
        ("two_d", t(&[0.1, 0.2, 0.3, -1.5, 2.0, 3.75], &[2, 3])),
        ("three_d", lin(24, 0.25, -2.0, &[2, 3, 4])),
        ("four_d", lin(16, 1.5, -7.0, &[2, 2, 2, 2])),
        ("integral", t(&[1.0, -2.0, 30.0], &[3])),
        ("integral_two_d", t(&[1.0, 2.0, 300.0, 4.0], &[2, 2])),
        ("sci_ratio", t(&[1e-3, 1.0, 12345.0], &[3])),
        ("sci_negative", t(&[-1e-5, 1.0, 250.0], &[3])),
        ("tiny", t(&[1e-5, 2e-5], &[2])),
        ("large_integral", t(&[1e9, 2.5e9], &[2])),
        ("large_fraction", t(&[1.5e10, 0.5], &[2])),
        ("ratio_exactly_1000", t(&[0.5, 500.0], &[2])),
        ("summarised_1d", lin(1001, 0.5, 0.0, &[1001])),
        ("summarised_2d", lin(1200, 0.01, -3.0, &[40, 30])),
        ("summarised_3d", lin(1210, 0.01, 1.0, &[10, 11, 11])),
        ("summarised_rows_only", lin(1004, 1.0, 0.0, &[251, 4])),
        (
            "summarised_view",
            lin(1000 * 1000, 1.0, 0.0, &[1000, 1000]).transpose(0, 1)?,
        ),
        ("long_row", wave(30, &[30])),
        (
            "sci_wrap",
            t(
                &(-3..7).map(|k| 1.5 * 10f64.powi(k)).collect::<Vec<_>>(),
                &[10],
            ),
        ),
        ("long_rows_2d", wave(40, &[2, 20])),
        ("transposed", lin(6, 1.0, 0.0, &[2, 3]).transpose(0, 1)?),
        (
            "requires_grad_leaf",
            t(&[1.0, 2.0, 3.0], &[3]).requires_grad_(true)?,
        ),
        ("grad_fn_mul", x.mul_scalar(2.0)?),
        ("grad_fn_sum", x.mul_scalar(2.0)?.sum()?),
        ("grad_fn_exp", x.exp()?),
        (
            "suffix_wraps",
            t(&[-123.4567, 1.5, 2.5, 3.5, 4.5, 5.5], &[6]).requires_grad_(true)?,
        ),
        ("f64", t64(&[1.0, 2.5], &[2])),
        ("f64_thirds", t64(&[1.0 / 3.0, 2.0 / 3.0, -1.0 / 3.0], &[3])),
        (
            "f64_requires_grad",
            t64(&[1.0, 2.5], &[2]).requires_grad_(true)?,
        ),
        (
            "f64_grad_fn",
            t64(&[1.0, 2.5], &[2])
                .requires_grad_(true)?
                .mul_scalar(2.0)?,
        ),
        ("zero_dim", Tensor::scalar(3.5f32)),
        ("zero_dim_integral", Tensor::scalar(-2.0f32)),
        ("zero_dim_f64", Tensor::scalar(3.5f64)),
        ("zero_dim_tiny", Tensor::scalar(1e-7f32)),
        ("empty", Tensor::zeros(&[0], DType::F32)?),
        ("empty_0x3", Tensor::zeros(&[0, 3], DType::F32)?),
        ("empty_f64", Tensor::zeros(&[0], DType::F64)?),
        ("empty_2x0x3_f64", Tensor::zeros(&[2, 0, 3], DType::F64)?),
        ("nan_inf_neg_zero", t(&[nan, inf, -inf, -0.0, 1.5], &[5])),
        ("nan_inf_integral", t(&[nan, 1.0, -inf], &[3])),
        ("all_nan", t(&[nan, nan], &[2])),
        ("zeros_and_neg_zero", t(&[-0.0, 0.0], &[2])),
        ("neg_zero_sci", t(&[-0.0, 1e-6, 1.0], &[3])),
        ("neg_zero_fraction", t(&[-0.0, 0.25], &[2])),
        ("zeros_2d", Tensor::zeros(&[2, 3], DType::F32)?),
    ])
}

/// The script's `print_options_cases()`: PyTorch's `set_printoptions(**opts)` is
/// `PrintOptions { .., ..PrintOptions::DEFAULT }` (the script resets to the defaults after each).
fn option_cases() -> Vec<(&'static str, PrintOptions, Tensor)> {
    let d = PrintOptions::DEFAULT;
    vec![
        (
            "opt_precision_2",
            PrintOptions { precision: 2, ..d },
            t(&[1.12345, -2.5], &[2]),
        ),
        (
            "opt_threshold_5",
            PrintOptions { threshold: 5, ..d },
            lin(10, 1.0, 0.0, &[10]),
        ),
        (
            "opt_edgeitems_1",
            PrintOptions {
                threshold: 5,
                edgeitems: 1,
                ..d
            },
            lin(24, 1.0, 0.0, &[4, 6]),
        ),
        (
            "opt_edgeitems_0",
            PrintOptions {
                threshold: 5,
                edgeitems: 0,
                ..d
            },
            lin(24, 1.0, 0.0, &[4, 6]),
        ),
        (
            "opt_linewidth_30",
            PrintOptions { linewidth: 30, ..d },
            wave(12, &[12]),
        ),
        (
            "opt_sci_true",
            PrintOptions {
                sci_mode: Some(true),
                ..d
            },
            t(&[1.5, 2.0], &[2]),
        ),
        (
            "opt_sci_false",
            PrintOptions {
                sci_mode: Some(false),
                ..d
            },
            t(&[1e-5, 1.0, 12345.0], &[3]),
        ),
        (
            "opt_profile_short",
            PrintOptions::short(),
            lin(10, 1.0 / 3.0, 0.0, &[10]),
        ),
    ]
}

/// `repr(t)` for each case, from PyTorch 2.15: the output of `gen_printing.py`.
const EXPECTED: &[(&str, &str)] = &[
    // cases
    ("one_d", r#"tensor([ 1.5000, -2.2500,  3.1250])"#),
    (
        "two_d",
        r#"tensor([[ 0.1000,  0.2000,  0.3000],
        [-1.5000,  2.0000,  3.7500]])"#,
    ),
    (
        "three_d",
        r#"tensor([[[-2.0000, -1.7500, -1.5000, -1.2500],
         [-1.0000, -0.7500, -0.5000, -0.2500],
         [ 0.0000,  0.2500,  0.5000,  0.7500]],

        [[ 1.0000,  1.2500,  1.5000,  1.7500],
         [ 2.0000,  2.2500,  2.5000,  2.7500],
         [ 3.0000,  3.2500,  3.5000,  3.7500]]])"#,
    ),
    (
        "four_d",
        r#"tensor([[[[-7.0000, -5.5000],
          [-4.0000, -2.5000]],

         [[-1.0000,  0.5000],
          [ 2.0000,  3.5000]]],


        [[[ 5.0000,  6.5000],
          [ 8.0000,  9.5000]],

         [[11.0000, 12.5000],
          [14.0000, 15.5000]]]])"#,
    ),
    ("integral", r#"tensor([ 1., -2., 30.])"#),
    (
        "integral_two_d",
        r#"tensor([[  1.,   2.],
        [300.,   4.]])"#,
    ),
    (
        "sci_ratio",
        r#"tensor([1.0000e-03, 1.0000e+00, 1.2345e+04])"#,
    ),
    (
        "sci_negative",
        r#"tensor([-1.0000e-05,  1.0000e+00,  2.5000e+02])"#,
    ),
    ("tiny", r#"tensor([1.0000e-05, 2.0000e-05])"#),
    ("large_integral", r#"tensor([1.0000e+09, 2.5000e+09])"#),
    ("large_fraction", r#"tensor([1.5000e+10, 5.0000e-01])"#),
    ("ratio_exactly_1000", r#"tensor([  0.5000, 500.0000])"#),
    (
        "summarised_1d",
        r#"tensor([  0.0000,   0.5000,   1.0000,  ..., 499.0000, 499.5000, 500.0000])"#,
    ),
    (
        "summarised_2d",
        r#"tensor([[-3.0000, -2.9900, -2.9800,  ..., -2.7300, -2.7200, -2.7100],
        [-2.7000, -2.6900, -2.6800,  ..., -2.4300, -2.4200, -2.4100],
        [-2.4000, -2.3900, -2.3800,  ..., -2.1300, -2.1200, -2.1100],
        ...,
        [ 8.1000,  8.1100,  8.1200,  ...,  8.3700,  8.3800,  8.3900],
        [ 8.4000,  8.4100,  8.4200,  ...,  8.6700,  8.6800,  8.6900],
        [ 8.7000,  8.7100,  8.7200,  ...,  8.9700,  8.9800,  8.9900]])"#,
    ),
    (
        "summarised_3d",
        r#"tensor([[[ 1.0000,  1.0100,  1.0200,  ...,  1.0800,  1.0900,  1.1000],
         [ 1.1100,  1.1200,  1.1300,  ...,  1.1900,  1.2000,  1.2100],
         [ 1.2200,  1.2300,  1.2400,  ...,  1.3000,  1.3100,  1.3200],
         ...,
         [ 1.8800,  1.8900,  1.9000,  ...,  1.9600,  1.9700,  1.9800],
         [ 1.9900,  2.0000,  2.0100,  ...,  2.0700,  2.0800,  2.0900],
         [ 2.1000,  2.1100,  2.1200,  ...,  2.1800,  2.1900,  2.2000]],

        [[ 2.2100,  2.2200,  2.2300,  ...,  2.2900,  2.3000,  2.3100],
         [ 2.3200,  2.3300,  2.3400,  ...,  2.4000,  2.4100,  2.4200],
         [ 2.4300,  2.4400,  2.4500,  ...,  2.5100,  2.5200,  2.5300],
         ...,
         [ 3.0900,  3.1000,  3.1100,  ...,  3.1700,  3.1800,  3.1900],
         [ 3.2000,  3.2100,  3.2200,  ...,  3.2800,  3.2900,  3.3000],
         [ 3.3100,  3.3200,  3.3300,  ...,  3.3900,  3.4000,  3.4100]],

        [[ 3.4200,  3.4300,  3.4400,  ...,  3.5000,  3.5100,  3.5200],
         [ 3.5300,  3.5400,  3.5500,  ...,  3.6100,  3.6200,  3.6300],
         [ 3.6400,  3.6500,  3.6600,  ...,  3.7200,  3.7300,  3.7400],
         ...,
         [ 4.3000,  4.3100,  4.3200,  ...,  4.3800,  4.3900,  4.4000],
         [ 4.4100,  4.4200,  4.4300,  ...,  4.4900,  4.5000,  4.5100],
         [ 4.5200,  4.5300,  4.5400,  ...,  4.6000,  4.6100,  4.6200]],

        ...,

        [[ 9.4700,  9.4800,  9.4900,  ...,  9.5500,  9.5600,  9.5700],
         [ 9.5800,  9.5900,  9.6000,  ...,  9.6600,  9.6700,  9.6800],
         [ 9.6900,  9.7000,  9.7100,  ...,  9.7700,  9.7800,  9.7900],
         ...,
         [10.3500, 10.3600, 10.3700,  ..., 10.4300, 10.4400, 10.4500],
         [10.4600, 10.4700, 10.4800,  ..., 10.5400, 10.5500, 10.5600],
         [10.5700, 10.5800, 10.5900,  ..., 10.6500, 10.6600, 10.6700]],

        [[10.6800, 10.6900, 10.7000,  ..., 10.7600, 10.7700, 10.7800],
         [10.7900, 10.8000, 10.8100,  ..., 10.8700, 10.8800, 10.8900],
         [10.9000, 10.9100, 10.9200,  ..., 10.9800, 10.9900, 11.0000],
         ...,
         [11.5600, 11.5700, 11.5800,  ..., 11.6400, 11.6500, 11.6600],
         [11.6700, 11.6800, 11.6900,  ..., 11.7500, 11.7600, 11.7700],
         [11.7800, 11.7900, 11.8000,  ..., 11.8600, 11.8700, 11.8800]],

        [[11.8900, 11.9000, 11.9100,  ..., 11.9700, 11.9800, 11.9900],
         [12.0000, 12.0100, 12.0200,  ..., 12.0800, 12.0900, 12.1000],
         [12.1100, 12.1200, 12.1300,  ..., 12.1900, 12.2000, 12.2100],
         ...,
         [12.7700, 12.7800, 12.7900,  ..., 12.8500, 12.8600, 12.8700],
         [12.8800, 12.8900, 12.9000,  ..., 12.9600, 12.9700, 12.9800],
         [12.9900, 13.0000, 13.0100,  ..., 13.0700, 13.0800, 13.0900]]])"#,
    ),
    (
        "summarised_rows_only",
        r#"tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00, 3.0000e+00],
        [4.0000e+00, 5.0000e+00, 6.0000e+00, 7.0000e+00],
        [8.0000e+00, 9.0000e+00, 1.0000e+01, 1.1000e+01],
        ...,
        [9.9200e+02, 9.9300e+02, 9.9400e+02, 9.9500e+02],
        [9.9600e+02, 9.9700e+02, 9.9800e+02, 9.9900e+02],
        [1.0000e+03, 1.0010e+03, 1.0020e+03, 1.0030e+03]])"#,
    ),
    (
        "summarised_view",
        r#"tensor([[0.0000e+00, 1.0000e+03, 2.0000e+03,  ..., 9.9700e+05, 9.9800e+05,
         9.9900e+05],
        [1.0000e+00, 1.0010e+03, 2.0010e+03,  ..., 9.9700e+05, 9.9800e+05,
         9.9900e+05],
        [2.0000e+00, 1.0020e+03, 2.0020e+03,  ..., 9.9700e+05, 9.9800e+05,
         9.9900e+05],
        ...,
        [9.9700e+02, 1.9970e+03, 2.9970e+03,  ..., 9.9800e+05, 9.9900e+05,
         1.0000e+06],
        [9.9800e+02, 1.9980e+03, 2.9980e+03,  ..., 9.9800e+05, 9.9900e+05,
         1.0000e+06],
        [9.9900e+02, 1.9990e+03, 2.9990e+03,  ..., 9.9800e+05, 9.9900e+05,
         1.0000e+06]])"#,
    ),
    (
        "long_row",
        r#"tensor([ 0.0000,  8.4147,  9.0930,  1.4112, -7.5680, -9.5892, -2.7942,  6.5699,
         9.8936,  4.1212, -5.4402, -9.9999, -5.3657,  4.2017,  9.9061,  6.5029,
        -2.8790, -9.6140, -7.5099,  1.4988,  9.1295,  8.3666, -0.0885, -8.4622,
        -9.0558, -1.3235,  7.6256,  9.5638,  2.7091, -6.6363])"#,
    ),
    (
        "sci_wrap",
        r#"tensor([1.5000e-03, 1.5000e-02, 1.5000e-01, 1.5000e+00, 1.5000e+01, 1.5000e+02,
        1.5000e+03, 1.5000e+04, 1.5000e+05, 1.5000e+06])"#,
    ),
    (
        "long_rows_2d",
        r#"tensor([[ 0.0000,  8.4147,  9.0930,  1.4112, -7.5680, -9.5892, -2.7942,  6.5699,
          9.8936,  4.1212, -5.4402, -9.9999, -5.3657,  4.2017,  9.9061,  6.5029,
         -2.8790, -9.6140, -7.5099,  1.4988],
        [ 9.1295,  8.3666, -0.0885, -8.4622, -9.0558, -1.3235,  7.6256,  9.5638,
          2.7091, -6.6363, -9.8803, -4.0404,  5.5143,  9.9991,  5.2908, -4.2818,
         -9.9178, -6.4354,  2.9637,  9.6380]])"#,
    ),
    (
        "transposed",
        r#"tensor([[0., 3.],
        [1., 4.],
        [2., 5.]])"#,
    ),
    (
        "requires_grad_leaf",
        r#"tensor([1., 2., 3.], requires_grad=True)"#,
    ),
    (
        "grad_fn_mul",
        r#"tensor([2., 4., 6.], grad_fn=<MulBackward0>)"#,
    ),
    ("grad_fn_sum", r#"tensor(12., grad_fn=<SumBackward0>)"#),
    (
        "grad_fn_exp",
        r#"tensor([ 2.7183,  7.3891, 20.0855], grad_fn=<ExpBackward0>)"#,
    ),
    (
        "suffix_wraps",
        r#"tensor([-123.4567,    1.5000,    2.5000,    3.5000,    4.5000,    5.5000],
       requires_grad=True)"#,
    ),
    ("f64", r#"tensor([1.0000, 2.5000], dtype=torch.float64)"#),
    (
        "f64_thirds",
        r#"tensor([ 0.3333,  0.6667, -0.3333], dtype=torch.float64)"#,
    ),
    (
        "f64_requires_grad",
        r#"tensor([1.0000, 2.5000], dtype=torch.float64, requires_grad=True)"#,
    ),
    (
        "f64_grad_fn",
        r#"tensor([2., 5.], dtype=torch.float64, grad_fn=<MulBackward0>)"#,
    ),
    ("zero_dim", r#"tensor(3.5000)"#),
    ("zero_dim_integral", r#"tensor(-2.)"#),
    ("zero_dim_f64", r#"tensor(3.5000, dtype=torch.float64)"#),
    ("zero_dim_tiny", r#"tensor(1.0000e-07)"#),
    ("empty", r#"tensor([])"#),
    ("empty_0x3", r#"tensor([], size=(0, 3))"#),
    ("empty_f64", r#"tensor([], dtype=torch.float64)"#),
    (
        "empty_2x0x3_f64",
        r#"tensor([], size=(2, 0, 3), dtype=torch.float64)"#,
    ),
    (
        "nan_inf_neg_zero",
        r#"tensor([   nan,    inf,   -inf, -0.0000, 1.5000])"#,
    ),
    ("nan_inf_integral", r#"tensor([nan, 1., -inf])"#),
    ("all_nan", r#"tensor([nan, nan])"#),
    ("zeros_and_neg_zero", r#"tensor([-0., 0.])"#),
    (
        "neg_zero_sci",
        r#"tensor([-0.0000e+00, 1.0000e-06, 1.0000e+00])"#,
    ),
    ("neg_zero_fraction", r#"tensor([-0.0000, 0.2500])"#),
    (
        "zeros_2d",
        r#"tensor([[0., 0., 0.],
        [0., 0., 0.]])"#,
    ),
    // print-options cases
    ("opt_precision_2", r#"tensor([ 1.12, -2.50])"#),
    (
        "opt_threshold_5",
        r#"tensor([0., 1., 2.,  ..., 7., 8., 9.])"#,
    ),
    (
        "opt_edgeitems_1",
        r#"tensor([[ 0.,  ...,  5.],
        ...,
        [18.,  ..., 23.]])"#,
    ),
    ("opt_edgeitems_0", r#"tensor([...], size=(4, 6))"#),
    (
        "opt_linewidth_30",
        r#"tensor([ 0.0000,  8.4147,
         9.0930,  1.4112,
        -7.5680, -9.5892,
        -2.7942,  6.5699,
         9.8936,  4.1212,
        -5.4402, -9.9999])"#,
    ),
    ("opt_sci_true", r#"tensor([1.5000e+00, 2.0000e+00])"#),
    (
        "opt_sci_false",
        r#"tensor([    0.0000,     1.0000, 12345.0000])"#,
    ),
    (
        "opt_profile_short",
        r#"tensor([0.00, 0.33, 0.67, 1.00, 1.33, 1.67, 2.00, 2.33, 2.67, 3.00])"#,
    ),
];

fn expected(name: &str) -> &'static str {
    EXPECTED
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no expected string for case `{name}`"))
        .1
}

/// Every case prints exactly PyTorch's `repr`, and every recorded string has its case.
#[test]
fn every_case_prints_as_pytorch_repr() -> Result<()> {
    let _g = printing();
    let cases = cases()?;
    let options = option_cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.0).collect();
    names.extend(options.iter().map(|c| c.0));
    let recorded: Vec<&str> = EXPECTED.iter().map(|c| c.0).collect();
    assert_eq!(names, recorded, "the cases and the recorded strings differ");

    let mut wrong = Vec::new();
    for (name, tensor) in &cases {
        let got = tensor.to_string();
        if got != expected(name) {
            wrong.push(format!("{name}:\n{got}\nPyTorch:\n{}", expected(name)));
        }
    }
    for (name, opts, tensor) in &options {
        let got = {
            let _scope = printoptions(*opts);
            tensor.to_string()
        };
        if got != expected(name) {
            wrong.push(format!("{name}:\n{got}\nPyTorch:\n{}", expected(name)));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ from PyTorch:\n\n{}",
        wrong.len(),
        EXPECTED.len(),
        wrong.join("\n\n")
    );
    Ok(())
}

/// The options scope restores what was set before; `set_printoptions` is seen by every thread.
#[test]
fn print_options_are_process_wide_and_scoped() -> Result<()> {
    let _g = printing();
    let x = t(&[1.0 / 3.0], &[1]);
    assert_eq!(get_printoptions(), PrintOptions::default());
    {
        let _scope = printoptions(PrintOptions {
            precision: 6,
            ..PrintOptions::DEFAULT
        });
        assert_eq!(x.to_string(), "tensor([0.333333])");
        let from_thread = std::thread::scope(|s| s.spawn(|| x.to_string()).join().unwrap());
        assert_eq!(from_thread, "tensor([0.333333])");
    }
    assert_eq!(x.to_string(), "tensor([0.3333])");
    assert_eq!(get_printoptions(), PrintOptions::default());
    Ok(())
}

/// Off the CPU the device is a suffix: `device='virtual:1'` for a virtual device (PyTorch has
/// none; this is our device's own name, as PyTorch prints any non-default device), and
/// PyTorch's `device='cuda:0'` on a GPU when there is one.
#[test]
fn devices_print_as_a_suffix() -> Result<()> {
    let _g = printing();
    let x = t(&[1.5, 2.0], &[2]);
    assert_eq!(
        x.to(Device::Virtual(1))?.to_string(),
        "tensor([1.5000, 2.0000], device='virtual:1')"
    );
    let y = x.to(Device::Virtual(1))?.requires_grad_(true)?;
    assert_eq!(
        y.mul_scalar(2.0)?.to_string(),
        "tensor([3., 4.], device='virtual:1', grad_fn=<MulBackward0>)"
    );
    if cuda::is_available() {
        // PyTorch: `torch.tensor([1.5, 2.0], device='cuda:0', dtype=torch.float64)`.
        let g = t64(&[1.5, 2.0], &[2]).to(Device::Cuda(0))?;
        assert_eq!(
            g.to_string(),
            "tensor([1.5000, 2.0000], device='cuda:0', dtype=torch.float64)"
        );
    } else {
        println!("skipped cuda:0: no GPU");
    }
    Ok(())
}
