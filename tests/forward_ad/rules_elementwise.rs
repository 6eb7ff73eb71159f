//! The forward derivative rules (`#[jvp]`) of the element-wise built-in ops: each op's tangent
//! against a central finite difference and reverse mode (`functional::jvp`), with broadcasting,
//! one tangent of two, `f32`, a tangent of another dtype than its primal, and transposed
//! operands; reverse over the rules and forward through a backward pass; and that forward mode
//! runs the rules, not the double-vjp fallback (which runs a backward pass per op).

use autograd::functional::{self, Options};
use autograd::nn::functional as F;
use autograd::{DType, GradOptions, Result, Tensor, forward_ad, profiler};

use crate::ops::{Op, check};

type Domain = fn(&[usize]) -> Result<Tensor>;

fn randn(shape: &[usize]) -> Result<Tensor> {
    Tensor::randn(shape, DType::F64)
}

/// Values in `[0.5, 1.5)` (logarithms, roots, divisors).
fn positive(shape: &[usize]) -> Result<Tensor> {
    Tensor::rand(shape, DType::F64)?.add_scalar(0.5)
}

/// `±[5.1, 5.4)`, alternating: over a divisor from [`divisor`], the quotient is `±[2.1, 2.7]`,
/// away from where `fmod`/`remainder` jump, and its truncation and floor differ for the
/// negative ones.
fn dividend(shape: &[usize]) -> Result<Tensor> {
    let u = Tensor::rand(shape, DType::F64)?.to_vec::<f64>()?;
    let v = u
        .iter()
        .enumerate()
        .map(|(i, u)| (5.1 + 0.3 * u) * if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    Tensor::from_vec(v, shape)
}

/// `[2.0, 2.4)`.
fn divisor(shape: &[usize]) -> Result<Tensor> {
    Tensor::rand(shape, DType::F64)?
        .mul_scalar(0.4)?
        .add_scalar(2.0)
}

/// The unary ops given a rule, and where each is taken.
fn unary_cases() -> Vec<(&'static str, Op, Domain)> {
    vec![
        ("exp", |x| x[0].exp(), randn),
        ("log", |x| x[0].log(), positive),
        ("sin", |x| x[0].sin(), randn),
        ("cos", |x| x[0].cos(), randn),
        ("tanh", |x| x[0].tanh(), randn),
        ("sigmoid", |x| x[0].sigmoid(), randn),
        ("relu", |x| x[0].relu(), randn),
        ("sqrt", |x| x[0].sqrt(), positive),
        ("abs", |x| x[0].abs(), randn),
        ("neg", |x| x[0].neg(), randn),
        ("pow 3", |x| x[0].pow(3.0), randn),
        ("pow 2", |x| x[0].pow(2.0), randn),
        ("pow 0.5", |x| x[0].pow(0.5), positive),
        ("pow 0", |x| x[0].pow(0.0), randn),
        ("reciprocal", |x| x[0].reciprocal(), positive),
        ("add_scalar", |x| x[0].add_scalar(1.5), randn),
        ("sub_scalar", |x| x[0].sub_scalar(1.5), randn),
        ("mul_scalar", |x| x[0].mul_scalar(-3.0), randn),
        ("div_scalar", |x| x[0].div_scalar(4.0), randn),
        ("rsub_scalar", |x| x[0].rsub_scalar(2.0), randn),
        ("rdiv_scalar", |x| x[0].rdiv_scalar(2.0), positive),
        ("log1p", |x| x[0].log1p(), positive),
        ("expm1", |x| x[0].expm1(), randn),
        ("log2", |x| x[0].log2(), positive),
        ("exp2", |x| x[0].exp2(), randn),
        ("rsqrt", |x| x[0].rsqrt(), positive),
        ("silu", |x| x[0].silu(), randn),
        ("mish", |x| x[0].mish(), randn),
        ("softplus", |x| x[0].softplus(1.0, 20.0), randn),
        // β = 2 and a threshold of 1: elements on both sides of it.
        ("softplus threshold", |x| x[0].softplus(2.0, 1.0), randn),
        ("hardtanh", |x| x[0].hardtanh(-0.5, 0.5), randn),
        ("relu6", |x| F::relu6(&x[0].mul_scalar(4.0)?), randn),
        ("floor", |x| x[0].floor(), randn),
        ("ceil", |x| x[0].ceil(), randn),
        ("round", |x| x[0].round(), randn),
        ("trunc", |x| x[0].trunc(), randn),
        ("clamp", |x| x[0].clamp(Some(-0.5), Some(0.5)), randn),
        ("clamp min", |x| x[0].clamp(Some(0.0), None), randn),
        ("erf", |x| x[0].erf(), randn),
        ("elu", |x| F::elu(&x[0], 1.5), randn),
        ("selu", |x| F::selu(&x[0]), randn),
        ("celu", |x| F::celu(&x[0], 0.5), randn),
        ("fmod_scalar", |x| x[0].fmod_scalar(0.7), randn),
        ("remainder_scalar", |x| x[0].remainder_scalar(0.7), randn),
        (
            "masked_fill",
            |x| x[0].masked_fill(&x[0].gt_scalar(0.3)?, 2.0),
            randn,
        ),
    ]
}

/// The binary ops given a rule, and where each operand is taken.
fn binary_cases() -> Vec<(&'static str, Op, Domain, Domain)> {
    vec![
        ("add", |x| x[0].add(&x[1]), randn, randn),
        ("sub", |x| x[0].sub(&x[1]), randn, randn),
        ("mul", |x| x[0].mul(&x[1]), randn, randn),
        ("div", |x| x[0].div(&x[1]), randn, positive),
        ("minimum", |x| x[0].minimum(&x[1]), randn, randn),
        ("maximum", |x| x[0].maximum(&x[1]), randn, randn),
        ("fmod", |x| x[0].fmod(&x[1]), dividend, divisor),
        ("remainder", |x| x[0].remainder(&x[1]), dividend, divisor),
        ("atan2", |x| x[0].atan2(&x[1]), randn, randn),
        (
            "where",
            |x| Tensor::where_(&x[0].gt_scalar(0.0)?, &x[0], &x[1]),
            randn,
            randn,
        ),
    ]
}

/// Operand shapes of the binary checks: equal, broadcast either way, both ways, a 0-dim one.
const SHAPES: [(&[usize], &[usize]); 5] = [
    (&[3, 4], &[3, 4]),
    (&[3, 4], &[4]),
    (&[4], &[3, 4]),
    (&[3, 1], &[1, 4]),
    (&[3, 4], &[]),
];

/// `f`'s output and its tangent in forward mode, with `tangents[i]` the tangent of
/// `inputs[i]` (`None`: that input is not dual).
fn forward(f: Op, inputs: &[Tensor], tangents: &[Option<Tensor>]) -> Result<(Tensor, Tensor)> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let duals: Vec<Tensor> = inputs
        .iter()
        .zip(tangents)
        .map(|(x, t)| match t {
            Some(t) => forward_ad::make_dual(x, t),
            None => Ok(x.clone()),
        })
        .collect::<Result<_>>()?;
    let y = f(&duals)?;
    let u = forward_ad::unpack_dual(&y)?;
    let tangent = u.tangent.expect("a tangent");
    assert_eq!(
        tangent.shape(),
        y.shape(),
        "the tangent has the output's shape"
    );
    Ok((u.primal, tangent))
}

/// Checks `f`'s tangent at `inputs` (f64) along `tangents` (`None`: no tangent, that is zero)
/// against a central finite difference and reverse mode, as `ops.rs`'s `check`.
fn check_along(name: &str, f: Op, inputs: &[Tensor], tangents: &[Option<Tensor>]) -> Result<()> {
    let (_, tangent) = forward(f, inputs, tangents)?;
    assert_eq!(tangent.dtype(), DType::F64, "{name}: the tangent's dtype");
    let forward = tangent.to_vec::<f64>()?;
    let full: Vec<Tensor> = inputs
        .iter()
        .zip(tangents)
        .map(|(x, t)| t.clone().map_or_else(|| x.zeros_like(), Ok))
        .collect::<Result<_>>()?;
    let eps = 1e-6;
    let shifted = |sign: f64| -> Result<Vec<f64>> {
        let xs: Vec<Tensor> = inputs
            .iter()
            .zip(&full)
            .map(|(x, t)| x.add(&t.mul_scalar(sign * eps)?))
            .collect::<Result<_>>()?;
        f(&xs)?.to_vec::<f64>()
    };
    let (plus, minus) = (shifted(1.0)?, shifted(-1.0)?);
    let (_, reverse) = functional::jvp(|xs: &[Tensor]| f(xs), inputs, Some(&full), Options::new())?;
    let reverse = reverse[0].to_vec::<f64>()?;
    assert_eq!(forward.len(), reverse.len(), "{name}: tangent size");
    for (i, ((fw, rv), (p, m))) in forward
        .iter()
        .zip(&reverse)
        .zip(plus.iter().zip(&minus))
        .enumerate()
    {
        let fd = (p - m) / (2.0 * eps);
        assert!(
            (fw - rv).abs() <= 1e-10 * (1.0 + rv.abs()),
            "{name}[{i}]: forward {fw} vs reverse {rv}"
        );
        assert!(
            (fw - fd).abs() <= 1e-5 * (1.0 + fd.abs()),
            "{name}[{i}]: forward {fw} vs finite difference {fd}"
        );
    }
    Ok(())
}

/// Asserts that `actual` (any float dtype) is `expected` within `tol` relative.
fn assert_close(name: &str, actual: &Tensor, expected: &Tensor, tol: f64) -> Result<()> {
    assert_eq!(actual.shape(), expected.shape(), "{name}: shape");
    let a = actual.to_dtype(DType::F64)?.to_vec::<f64>()?;
    let e = expected.to_dtype(DType::F64)?.to_vec::<f64>()?;
    for (i, (a, e)) in a.iter().zip(&e).enumerate() {
        assert!(
            (a - e).abs() <= tol * (1.0 + e.abs()),
            "{name}[{i}]: {a} vs {e}"
        );
    }
    Ok(())
}

/// `t` in `dtype` when given.
fn cast(t: &Option<Tensor>, dtype: DType) -> Result<Option<Tensor>> {
    t.as_ref().map(|t| t.to_dtype(dtype)).transpose()
}

/// In f32 (inputs and tangents): an f32 tangent, equal to the f64 one at the same (rounded)
/// points.
fn check_f32(name: &str, f: Op, inputs: &[Tensor], tangents: &[Option<Tensor>]) -> Result<()> {
    let x32: Vec<Tensor> = inputs
        .iter()
        .map(|x| x.to_dtype(DType::F32))
        .collect::<Result<_>>()?;
    let t32: Vec<Option<Tensor>> = tangents
        .iter()
        .map(|t| cast(t, DType::F32))
        .collect::<Result<_>>()?;
    let x64: Vec<Tensor> = x32
        .iter()
        .map(|x| x.to_dtype(DType::F64))
        .collect::<Result<_>>()?;
    let t64: Vec<Option<Tensor>> = t32
        .iter()
        .map(|t| cast(t, DType::F64))
        .collect::<Result<_>>()?;
    let (_, single) = forward(f, &x32, &t32)?;
    assert_eq!(single.dtype(), DType::F32, "{name}: an f32 tangent");
    let (_, double) = forward(f, &x64, &t64)?;
    assert_close(&format!("{name} f32"), &single, &double, 1e-4)
}

#[test]
fn unary_rules_match_finite_differences_and_reverse_mode() -> Result<()> {
    autograd::manual_seed(10);
    for (name, f, domain) in unary_cases() {
        check(name, f, &[domain(&[3, 4])?])?;
        // A 0-dim input.
        check(name, f, &[domain(&[])?])?;
    }
    Ok(())
}

#[test]
fn unary_rules_in_f32() -> Result<()> {
    autograd::manual_seed(11);
    for (name, f, domain) in unary_cases() {
        let x = domain(&[3, 4])?;
        check_f32(name, f, &[x], &[Some(randn(&[3, 4])?)])?;
    }
    Ok(())
}

#[test]
fn unary_rules_on_transposed_inputs() -> Result<()> {
    autograd::manual_seed(12);
    for (name, f, domain) in unary_cases() {
        let x = domain(&[4, 3])?.transpose(0, 1)?;
        assert!(!x.is_contiguous());
        // A transposed tangent, and a contiguous one.
        let t = randn(&[4, 3])?.transpose(0, 1)?;
        check_along(name, f, std::slice::from_ref(&x), &[Some(t)])?;
        check_along(name, f, std::slice::from_ref(&x), &[Some(randn(&[3, 4])?)])?;
    }
    Ok(())
}

/// A tangent of another floating dtype than its primal: the rule's ops promote (PyTorch gives
/// an f64 tangent for an f32 primal with an f64 tangent), including where the backward's fused
/// kernel (which takes one dtype) would otherwise run.
#[test]
fn unary_rules_promote_a_tangent_of_another_dtype() -> Result<()> {
    autograd::manual_seed(13);
    for (name, f, domain) in unary_cases() {
        let x = domain(&[3, 4])?.to_dtype(DType::F32)?;
        let t = randn(&[3, 4])?;
        let (_, mixed) = forward(f, std::slice::from_ref(&x), &[Some(t.clone())])?;
        assert_eq!(mixed.dtype(), DType::F64, "{name}: the tangent's dtype");
        let (_, reference) = forward(f, &[x.to_dtype(DType::F64)?], &[Some(t)])?;
        assert_close(name, &mixed, &reference, 1e-5)?;
    }
    Ok(())
}

#[test]
fn binary_rules_with_broadcasting_and_one_sided_tangents() -> Result<()> {
    autograd::manual_seed(14);
    for (name, f, da, db) in binary_cases() {
        for (sa, sb) in SHAPES {
            let (a, b) = (da(sa)?, db(sb)?);
            let (ta, tb) = (randn(sa)?, randn(sb)?);
            let inputs = [a, b];
            let label = format!("{name} {sa:?} {sb:?}");
            check_along(&label, f, &inputs, &[Some(ta.clone()), Some(tb.clone())])?;
            check_along(
                &format!("{label} (a's tangent)"),
                f,
                &inputs,
                &[Some(ta), None],
            )?;
            check_along(
                &format!("{label} (b's tangent)"),
                f,
                &inputs,
                &[None, Some(tb)],
            )?;
        }
    }
    Ok(())
}

#[test]
fn binary_rules_in_f32_and_on_transposed_inputs() -> Result<()> {
    autograd::manual_seed(15);
    for (name, f, da, db) in binary_cases() {
        let (a, b) = (da(&[3, 4])?, db(&[4])?);
        let (ta, tb) = (randn(&[3, 4])?, randn(&[4])?);
        let inputs = [a, b];
        check_f32(name, f, &inputs, &[Some(ta.clone()), Some(tb.clone())])?;
        check_f32(name, f, &inputs, &[None, Some(tb)])?;
        check_f32(name, f, &inputs, &[Some(ta), None])?;
        // Both operands transposed, then one.
        let a = da(&[4, 3])?.transpose(0, 1)?;
        let b = db(&[4, 3])?.transpose(0, 1)?;
        let ta = randn(&[4, 3])?.transpose(0, 1)?;
        let tb = randn(&[3, 4])?;
        let inputs = [a.clone(), b];
        check_along(name, f, &inputs, &[Some(ta.clone()), Some(tb.clone())])?;
        check_along(name, f, &inputs, &[None, Some(tb)])?;
        check_along(name, f, &[a, db(&[3, 4])?], &[Some(ta), None])?;
    }
    Ok(())
}

/// An f32 dual operand with an f64 operand that has no tangent: PyTorch's tangent is f64 (the
/// missing tangent is a zero of the f64 operand), of the broadcast shape.
#[test]
fn binary_rules_promote_with_the_operand_without_a_tangent() -> Result<()> {
    autograd::manual_seed(16);
    for (name, f, da, db) in binary_cases() {
        let a = da(&[4])?.to_dtype(DType::F32)?;
        let b = db(&[3, 4])?;
        let ta = randn(&[4])?.to_dtype(DType::F32)?;
        let (_, mixed) = forward(f, &[a.clone(), b.clone()], &[Some(ta.clone()), None])?;
        assert_eq!(mixed.dtype(), DType::F64, "{name}: the tangent's dtype");
        assert_eq!(mixed.shape(), &[3, 4]);
        let (_, reference) = forward(
            f,
            &[a.to_dtype(DType::F64)?, b],
            &[Some(ta.to_dtype(DType::F64)?), None],
        )?;
        // `atan2`'s rule squares `a` in its own dtype, as PyTorch's (`self_p.pow(2)`).
        assert_close(name, &mixed, &reference, 1e-6)?;
    }
    Ok(())
}

/// An integer operand (which has no tangent), either side: the dual operand's tangent promotes
/// with it to the result's float dtype, as the f64 operand of the same values gives.
#[test]
fn binary_rules_with_an_integer_operand() -> Result<()> {
    autograd::manual_seed(22);
    for (name, f, da, db) in binary_cases() {
        for int_side in [0, 1] {
            // Divisors 2 and 3, dividends ±5: away from where fmod and remainder jump.
            let v = if int_side == 0 { [5i64, -5] } else { [2, 3] };
            for (int, shape) in [
                (Tensor::from_vec(vec![v[0], v[1], v[0], v[1]], &[4])?, "[4]"),
                (Tensor::from_vec(vec![v[0]], &[])?, "0-dim"),
            ] {
                let dual = if int_side == 0 {
                    db(&[3, 4])?
                } else {
                    da(&[3, 4])?
                };
                let t = randn(&[3, 4])?;
                let operands = |int: Tensor| {
                    if int_side == 0 {
                        [int, dual.clone()]
                    } else {
                        [dual.clone(), int]
                    }
                };
                let tangents = if int_side == 0 {
                    [None, Some(t.clone())]
                } else {
                    [Some(t.clone()), None]
                };
                let label = format!("{name}, an i64 {shape} operand {int_side}");
                let (_, tangent) = forward(f, &operands(int.clone()), &tangents)?;
                assert_eq!(tangent.dtype(), DType::F64, "{label}: the tangent's dtype");
                let (_, reference) = forward(f, &operands(int.to_dtype(DType::F64)?), &tangents)?;
                assert_close(&label, &tangent, &reference, 1e-15)?;
            }
        }
    }
    Ok(())
}

/// Where the operands tie, `minimum` and `maximum` share the tangent half and half (the
/// backward's split), in both modes.
#[test]
fn minimum_and_maximum_split_a_tie() -> Result<()> {
    autograd::manual_seed(17);
    let a = randn(&[5])?;
    let (ta, tb) = (randn(&[5])?, randn(&[5])?);
    let half = ta.add(&tb)?.mul_scalar(0.5)?;
    for f in [(|x: &[Tensor]| x[0].minimum(&x[1])) as Op, |x| {
        x[0].maximum(&x[1])
    }] {
        let inputs = [a.clone(), a.clone()];
        let (_, t) = forward(f, &inputs, &[Some(ta.clone()), Some(tb.clone())])?;
        assert_close("tie", &t, &half, 1e-15)?;
        let (_, reverse) = functional::jvp(
            |xs: &[Tensor]| f(xs),
            &inputs,
            Some(&[ta.clone(), tb.clone()]),
            Options::new(),
        )?;
        assert_close("tie reverse", &t, &reverse[0], 1e-15)?;
        let (_, t) = forward(f, &inputs, &[Some(ta.clone()), None])?;
        assert_close("tie, a's tangent", &t, &ta.mul_scalar(0.5)?, 1e-15)?;
    }
    Ok(())
}

/// A result's tangent is a tensor of its own, never an input's: an in-place op on the result
/// writes its new tangent into the result's, which must leave the input's alone.
#[test]
fn a_result_tangent_is_not_the_input_tangent() -> Result<()> {
    let cases: [(&str, Op); 5] = [
        ("add_scalar", |x| x[0].add_scalar(1.0)),
        ("fmod_scalar", |x| x[0].fmod_scalar(10.0)),
        ("remainder_scalar", |x| x[0].remainder_scalar(10.0)),
        ("add, a's tangent", |x| x[0].add(&x[1])),
        ("sub, a's tangent", |x| x[0].sub(&x[1])),
    ];
    for (name, f) in cases {
        let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
        let other = Tensor::from_vec(vec![0.5f64, 0.25], &[2])?;
        let t = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?;
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        let dual = forward_ad::make_dual(&x, &t)?;
        let y = f(&[dual.clone(), other])?;
        let y_t = forward_ad::unpack_dual(&y)?.tangent.expect("a tangent");
        let x_t = forward_ad::unpack_dual(&dual)?.tangent.expect("a tangent");
        assert!(!y_t.shares_storage(&x_t), "{name}: the input's tangent");
        y.mul_(&Tensor::scalar(2.0f64))?;
        assert_eq!(
            forward_ad::unpack_dual(&y)?
                .tangent
                .unwrap()
                .to_vec::<f64>()?,
            [6.0, 8.0],
            "{name}"
        );
        assert_eq!(
            x_t.to_vec::<f64>()?,
            [3.0, 4.0],
            "{name}: the input's tangent"
        );
    }
    Ok(())
}

/// Reverse over forward: a tangent that requires grad is computed by recorded ops (the rules'
/// ops, not the backward's fused kernel), so its gradients are the second derivatives.
#[test]
fn rules_are_differentiable_backward() -> Result<()> {
    autograd::manual_seed(18);
    let x = randn(&[6])?.requires_grad_(true)?;
    let t = randn(&[6])?.requires_grad_(true)?;
    let (xv, tv) = (x.to_vec::<f64>()?, t.to_vec::<f64>()?);
    // (op, f', f'') element-wise.
    type Scalar = fn(f64) -> f64;
    let cases: [(&str, Op, Scalar, Scalar); 4] = [
        ("sin", |x| x[0].sin(), f64::cos, |x| -x.sin()),
        ("cos", |x| x[0].cos(), |x| -x.sin(), |x| -x.cos()),
        (
            "tanh",
            |x| x[0].tanh(),
            |x| 1.0 - x.tanh().powi(2),
            |x| -2.0 * x.tanh() * (1.0 - x.tanh().powi(2)),
        ),
        ("pow 3", |x| x[0].pow(3.0), |x| 3.0 * x * x, |x| 6.0 * x),
    ];
    for (name, f, d1, d2) in cases {
        let tangent = {
            let _serial = crate::serial();
            let _level = forward_ad::dual_level()?;
            let y = f(&[forward_ad::make_dual(&x, &t)?])?;
            forward_ad::unpack_dual(&y)?.tangent.expect("a tangent")
        };
        assert!(tangent.grad_fn().is_some(), "{name}: a recorded tangent");
        let grads = autograd::grad(
            &[tangent.sum()?],
            &[x.clone(), t.clone()],
            GradOptions::new(),
        )?;
        let gx = grads[0].as_ref().unwrap().to_vec::<f64>()?;
        let gt = grads[1].as_ref().unwrap().to_vec::<f64>()?;
        for i in 0..6 {
            let (ex, et) = (d2(xv[i]) * tv[i], d1(xv[i]));
            assert!(
                (gx[i] - ex).abs() <= 1e-12 * (1.0 + ex.abs()),
                "{name} d/dx[{i}]"
            );
            assert!(
                (gt[i] - et).abs() <= 1e-12 * (1.0 + et.abs()),
                "{name} d/dt[{i}]"
            );
        }
    }
    Ok(())
}

/// Forward through a backward pass (`create_graph` on a dual input): the gradient's tangent is
/// the Hessian-vector product, through the rules of the ops the backward records (sin's
/// cosine, softplus's slope, abs's sign).
#[test]
fn rules_run_inside_a_backward_pass() -> Result<()> {
    autograd::manual_seed(19);
    let x = randn(&[8])?.mul_scalar(2.0)?.requires_grad_(true)?;
    let t = randn(&[8])?;
    let (xv, tv) = (x.to_vec::<f64>()?, t.to_vec::<f64>()?);
    let (beta, threshold) = (2.0, 1.0);
    let sigmoid = |z: f64| 1.0 / (1.0 + (-z).exp());
    type Scalar = Box<dyn Fn(f64) -> f64>;
    // Ops whose backward saves the input: a saved output comes back from its slot without its
    // tangent (`graph/saved.rs`), so relu's and tanh's gradients have none yet.
    let cases: [(&str, Op, Scalar); 3] = [
        ("sin", |x| x[0].sin(), Box::new(|x| -x.sin())),
        (
            "softplus",
            |x| x[0].softplus(2.0, 1.0),
            Box::new(move |x| {
                if beta * x > threshold {
                    0.0
                } else {
                    let s = sigmoid(beta * x);
                    beta * s * (1.0 - s)
                }
            }),
        ),
        ("abs", |x| x[0].abs(), Box::new(|_| 0.0)),
    ];
    for (name, f, second) in cases {
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        let dual = forward_ad::make_dual(&x, &t)?;
        let y = f(std::slice::from_ref(&dual))?.sum()?;
        let g = autograd::grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?;
        let g = g[0].clone().expect("a gradient");
        let hvp = forward_ad::unpack_dual(&g)?
            .tangent
            .unwrap_or_else(|| panic!("{name}: the gradient has a tangent"))
            .to_vec::<f64>()?;
        for i in 0..8 {
            let expected = second(xv[i]) * tv[i];
            assert!(
                (hvp[i] - expected).abs() <= 1e-12 * (1.0 + expected.abs()),
                "{name}[{i}]: {} vs {expected}",
                hvp[i]
            );
        }
    }
    Ok(())
}

/// Every op above computes its tangent by its rule: no backward pass runs in forward mode (the
/// double-vjp fallback runs one per op, which the profiler records, as it does for
/// `functional::jvp` here).
#[test]
fn forward_mode_runs_the_rules_without_a_backward_pass() -> Result<()> {
    autograd::manual_seed(20);
    let x = randn(&[3, 4])?;
    let t = randn(&[3, 4])?;
    // The observable: a backward pass started inside the closure is recorded.
    let (result, prof) = profiler::profile(|| {
        functional::jvp(
            |xs: &[Tensor]| xs[0].sin(),
            std::slice::from_ref(&x),
            Some(std::slice::from_ref(&t)),
            Options::new(),
        )
    });
    result?;
    assert!(!prof.events().is_empty());

    let ops: Vec<(String, Op, Vec<Tensor>)> = unary_cases()
        .into_iter()
        .map(|(name, f, d)| Ok((name.to_string(), f, vec![d(&[3, 4])?])))
        .chain(
            binary_cases()
                .into_iter()
                .map(|(name, f, da, db)| Ok((name.to_string(), f, vec![da(&[3, 4])?, db(&[4])?]))),
        )
        .collect::<Result<_>>()?;
    for (name, f, inputs) in ops {
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        for dual in 0..inputs.len() {
            let duals: Vec<Tensor> = inputs
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    if i == dual {
                        forward_ad::make_dual(x, &x.ones_like()?)
                    } else {
                        Ok(x.clone())
                    }
                })
                .collect::<Result<_>>()?;
            let (y, prof) = profiler::profile(|| f(&duals));
            let y = y?;
            assert!(forward_ad::unpack_dual(&y)?.tangent.is_some(), "{name}");
            let nodes: Vec<&str> = prof.events().iter().map(|e| e.name.as_str()).collect();
            assert!(nodes.is_empty(), "{name}: a backward pass ran: {nodes:?}");
        }
    }
    Ok(())
}

/// Under `no_grad`, a tangent that requires grad gives a result tangent that records nothing,
/// as PyTorch's rules do (grad mode governs their ops); the fallback's backward pass would have
/// recorded it. (Each case takes the tangent of `make_dual` directly: a tangent made by a rule
/// under `no_grad` does not require grad.)
#[test]
fn rules_under_no_grad_record_nothing() -> Result<()> {
    autograd::manual_seed(21);
    let cases: [(&str, Op); 5] = [
        ("sin", |x| x[0].sin()),
        ("tanh", |x| x[0].tanh()),
        ("log1p", |x| x[0].log1p()),
        ("div", |x| x[0].div(&x[0].exp()?)),
        ("where", |x| {
            Tensor::where_(&x[0].gt_scalar(1.0)?, &x[0], &x[0].neg()?)
        }),
    ];
    for (name, f) in cases {
        let x = positive(&[4])?;
        let t = randn(&[4])?.requires_grad_(true)?;
        let _serial = crate::serial();
        let _level = forward_ad::dual_level()?;
        let dual = forward_ad::make_dual(&x, &t)?;
        let y = {
            let _no_grad = autograd::no_grad();
            f(&[dual])?
        };
        let tangent = forward_ad::unpack_dual(&y)?.tangent.expect("a tangent");
        assert!(
            tangent.grad_fn().is_none() && !tangent.requires_grad(),
            "{name}: {:?}",
            tangent.grad_fn().map(|g| g.name().to_string())
        );
    }
    Ok(())
}

/// `remainder`'s forward rule, `self_t - other_t * self.div(other, rounding_mode="floor")`,
/// with PyTorch's floor division (`1.0 // 0.1` is 9, not `floor(1.0 / 0.1)` = 10), and
/// `fmod`'s with `trunc(self / other)`: PyTorch 2.15's tangents for `self_t = 1`,
/// `other_t = 2`.
#[test]
fn remainder_and_fmod_tangents_are_pytorchs() -> Result<()> {
    let inf = f64::INFINITY;
    let a = [1.0, 5.3, -7.25, 3.0, 0.7, -1.0, 0.0, 2.5];
    let b = [0.1, 2.0, 1.5, -0.3, 0.1, 0.1, -2.0, 0.0];
    let cases: [(DType, [f64; 8], [f64; 8]); 2] = [
        (
            DType::F64,
            [-17.0, -3.0, 11.0, 23.0, -11.0, 21.0, 1.0, -inf],
            [-19.0, -3.0, 9.0, 21.0, -11.0, 21.0, 1.0, -inf],
        ),
        (
            DType::F32,
            [-17.0, -3.0, 11.0, 21.0, -11.0, 21.0, 1.0, -inf],
            [-19.0, -3.0, 9.0, 21.0, -13.0, 21.0, 1.0, -inf],
        ),
    ];
    let _serial = crate::serial();
    for (dtype, remainder_t, fmod_t) in cases {
        for (name, want) in [("remainder", remainder_t), ("fmod", fmod_t)] {
            let _level = forward_ad::dual_level()?;
            let x = Tensor::from_vec(a.to_vec(), &[8])?.to_dtype(dtype)?;
            let y = Tensor::from_vec(b.to_vec(), &[8])?.to_dtype(dtype)?;
            let x = forward_ad::make_dual(&x, &x.ones_like()?)?;
            let y = forward_ad::make_dual(&y, &y.full_like(2.0)?)?;
            let r = if name == "remainder" {
                x.remainder(&y)?
            } else {
                x.fmod(&y)?
            };
            let t = forward_ad::unpack_dual(&r)?.tangent.expect("a tangent");
            assert_eq!(
                t.to_dtype(DType::F64)?.to_vec::<f64>()?,
                want,
                "{name} {dtype:?}"
            );
        }
    }
    Ok(())
}
