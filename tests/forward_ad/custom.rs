//! Custom functions under forward mode: `#[jvp]` rules (checked by gradcheck's
//! `check_forward_ad`, a wrong one caught), a derived function's body propagating its tangents,
//! and a hand-written `#[backward]` without a `#[jvp]` getting PyTorch's error.

use autograd::{
    GradcheckOptions, Result, Tensor, backward, differentiable, forward_ad, gradcheck_with, jvp,
};

/// GELU, tanh approximation, with its backward derived.
#[differentiable(derive)]
fn gelu_tanh(x: &Tensor) -> Result<Tensor> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

fn gelu_tanh_derivative(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = c * (x + 0.044715 * x.powi(3));
    let t = inner.tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)
}

#[differentiable]
fn straight_through_round(x: &Tensor) -> Result<Tensor> {
    x.round()
}

#[backward(straight_through_round)]
fn straight_through_round_backward(grad: &Tensor) -> Result<Tensor> {
    Ok(grad.clone())
}

#[test]
fn a_derived_function_has_both_modes() -> Result<()> {
    let _serial = crate::serial();
    let xs = [-1.5f64, -0.2, 0.0, 0.7, 2.0];
    let x = Tensor::from_vec(xs.to_vec(), &[5])?;
    let v = Tensor::from_vec(vec![1.0f64, 2.0, -1.0, 0.5, 3.0], &[5])?;
    let _level = forward_ad::dual_level()?;
    let y = gelu_tanh(&forward_ad::make_dual(&x, &v)?)?;
    let tangent = forward_ad::unpack_dual(&y)?
        .tangent
        .unwrap()
        .to_vec::<f64>()?;
    for ((x, v), t) in xs.iter().zip([1.0, 2.0, -1.0, 0.5, 3.0]).zip(tangent) {
        let expected = gelu_tanh_derivative(*x) * v;
        assert!((t - expected).abs() < 1e-12, "at {x}: {t} vs {expected}");
    }
    Ok(())
}

#[test]
fn a_custom_function_without_jvp_reports_pytorchs_error() -> Result<()> {
    let _serial = crate::serial();
    let x = Tensor::from_vec(vec![0.4f64, 1.6], &[2])?;
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&x, &Tensor::ones_like(&x)?)?;
    let y = straight_through_round(&d)?;
    assert_eq!(y.to_vec::<f64>()?, [0.0, 2.0]);
    let message = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD.";
    assert_eq!(
        forward_ad::unpack_dual(&y).unwrap_err().to_string(),
        message
    );
    // An op on the result reports it too.
    assert_eq!(y.exp().unwrap_err().to_string(), message);
    // Without a tangent on the input, the function runs as usual.
    let plain = straight_through_round(&x)?;
    assert!(forward_ad::unpack_dual(&plain)?.tangent.is_none());
    Ok(())
}

/// `scale · eˣ` with its jvp: the tangent `t · result`.
#[differentiable]
fn scaled_exp(x: &Tensor, scale: f64) -> Result<Tensor> {
    x.exp()?.mul_scalar(scale)
}

#[backward(scaled_exp)]
fn scaled_exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(result)
}

#[jvp(scaled_exp)]
fn scaled_exp_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(result)
}

/// Two inputs, two outputs (`x·y`, `x + s·y`), an infallible jvp naming inputs and an attribute.
#[differentiable]
fn product_and_sum(x: &Tensor, y: &Tensor, s: f64) -> Result<(Tensor, Tensor)> {
    Ok((x.mul(y)?, x.add(&y.mul_scalar(s)?)?))
}

#[backward(product_and_sum)]
fn product_and_sum_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    x: &Tensor,
    y: &Tensor,
    s: f64,
) -> Result<(Tensor, Tensor)> {
    Ok((
        grad_0.mul(y)?.add(grad_1)?,
        grad_0.mul(x)?.add(&grad_1.mul_scalar(s)?)?,
    ))
}

#[jvp(product_and_sum)]
fn product_and_sum_jvp(
    x_t: &Tensor,
    y_t: &Tensor,
    x: &Tensor,
    y: &Tensor,
    s: f64,
) -> (Tensor, Tensor) {
    (x_t * y + x * y_t, x_t + &(y_t * s))
}

/// A jvp with a wrong factor, which gradcheck's forward check must catch.
#[differentiable]
fn cube(x: &Tensor) -> Result<Tensor> {
    x.pow(3.0)
}

#[backward(cube)]
fn cube_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.pow(2.0)?.mul_scalar(3.0)?)
}

#[jvp(cube)]
fn cube_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.mul(&x.pow(2.0)?.mul_scalar(2.0)?)
}

#[test]
fn a_jvp_computes_the_tangents_and_gradcheck_checks_it() -> Result<()> {
    let _serial = crate::serial();
    let x = Tensor::from_vec(vec![0.3f64, -0.5, 1.2], &[3])?.requires_grad_(true)?;
    let y = Tensor::from_vec(vec![1.5f64, 0.25, -2.0], &[3])?.requires_grad_(true)?;
    let both = GradcheckOptions {
        check_forward_ad: true,
        ..GradcheckOptions::default()
    };
    gradcheck_with(|i| scaled_exp(&i[0], 2.5), &[x.clone()], both)?;
    gradcheck_with(
        |i| Ok(product_and_sum(&i[0], &i[1], 3.0)?.0),
        &[x.clone(), y.clone()],
        both,
    )?;
    gradcheck_with(
        |i| Ok(product_and_sum(&i[0], &i[1], 3.0)?.1),
        &[x.clone(), y.clone()],
        both,
    )?;
    // The backward of `cube` is right, its jvp is not.
    gradcheck_with(|i| cube(&i[0]), &[x.clone()], GradcheckOptions::default())?;
    let err = gradcheck_with(|i| cube(&i[0]), &[x.clone()], both).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"
        ),
        "{err}"
    );
    // An input without a tangent gets a zero one.
    let _level = forward_ad::dual_level()?;
    let dx = forward_ad::make_dual(&x.detach(), &Tensor::ones(&[3], autograd::DType::F64)?)?;
    let (p, s) = product_and_sum(&dx, &y.detach(), 3.0)?;
    assert_eq!(
        forward_ad::unpack_dual(&p)?
            .tangent
            .unwrap()
            .to_vec::<f64>()?,
        [1.5, 0.25, -2.0]
    );
    assert_eq!(
        forward_ad::unpack_dual(&s)?
            .tangent
            .unwrap()
            .to_vec::<f64>()?,
        [1.0, 1.0, 1.0]
    );
    // Gradients still flow through the function as usual.
    let out = scaled_exp(&forward_ad::make_dual(&x, &x.detach())?, 1.0)?;
    out.sum()?.backward()?;
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>()?,
        [0.3f64.exp(), (-0.5f64).exp(), 1.2f64.exp()]
    );
    Ok(())
}

/// Squares `x` in place (a `dirty` input): its backward and its jvp read `x` from before the
/// write through `#[original]`.
#[differentiable(dirty(x))]
fn square_(x: &Tensor) -> Result<Tensor> {
    let squared = x.mul(x)?;
    x.copy_(&squared)?;
    Ok(x.clone())
}

#[backward(square_)]
fn square_backward(grad: &Tensor, #[original] x: &Tensor) -> Result<Tensor> {
    grad.mul(x)?.mul_scalar(2.0)
}

#[jvp(square_)]
fn square_jvp(x_t: &Tensor, #[original] x: &Tensor) -> Result<Tensor> {
    x_t.mul(x)?.mul_scalar(2.0)
}

#[test]
fn a_jvp_reads_a_dirty_input_from_before_the_write() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let x = forward_ad::make_dual(
        &Tensor::from_vec(vec![1.5f64, -2.0], &[2])?,
        &Tensor::from_vec(vec![1.0f64, 3.0], &[2])?,
    )?;
    let y = x.copy()?;
    square_(&y)?;
    let unpacked = forward_ad::unpack_dual(&y)?;
    assert_eq!(unpacked.primal.to_vec::<f64>()?, vec![2.25, 4.0]);
    let tangent = unpacked.tangent.expect("a tangent");
    assert_eq!(tangent.to_vec::<f64>()?, vec![3.0, -12.0]);
    Ok(())
}

/// `scale · Σ xs`, a `&[Tensor]` input whose jvp takes `None` for the elements without a
/// tangent.
#[differentiable]
fn scaled_total(scale: &Tensor, xs: &[Tensor]) -> Result<Tensor> {
    let mut total = xs[0].clone();
    for x in &xs[1..] {
        total = total.add(x)?;
    }
    total.mul(scale)
}

#[backward(scaled_total)]
fn scaled_total_backward(
    grad: &Tensor,
    scale: &Tensor,
    xs: &[Tensor],
    result: &Tensor,
) -> Result<(Tensor, Vec<Tensor>)> {
    let g_scale = grad.mul(result)?.div(scale)?;
    Ok((g_scale, vec![grad.mul(scale)?; xs.len()]))
}

#[jvp(scaled_total)]
fn scaled_total_jvp(
    scale_t: Option<&Tensor>,
    xs_t: &[Option<Tensor>],
    scale: &Tensor,
    xs: &[Tensor],
    result: &Tensor,
) -> Result<Tensor> {
    assert_eq!(xs_t.len(), xs.len());
    let mut t = result.zeros_like()?;
    for x_t in xs_t.iter().flatten() {
        t = t.add(&x_t.mul(scale)?)?;
    }
    match scale_t {
        Some(s_t) => t.add(&result.div(scale)?.mul(s_t)?),
        None => Ok(t),
    }
}

/// The rows of `x` scaled by `k`: a `Vec<Tensor>` output, whose jvp returns one tangent per row;
/// and the same with a jvp that returns one too few.
#[differentiable]
fn scaled_rows(x: &Tensor, k: f64) -> Result<Vec<Tensor>> {
    (0..x.shape()[0])
        .map(|i| x.select(0, i)?.mul_scalar(k))
        .collect()
}

#[backward(scaled_rows)]
fn scaled_rows_backward(grad: &[Tensor], k: f64) -> Result<Tensor> {
    Tensor::stack(grad, 0)?.mul_scalar(k)
}

#[jvp(scaled_rows)]
fn scaled_rows_jvp(x_t: &Tensor, k: f64, result: &[Tensor]) -> Result<Vec<Tensor>> {
    (0..result.len())
        .map(|i| x_t.select(0, i)?.mul_scalar(k))
        .collect()
}

#[differentiable]
fn short_rows(x: &Tensor) -> Result<Vec<Tensor>> {
    (0..x.shape()[0]).map(|i| x.select(0, i)?.exp()).collect()
}

#[backward(short_rows)]
fn short_rows_backward(grad: &[Tensor], result: &[Tensor]) -> Result<Tensor> {
    let parts: Vec<Tensor> = grad.iter().zip(result).map(|(g, r)| g * r).collect();
    Tensor::stack(&parts, 0)
}

#[jvp(short_rows)]
fn short_rows_jvp(x_t: &Tensor, result: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![x_t.select(0, 0)?.mul(&result[0])?])
}

/// `|x|` with the signs kept by `save(signs)` (and a residual nobody names): the jvp reads
/// them, whether the call records a node or not.
#[differentiable(save(signs, note))]
fn magnitude(x: &Tensor) -> Result<(Tensor, Vec<f64>, String)> {
    let signs = x.to_vec::<f64>()?.iter().map(|v| v.signum()).collect();
    Ok((x.abs()?, signs, String::from("unused")))
}

#[backward(magnitude)]
fn magnitude_backward(grad: &Tensor, signs: &[f64]) -> Result<Tensor> {
    grad.mul(&Tensor::from_vec(signs.to_vec(), grad.shape())?)
}

#[jvp(magnitude)]
fn magnitude_jvp(x_t: &Tensor, signs: &[f64]) -> Result<Tensor> {
    x_t.mul(&Tensor::from_vec(signs.to_vec(), x_t.shape())?)
}

/// An infallible forward with a residual its backward does not name.
#[differentiable(save(factor))]
fn tripled(x: &Tensor) -> (Tensor, f64) {
    (x * 3.0, 3.0)
}

#[backward(tripled)]
fn tripled_backward(grad: &Tensor) -> Tensor {
    grad * 3.0
}

#[jvp(tripled)]
fn tripled_jvp(x_t: &Tensor, factor: &f64) -> Tensor {
    x_t * *factor
}

fn tangent(y: &Tensor) -> Result<Vec<f64>> {
    forward_ad::unpack_dual(y)?
        .tangent
        .expect("a tangent")
        .to_vec::<f64>()
}

#[test]
fn jvps_of_lists_vectors_and_residuals() -> Result<()> {
    let _serial = crate::serial();
    let scale = Tensor::from_vec(vec![2.0f64], &[1])?;
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
    let b = Tensor::from_vec(vec![3.0f64, -4.0], &[2])?;
    let x = Tensor::from_vec(vec![1.0f64, -2.0, 0.5, 3.0], &[2, 2])?;
    let both = GradcheckOptions {
        check_forward_ad: true,
        ..GradcheckOptions::default()
    };
    let leaf = |t: &Tensor| t.detach().requires_grad_(true);
    gradcheck_with(
        |i| scaled_total(&i[0], &[i[1].clone(), i[2].clone()]),
        &[leaf(&scale)?, leaf(&a)?, leaf(&b)?],
        both,
    )?;
    gradcheck_with(
        |i| Ok(scaled_rows(&i[0], 1.5)?[1].clone()),
        &[leaf(&x)?],
        both,
    )?;
    gradcheck_with(|i| magnitude(&i[0]), &[leaf(&x)?], both)?;

    let _level = forward_ad::dual_level()?;
    // A tangent on the second element of the list only: `None` for the first and for `scale`.
    let db = forward_ad::make_dual(&b, &Tensor::from_vec(vec![1.0f64, 10.0], &[2])?)?;
    assert_eq!(
        tangent(&scaled_total(&scale, &[a.clone(), db])?)?,
        [2.0, 20.0]
    );
    let dx = forward_ad::make_dual(&x, &Tensor::ones_like(&x)?)?;
    let rows = scaled_rows(&dx, 1.5)?;
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(tangent(r)?, [1.5, 1.5]);
    }
    // One tangent too few: PyTorch's custom Function error, from the call.
    assert_eq!(
        short_rows(&dx).unwrap_err().to_string(),
        "Function's jvp returned an invalid number of forward gradients (expected 2 but got 1)"
    );
    assert_eq!(short_rows(&x)?.len(), 2);
    // The residual, through the path without a node and through the one with.
    assert_eq!(tangent(&magnitude(&dx)?)?, [1.0, -1.0, 1.0, 1.0]);
    let recorded = forward_ad::make_dual(&leaf(&x)?, &Tensor::ones_like(&x)?)?;
    let y = magnitude(&recorded)?;
    assert!(y.grad_fn().is_some());
    assert_eq!(tangent(&y)?, [1.0, -1.0, 1.0, 1.0]);
    assert_eq!(tangent(&tripled(&dx))?, [3.0; 4]);
    assert_eq!(tangent(&tripled(&recorded))?, [3.0; 4]);
    Ok(())
}
