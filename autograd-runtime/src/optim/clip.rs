//! Gradient clipping: PyTorch's `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_`.

use crate::{Error, Result, Tensor, no_grad};

/// Scales the gradients of `params` so that their total `norm_type`-norm (the norm of the
/// vector of every gradient's norm) is at most `max_norm`, and returns that total norm before
/// scaling, as PyTorch's `clip_grad_norm_`: the gradients are multiplied in place by
/// `min(max_norm / (total + 1e-6), 1)`. `norm_type` is any `p >= 1` or `f64::INFINITY` (the
/// largest absolute value). Parameters without a gradient are skipped; with none at all, the
/// total is a 0-dim zero. As in PyTorch (`error_if_nonfinite=False`), a NaN in any gradient
/// makes the total and every gradient NaN, and an infinite one zeroes every finite entry.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a `norm_type` below 1 or NaN, or gradients of different
/// dtypes or devices.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::clip_grad_norm_;
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![0.0f32, 0.0], &[2])?.requires_grad_(true)?;
/// w.set_grad(Some(Tensor::from_vec(vec![3.0f32, 4.0], &[2])?))?;
/// let total = clip_grad_norm_(&[w.clone()], 1.0, 2.0)?;
/// assert_eq!(total.item::<f32>()?, 5.0);
/// let g = w.grad().unwrap().to_vec::<f32>()?;
/// assert!((g[0] - 0.6).abs() < 1e-6 && (g[1] - 0.8).abs() < 1e-6);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Tensor> {
    if norm_type.is_nan() || norm_type < 1.0 {
        return Err(Error::InvalidArgument(format!(
            "clip_grad_norm_ supports norm_type >= 1 or inf, got {}",
            crate::error::py_float(norm_type)
        )));
    }
    let _guard = no_grad();
    let grads: Vec<Tensor> = params.iter().filter_map(Tensor::grad).collect();
    let Some(first) = grads.first() else {
        return Ok(Tensor::scalar(0.0f32));
    };
    for g in &grads[1..] {
        first.check_same_dtype_device("clip_grad_norm_", g)?;
    }
    let norms = grads
        .iter()
        .map(|g| vector_norm(g, norm_type))
        .collect::<Result<Vec<_>>>()?;
    let total = vector_norm(&Tensor::stack(&norms, 0)?, norm_type)?;
    let coef = total.add_scalar(1e-6)?.rdiv_scalar(max_norm)?;
    // PyTorch's `clamp(clip_coef, max=1.0)`: NaN stays NaN, so a NaN total norm makes every
    // gradient NaN, and an infinite one zeroes the finite entries, as in PyTorch.
    let coef = coef.clamp(None, Some(1.0))?;
    for g in &grads {
        g.mul_(&coef)?;
    }
    Ok(total)
}

/// `‖x‖_p` over all elements, as a 0-dim tensor (PyTorch's `linalg.vector_norm`).
fn vector_norm(x: &Tensor, p: f64) -> Result<Tensor> {
    let a = x.abs()?;
    if p.is_infinite() {
        if x.numel() == 0 {
            return x.sum();
        }
        let flat = a.reshape(&[x.numel()])?;
        let (max, _) = flat.max_dim_positions(0, false)?;
        Ok(max)
    } else if p == 1.0 {
        a.sum()
    } else if p == 2.0 {
        x.mul(x)?.sum()?.sqrt()
    } else {
        a.pow(p)?.sum()?.pow(1.0 / p)
    }
}

/// Clamps every gradient of `params` to `[-clip_value, clip_value]`, in place (PyTorch's
/// `clip_grad_value_`, through [`Tensor::clamp`]). NaN stays NaN.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a negative or NaN `clip_value`; device errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::clip_grad_value_;
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![0.0f32; 3], &[3])?.requires_grad_(true)?;
/// w.set_grad(Some(Tensor::from_vec(vec![-3.0f32, 0.5, 2.0], &[3])?))?;
/// clip_grad_value_(&[w.clone()], 1.0)?;
/// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, vec![-1.0, 0.5, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    if clip_value.is_nan() || clip_value < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "clip_value must be non-negative, got {}",
            crate::error::py_float(clip_value)
        )));
    }
    let _guard = no_grad();
    for g in params.iter().filter_map(Tensor::grad) {
        g.copy_(&g.clamp(Some(-clip_value), Some(clip_value))?)?;
    }
    Ok(())
}
