//! The everyday math ops (`log1p expm1 log2 exp2 rsqrt softplus silu mish hardtanh floor ceil
//! round trunc minimum maximum fmod remainder atan2`) against PyTorch 2.15: values in f64 and
//! f32 at edge points, and gradients (ties of `minimum`/`maximum`, signs of `fmod`/`remainder`,
//! softplus past its threshold). The expected values are printed by `math_values.py` (beside
//! this file) under PyTorch 2.15.

use autograd::*;

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;
const LN_2: f64 = std::f64::consts::LN_2;

/// `got` is `want` to `rel` (relative), NaN where it is NaN, and a zero or an infinity exactly,
/// sign included.
fn assert_close(what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w == 0.0 || w.is_infinite() {
            g == w && g.is_sign_negative() == w.is_sign_negative()
        } else {
            (g - w).abs() <= rel * w.abs()
        };
        assert!(ok, "{what}[{i}]: got {g:e}, PyTorch gives {w:e}");
    }
}

type Unary = fn(&Tensor) -> Result<Tensor>;

/// `(name, op, inputs, f64 values, f32 values)`, as `math_values.py` prints them.
#[allow(clippy::type_complexity)]
fn unary_cases() -> Vec<(&'static str, Unary, Vec<f64>, Vec<f64>, Vec<f64>)> {
    vec![
        (
            "log1p",
            |t| t.log1p(),
            vec![-1.0, -0.5, 1e-10, 1e-300, 0.0, 3.0, INF, -2.0],
            vec![
                -INF,
                -LN_2,
                9.999999999500001e-11,
                1e-300,
                0.0,
                1.3862943611198906,
                INF,
                NAN,
            ],
            vec![
                -INF,
                -0.6931471824645996,
                1.000000013351432e-10,
                0.0,
                0.0,
                1.3862943649291992,
                INF,
                NAN,
            ],
        ),
        (
            "expm1",
            |t| t.expm1(),
            vec![1e-10, -1e-10, 1e-300, 0.0, 1.0, -INF, 710.0, -40.0],
            vec![
                1.00000000005e-10,
                -9.999999999500001e-11,
                1e-300,
                0.0,
                1.7182818284590453,
                -1.0,
                INF,
                -1.0,
            ],
            vec![
                1.000000013351432e-10,
                -1.000000013351432e-10,
                0.0,
                0.0,
                1.718281865119934,
                -1.0,
                INF,
                -1.0,
            ],
        ),
        (
            "log2",
            |t| t.log2(),
            vec![8.0, 0.1, 0.0, -1.0, INF, 3.0],
            vec![
                3.0,
                -std::f64::consts::LOG2_10,
                -INF,
                NAN,
                INF,
                1.584962500721156,
            ],
            vec![3.0, -3.321928024291992, -INF, NAN, INF, 1.5849624872207642],
        ),
        (
            "exp2",
            |t| t.exp2(),
            vec![3.0, -1.5, 0.1, 1024.0, -INF, -1075.0],
            vec![8.0, 0.3535533905932738, 1.0717734625362931, INF, 0.0, 0.0],
            vec![8.0, 0.3535533845424652, 1.0717734098434448, INF, 0.0, 0.0],
        ),
        (
            "rsqrt",
            |t| t.rsqrt(),
            vec![4.0, 0.0, -0.0, -1.0, INF, 2.0],
            vec![0.5, INF, -INF, NAN, 0.0, 0.7071067811865475],
            vec![0.5, INF, -INF, NAN, 0.0, 0.7071067690849304],
        ),
        (
            "softplus",
            |t| t.softplus(1.0, 20.0),
            vec![0.0, 1.0, -30.0, 19.0, 20.0, 20.5, 100.0, -1.0],
            vec![
                LN_2,
                1.3132616875182228,
                9.357622968839737e-14,
                19.000000005602796,
                20.000000002061153,
                20.5,
                100.0,
                0.31326168751822286,
            ],
            vec![
                0.6931471824645996,
                1.31326162815094,
                9.357622912219837e-14,
                19.0,
                20.0,
                20.5,
                100.0,
                0.3132616877555847,
            ],
        ),
        (
            "softplus beta 2 threshold 1",
            |t| t.softplus(2.0, 1.0),
            vec![0.0, 0.4, 0.6, -3.0],
            vec![
                0.34657359027997264,
                0.5855503329738889,
                0.6,
                0.0012378425688652247,
            ],
            vec![
                0.3465735912322998,
                0.5855503082275391,
                0.6000000238418579,
                0.0012378426035866141,
            ],
        ),
        (
            "silu",
            |t| t.silu(),
            vec![0.0, 1.0, -1.0, 30.0, -30.0, -800.0, INF],
            vec![
                0.0,
                0.7310585786300049,
                -0.2689414213699951,
                29.999999999997197,
                -2.8072868906517896e-12,
                -0.0,
                INF,
            ],
            vec![
                0.0,
                0.7310585975646973,
                -0.2689414322376251,
                30.0,
                -2.807286954981114e-12,
                -0.0,
                INF,
            ],
        ),
        (
            "mish",
            |t| t.mish(),
            vec![0.0, 1.0, -1.0, 30.0, -30.0, 100.0, INF],
            vec![
                0.0,
                0.8650983882673103,
                -0.30340146137410895,
                30.0,
                -2.807286890651921e-12,
                100.0,
                INF,
            ],
            vec![
                0.0,
                0.8650983572006226,
                -0.3034014403820038,
                30.0,
                -2.807286954981114e-12,
                100.0,
                INF,
            ],
        ),
        (
            "hardtanh",
            |t| t.hardtanh(-1.0, 1.0),
            vec![-2.0, -1.0, 0.25, 1.0, 3.0, NAN],
            vec![-1.0, -1.0, 0.25, 1.0, 1.0, NAN],
            vec![-1.0, -1.0, 0.25, 1.0, 1.0, NAN],
        ),
        (
            "floor",
            |t| t.floor(),
            vec![-1.5, -0.5, 0.5, 2.7, -0.0, INF],
            vec![-2.0, -1.0, 0.0, 2.0, -0.0, INF],
            vec![-2.0, -1.0, 0.0, 2.0, -0.0, INF],
        ),
        (
            "ceil",
            |t| t.ceil(),
            vec![-1.5, -0.5, 0.5, 2.2, -0.0, INF],
            vec![-1.0, -0.0, 1.0, 3.0, -0.0, INF],
            vec![-1.0, -0.0, 1.0, 3.0, -0.0, INF],
        ),
        (
            "round",
            |t| t.round(),
            vec![
                0.5,
                1.5,
                2.5,
                -0.5,
                -2.5,
                2.4999,
                3.5,
                -0.2,
                4503599627370497.0,
            ],
            vec![
                0.0,
                2.0,
                2.0,
                -0.0,
                -2.0,
                2.0,
                4.0,
                -0.0,
                4503599627370497.0,
            ],
            vec![
                0.0,
                2.0,
                2.0,
                -0.0,
                -2.0,
                2.0,
                4.0,
                -0.0,
                4503599627370496.0,
            ],
        ),
        (
            "trunc",
            |t| t.trunc(),
            vec![-1.7, -0.5, 0.5, 2.7, -0.0, INF],
            vec![-1.0, -0.0, 0.0, 2.0, -0.0, INF],
            vec![-1.0, -0.0, 0.0, 2.0, -0.0, INF],
        ),
    ]
}

#[test]
fn unary_math_values_are_pytorchs_in_f64_and_f32() -> Result<()> {
    for (name, op, x, want64, want32) in unary_cases() {
        let t = Tensor::from_vec(x.clone(), &[x.len()])?;
        assert_close(name, &op(&t)?.to_vec::<f64>()?, &want64, 4.0 * f64::EPSILON);
        let t32 = t.to_dtype(DType::F32)?;
        let got32: Vec<f64> = op(&t32)?
            .to_vec::<f32>()?
            .into_iter()
            .map(f64::from)
            .collect();
        assert_close(
            &format!("{name} f32"),
            &got32,
            &want32,
            4.0 * f64::from(f32::EPSILON),
        );
    }
    Ok(())
}

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;
type Operands = (Vec<f64>, Vec<f64>);

#[test]
fn binary_math_values_are_pytorchs() -> Result<()> {
    let mm = (
        vec![1.0, 5.0, NAN, 2.0, -0.0, 3.0],
        vec![3.0, 2.0, 1.0, NAN, 0.0, 3.0],
    );
    let rem = (
        vec![-7.0, 7.0, -7.0, 7.0, 5.5, 1.0, -6.0],
        vec![3.0, -3.0, -3.0, 3.0, 2.0, 0.0, 3.0],
    );
    let fm = (
        vec![-7.0, 7.0, -7.0, 7.0, 5.5, 1.0, INF],
        vec![3.0, -3.0, -3.0, 3.0, 2.0, 0.0, 2.0],
    );
    let at = (
        vec![1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 2.0],
        vec![1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 0.0, 0.0],
    );
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    let cases: Vec<(&str, Binary, &Operands, Vec<f64>)> = vec![
        (
            "minimum",
            |a, b| a.minimum(b),
            &mm,
            vec![1.0, 2.0, NAN, NAN, -0.0, 3.0],
        ),
        (
            "maximum",
            |a, b| a.maximum(b),
            &mm,
            vec![3.0, 5.0, NAN, NAN, -0.0, 3.0],
        ),
        (
            "fmod",
            |a, b| a.fmod(b),
            &fm,
            vec![-1.0, 1.0, -1.0, 1.0, 1.5, NAN, NAN],
        ),
        (
            "remainder",
            |a, b| a.remainder(b),
            &rem,
            vec![2.0, -2.0, -1.0, 1.0, 1.5, NAN, -0.0],
        ),
        (
            "atan2",
            |a, b| a.atan2(b),
            &at,
            vec![
                FRAC_PI_4,
                3.0 * FRAC_PI_4,
                -FRAC_PI_4,
                -3.0 * FRAC_PI_4,
                PI,
                -PI,
                0.0,
                FRAC_PI_2,
            ],
        ),
    ];
    for (name, op, (a, b), want) in cases {
        for dtype in [DType::F64, DType::F32] {
            let a = Tensor::from_vec(a.clone(), &[a.len()])?.to_dtype(dtype)?;
            let b = Tensor::from_vec(b.clone(), &[b.len()])?.to_dtype(dtype)?;
            let got = op(&a, &b)?.to_dtype(DType::F64)?.to_vec::<f64>()?;
            let rel = if dtype == DType::F64 {
                4.0 * f64::EPSILON
            } else {
                1e-6
            };
            assert_close(&format!("{name} {dtype:?}"), &got, &want, rel);
        }
    }
    let x = Tensor::from_vec(vec![-7.0f64, 7.0, 5.5], &[3])?;
    assert_eq!(x.fmod_scalar(-3.0)?.to_vec::<f64>()?, vec![-1.0, 1.0, 2.5]);
    assert_eq!(
        x.remainder_scalar(-3.0)?.to_vec::<f64>()?,
        vec![-1.0, -2.0, -0.5]
    );
    // Broadcasting, and PyTorch's error text where shapes do not broadcast.
    let col = Tensor::from_vec(vec![1.0f64, 4.0], &[2, 1])?;
    let row = Tensor::from_vec(vec![2.0f64, 3.0, 5.0], &[3])?;
    assert_eq!(
        col.minimum(&row)?.to_vec::<f64>()?,
        vec![1.0, 1.0, 1.0, 2.0, 3.0, 4.0]
    );
    let err = row
        .atan2(&Tensor::from_vec(vec![1.0f64, 2.0], &[2])?)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
        "{err}"
    );
    Ok(())
}

/// `remainder`'s gradient for `other` is `-grad * self.div(other, rounding_mode="floor")`, and
/// PyTorch's floor division is not `floor(self / other)` where the quotient rounds up to an
/// integer: `1.0 // 0.1` is 9 (`1.0 / 0.1` rounds to 10), `3.0 // -0.3` is -11 in f64 and -10
/// in f32, `0.7 // 0.1` is 6 in f32. `fmod`'s rounds `self / other` toward zero, which is
/// `trunc(self / other)` in PyTorch too. PyTorch 2.15's gradients, then `gradcheck` and
/// `gradgradcheck` away from the jumps.
#[test]
fn remainder_gradient_uses_pytorchs_floor_division() -> Result<()> {
    let a = [1.0, 5.3, -7.25, 3.0, 0.7, -1.0, 0.0, 2.5];
    let b = [0.1, 2.0, 1.5, -0.3, 0.1, 0.1, -2.0, 0.0];
    let cases: [(DType, [f64; 8], [f64; 8]); 2] = [
        (
            DType::F64,
            [-9.0, -2.0, 5.0, 11.0, -6.0, 10.0, 0.0, -INF],
            [-10.0, -2.0, 4.0, 10.0, -6.0, 10.0, 0.0, -INF],
        ),
        (
            DType::F32,
            [-9.0, -2.0, 5.0, 10.0, -6.0, 10.0, 0.0, -INF],
            [-10.0, -2.0, 4.0, 10.0, -7.0, 10.0, 0.0, -INF],
        ),
    ];
    for (dtype, remainder_b, fmod_b) in cases {
        for (name, want_b) in [("remainder", remainder_b), ("fmod", fmod_b)] {
            let x = Tensor::from_vec(a.to_vec(), &[8])?
                .to_dtype(dtype)?
                .requires_grad_(true)?;
            let y = Tensor::from_vec(b.to_vec(), &[8])?
                .to_dtype(dtype)?
                .requires_grad_(true)?;
            let r = if name == "remainder" {
                x.remainder(&y)?
            } else {
                x.fmod(&y)?
            };
            r.sum()?.backward()?;
            let grad = |t: &Tensor| {
                (t.grad().expect("a gradient").to_dtype(DType::F64)).and_then(|g| g.to_vec::<f64>())
            };
            assert_eq!(grad(&x)?, [1.0; 8], "{name} {dtype:?}: self");
            assert_eq!(grad(&y)?, want_b, "{name} {dtype:?}: other");
        }
    }
    // Broadcast, and an integer `self` promoted to the float `other`'s dtype (no gradient).
    let y = Tensor::from_vec(vec![0.1f64], &[1])?.requires_grad_(true)?;
    Tensor::from_vec(vec![1.0f64, 0.7, -1.0], &[3])?
        .remainder(&y)?
        .sum()?
        .backward()?;
    assert_eq!(y.grad().unwrap().to_vec::<f64>()?, [-9.0 - 6.0 + 10.0]);
    // Smooth away from the jumps (`a / b` far from an integer), first and second order.
    let a =
        Tensor::from_vec(vec![5.3, -7.25, 3.1, 0.45, -2.2, 9.9], &[2, 3])?.requires_grad_(true)?;
    let b =
        Tensor::from_vec(vec![2.0, 1.5, -0.7, 0.2, -0.9, 4.0], &[2, 3])?.requires_grad_(true)?;
    type Binary = fn(&[Tensor]) -> Result<Tensor>;
    let ops: [Binary; 2] = [|t| t[0].remainder(&t[1]), |t| t[0].fmod(&t[1])];
    for f in ops {
        gradcheck(f, &[a.clone(), b.clone()])?;
        // Multiplied by `b`, so that the second derivative is not zero everywhere.
        gradgradcheck(
            move |t: &[Tensor]| f(t)?.mul(&t[1]),
            &[a.clone(), b.clone()],
        )?;
    }
    Ok(())
}

/// The gradients of every input, after `f(inputs).sum().backward()`.
fn grads(f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Vec<f64>]) -> Result<Vec<Vec<f64>>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|v| Tensor::from_vec(v.clone(), &[v.len()])?.requires_grad_(true))
        .collect::<Result<_>>()?;
    f(&leaves)?.sum()?.backward()?;
    leaves
        .iter()
        .map(|t| t.grad().expect("a gradient").to_vec::<f64>())
        .collect()
}

#[test]
fn math_gradients_are_pytorchs() -> Result<()> {
    let ab = [vec![1.0, 5.0, 3.0, NAN], vec![3.0, 2.0, 3.0, 1.0]];
    let g = grads(|t| t[0].minimum(&t[1]), &ab)?;
    assert_eq!(g, vec![vec![1.0, 0.0, 0.5, 1.0], vec![0.0, 1.0, 0.5, 1.0]]);
    let g = grads(|t| t[0].maximum(&t[1]), &ab)?;
    assert_eq!(g, vec![vec![0.0, 1.0, 0.5, 1.0], vec![1.0, 0.0, 0.5, 1.0]]);
    let ab = [vec![-7.0, 7.0, 5.5], vec![3.0, -3.0, 2.0]];
    let g = grads(|t| t[0].fmod(&t[1]), &ab)?;
    assert_eq!(g, vec![vec![1.0, 1.0, 1.0], vec![2.0, 2.0, -2.0]]);
    let g = grads(|t| t[0].remainder(&t[1]), &ab)?;
    assert_eq!(g, vec![vec![1.0, 1.0, 1.0], vec![3.0, 3.0, -2.0]]);
    let g = grads(
        |t| t[0].atan2(&t[1]),
        &[vec![1.0, -2.0, 0.5], vec![1.0, 3.0, -0.5]],
    )?;
    assert_close(
        "atan2 self",
        &g[0],
        &[0.5, 0.23076923076923078, -1.0],
        1e-15,
    );
    assert_close(
        "atan2 other",
        &g[1],
        &[-0.5, 0.15384615384615385, -1.0],
        1e-15,
    );
    let g = grads(
        |t| t[0].softplus(1.0, 20.0),
        &[vec![0.0, 1.0, 19.0, 21.0, -5.0]],
    )?;
    let want = [
        0.5,
        0.7310585786300049,
        0.9999999943972036,
        1.0,
        0.006692850924284856,
    ];
    assert_close("softplus", &g[0], &want, 1e-15);
    let g = grads(
        |t| t[0].hardtanh(-1.0, 1.0),
        &[vec![-2.0, -1.0, 0.25, 1.0, 3.0]],
    )?;
    assert_eq!(g[0], vec![0.0, 0.0, 1.0, 0.0, 0.0]);
    for rounding in [Tensor::round, Tensor::floor, Tensor::ceil, Tensor::trunc] {
        assert_eq!(
            grads(|t| rounding(&t[0]), &[vec![0.5, 1.7]])?[0],
            vec![0.0, 0.0]
        );
    }
    let cases: [(Unary, [f64; 2], [f64; 2]); 7] = [
        (|t| t.log1p(), [0.5, -0.5], [0.6666666666666666, 2.0]),
        (
            |t| t.expm1(),
            [0.5, -0.5],
            [1.6487212707001282, 0.6065306597126334],
        ),
        (
            |t| t.log2(),
            [0.5, 3.0],
            [2.8853900817779268, 0.48089834696298783],
        ),
        (
            |t| t.exp2(),
            [0.5, -3.0],
            [0.9802581434685472, 0.08664339756999316],
        ),
        (
            |t| t.rsqrt(),
            [0.5, 3.0],
            [-1.4142135623730947, -0.09622504486493767],
        ),
        (
            |t| t.silu(),
            [0.5, -3.0],
            [0.7399611873026519, -0.08810410601516962],
        ),
        (
            |t| t.mish(),
            [0.5, -3.0],
            [0.8864243753577272, -0.09339311453232084],
        ),
    ];
    for (i, (op, x, want)) in cases.into_iter().enumerate() {
        let g = grads(|t| op(&t[0]), &[x.to_vec()])?;
        assert_close(&format!("case {i}"), &g[0], &want, 1e-14);
    }
    // Node names, as PyTorch's.
    let x = Tensor::from_vec(vec![0.5f64, 2.0], &[2])?.requires_grad_(true)?;
    let named: [(Tensor, &str); 18] = [
        (x.log1p()?, "Log1PBackward0"),
        (x.expm1()?, "Expm1Backward0"),
        (x.log2()?, "Log2Backward0"),
        (x.exp2()?, "Exp2Backward0"),
        (x.rsqrt()?, "RsqrtBackward0"),
        (x.softplus(1.0, 20.0)?, "SoftplusBackward0"),
        (x.silu()?, "SiluBackward0"),
        (x.mish()?, "MishBackward0"),
        (x.hardtanh(-1.0, 1.0)?, "HardtanhBackward0"),
        (x.floor()?, "FloorBackward0"),
        (x.ceil()?, "CeilBackward0"),
        (x.round()?, "RoundBackward0"),
        (x.trunc()?, "TruncBackward0"),
        (x.minimum(&x)?, "MinimumBackward0"),
        (x.maximum(&x)?, "MaximumBackward0"),
        (x.fmod(&x)?, "FmodBackward1"),
        (x.remainder_scalar(2.0)?, "RemainderBackward0"),
        (x.atan2(&x)?, "Atan2Backward0"),
    ];
    for (t, want) in named {
        assert_eq!(t.grad_fn().expect("recorded").name(), want);
    }
    assert_eq!(
        x.fmod_scalar(2.0)?.grad_fn().unwrap().name(),
        "FmodBackward0"
    );
    assert_eq!(
        x.remainder(&x)?.grad_fn().unwrap().name(),
        "RemainderBackward1"
    );
    // hardtanh's bounds are checked as PyTorch's `F.hardtanh`.
    let err = x.hardtanh(1.0, -1.0).unwrap_err();
    assert!(
        err.to_string()
            .contains("min_val cannot be greater than max_val"),
        "{err}"
    );
    Ok(())
}
