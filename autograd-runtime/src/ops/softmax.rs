//! `softmax` and `log_softmax` over one dimension, numerically stable (the kernels subtract the
//! maximum). Their backward runs as one fused kernel per row (`Kernels::softmax_backward`) when
//! it is not recorded; under `create_graph` it is written in tensor ops, so it is differentiable
//! again (the `GradFormula` rule, `ops/unary.rs`'s `grad_formula_or`).

use autograd_macros::{backward, differentiable, jvp};

use super::records;
use crate::layout::wrap_dim;
use crate::tensor::kernels;
use crate::{DType, Result, Tensor};

/// `dim` is wrapped.
#[differentiable(builtin, crate = "crate", rule)]
fn softmax(x: &Tensor, dim: usize) -> Result<Tensor> {
    kernels::of_tensor(x)?.softmax(x, dim, false)
}

#[backward(softmax)]
fn softmax_backward(grad: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    softmax_grad(grad, result, dim)
}

/// Softmax's gradient `y · (g − Σ_dim g·y)` from the incoming gradient `g` and the result `y`:
/// the fused kernel unless the formula is recorded (then in tensor ops, differentiable again) or
/// the backend has no fused row kernels. Also the masked softmax of attention's gradient.
pub(crate) fn softmax_grad(grad: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    let k = kernels::of_tensor(grad)?;
    if !records(&[grad, result]) && k.fused_rows() && grad.dtype() == result.dtype() {
        // Halves are computed in f32 and rounded once, as below.
        return k.softmax_backward(grad, result, dim, false);
    }
    if grad.dtype().is_half() {
        // PyTorch's CPU kernel computes a half gradient in f32 and rounds once.
        let (g, y) = (grad.to_dtype(DType::F32)?, result.to_dtype(DType::F32)?);
        return softmax_grad(&g, &y, dim)?.to_dtype(grad.dtype());
    }
    // dx = y * (g - Σ_dim g·y)
    let dot = grad.mul(result)?.sum_dims(&[dim], true)?;
    result.mul(&grad.sub(&dot)?)
}

/// `dim` is wrapped.
#[differentiable(builtin, crate = "crate", rule)]
fn log_softmax(x: &Tensor, dim: usize) -> Result<Tensor> {
    kernels::of_tensor(x)?.softmax(x, dim, true)
}

#[backward(log_softmax)]
fn log_softmax_backward(grad: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    let k = kernels::of_tensor(grad)?;
    if !records(&[grad, result]) && k.fused_rows() && grad.dtype() == result.dtype() {
        return k.softmax_backward(grad, result, dim, true);
    }
    if grad.dtype().is_half() {
        // As `softmax_backward`: in f32, rounded once.
        let (g, y) = (grad.to_dtype(DType::F32)?, result.to_dtype(DType::F32)?);
        return log_softmax_backward(&g, &y, dim)?.to_dtype(grad.dtype());
    }
    // dx = g - exp(y) · Σ_dim g
    let total = grad.sum_dims(&[dim], true)?;
    grad.sub(&result.exp()?.mul(&total)?)
}

/// Softmax's tangent `y ⊙ (ẋ − Σ_dim y ⊙ ẋ)`: its gradient formula applied to the tangent.
#[jvp(softmax)]
fn softmax_jvp(x_t: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    softmax_grad(x_t, result, dim)
}

/// Log-softmax's tangent `ẋ − Σ_dim softmax(x) ⊙ ẋ`, with `softmax(x) = exp(y)`.
#[jvp(log_softmax)]
fn log_softmax_jvp(x_t: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    let dot = result.exp()?.mul(x_t)?.sum_dims(&[dim], true)?;
    x_t.sub(&dot)
}

impl Tensor {
    /// `exp(x) / Σ exp(x)` over `dim`, computed stably.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1000.0f64, 1000.0], &[2])?;
    /// assert_eq!(x.softmax(0)?.to_vec::<f64>()?, vec![0.5, 0.5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn softmax(&self, dim: usize) -> Result<Tensor> {
        crate::amp::autocast_op!(Softmax, self, |x| x.softmax(dim));
        let dim = wrap_dim(dim as isize, self.ndim())?.min(self.ndim().saturating_sub(1));
        softmax(self, dim)
    }

    /// `x - log Σ exp(x)` over `dim`, computed stably.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![0.0f64, 0.0], &[1, 2])?;
    /// let y = x.log_softmax(1)?.to_vec::<f64>()?;
    /// assert!((y[0] + 2f64.ln()).abs() < 1e-15);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn log_softmax(&self, dim: usize) -> Result<Tensor> {
        crate::amp::autocast_op!(LogSoftmax, self, |x| x.log_softmax(dim));
        let dim = wrap_dim(dim as isize, self.ndim())?.min(self.ndim().saturating_sub(1));
        log_softmax(self, dim)
    }
}

/// The mask [`Tensor::safe_softmax_masked`] applies to the scores before the softmax: an
/// attribute of the op (the mask takes no gradient; a float mask that requires one is added to
/// the scores by its caller instead).
#[derive(Clone, Debug)]
pub(crate) enum AttnMask {
    /// No mask.
    None,
    /// Row `i` of each trailing `[L, S]` matrix keeps the keys `0..=i`
    /// (`scaled_dot_product_attention`'s `is_causal`).
    Causal,
    /// Added to the scores (a float tensor broadcasting to their shape: `-inf` where a key is
    /// masked out).
    Add(Tensor),
}

/// PyTorch's `_safe_softmax` over the last dim of `x + mask`, in one pass per row: rows whose
/// entries are all `-inf` give zeros instead of NaN and pass no gradient. Its gradient is
/// softmax's (`_softmax_backward_data`), through the result.
#[differentiable(builtin, crate = "crate", name = "SafeSoftmaxBackward0")]
fn safe_softmax_masked(x: &Tensor, mask: &AttnMask) -> Result<Tensor> {
    let k = kernels::of_tensor(x)?;
    match mask {
        AttnMask::None => k.softmax_masked(x, None, false, false, true),
        AttnMask::Causal => k.softmax_masked(x, None, true, false, true),
        AttnMask::Add(m) => k.softmax_masked(x, Some(m), false, false, true),
    }
}

#[backward(safe_softmax_masked)]
fn safe_softmax_masked_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    softmax_grad(grad, result, result.ndim().saturating_sub(1))
}

/// Softmax's tangent through the result; a masked-out row's result is zeros, so is its tangent.
#[jvp(safe_softmax_masked)]
fn safe_softmax_masked_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    softmax_grad(x_t, result, result.ndim().saturating_sub(1))
}

impl Tensor {
    /// The masked softmax of attention over the last dim, fused (see [`AttnMask`]), or `None`
    /// when this tensor's backend has no fused row kernels or the mask must be differentiated
    /// (it requires grad or carries a tangent): the caller then composes it.
    pub(crate) fn safe_softmax_masked(&self, mask: &AttnMask) -> Result<Option<Tensor>> {
        if !kernels::of_tensor(self)?.fused_rows() || !self.dtype().is_floating_point() {
            return Ok(None);
        }
        if let AttnMask::Add(m) = mask
            && (m.requires_grad()
                || crate::forward_ad::has_tangent(&[m])
                || !m.dtype().is_floating_point()
                || m.device() != self.device())
        {
            return Ok(None);
        }
        safe_softmax_masked(self, mask).map(Some)
    }
}
