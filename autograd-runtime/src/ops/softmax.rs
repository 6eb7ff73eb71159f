//! `softmax` and `log_softmax` over one dimension, numerically stable (the kernels subtract the
//! maximum), with backward formulas written in tensor ops so they are differentiable again.

use autograd_macros::{backward, differentiable};

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
    if grad.dtype().is_half() {
        // PyTorch's CPU kernel computes a half gradient in f32 and rounds once.
        let (g, y) = (grad.to_dtype(DType::F32)?, result.to_dtype(DType::F32)?);
        return softmax_backward(&g, &y, dim)?.to_dtype(grad.dtype());
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
    if grad.dtype().is_half() {
        // As `softmax_backward`: in f32, rounded once.
        let (g, y) = (grad.to_dtype(DType::F32)?, result.to_dtype(DType::F32)?);
        return log_softmax_backward(&g, &y, dim)?.to_dtype(grad.dtype());
    }
    // dx = g - exp(y) · Σ_dim g
    let total = grad.sum_dims(&[dim], true)?;
    grad.sub(&result.exp()?.mul(&total)?)
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
