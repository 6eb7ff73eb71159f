//! Reductions: `sum`, `sum_dims`, `mean`, and `sum_to_shape` (the reduction of a broadcast
//! gradient back to an input's shape).

use autograd_macros::{backward, differentiable, jvp};

use super::derivative_rules::Rule;
use crate::backend::BinaryOp;
use crate::graph::InputMetadata;
use crate::layout::{Dims, is_expandable_to, wrap_dim};
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

// ----- the ops ----------------------------------------------------------------------------------

#[differentiable(builtin, crate = "crate", rule)]
fn sum(x: &Tensor) -> Result<Tensor> {
    kernels::of_tensor(x)?.sum_all(x)
}

#[backward(sum)]
fn sum_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.expand_to(x.shape())
}

// Linear: each reduction's tangent is the same reduction of the input's tangent.
#[jvp(sum)]
fn sum_jvp(x_t: &Tensor) -> Result<Tensor> {
    sum(x_t)
}

#[differentiable(builtin, crate = "crate", rule)]
fn mean(x: &Tensor) -> Result<Tensor> {
    let n = x.numel() as f64;
    let k = kernels::of_tensor(x)?;
    if x.dtype().is_half() {
        // PyTorch's CPU sums a half tensor and divides it in f32, then rounds once (rounding
        // the sum to half first is a half ulp off the mean).
        let wide = k.to_dtype(x, crate::DType::F32)?;
        let m = k.sum_all(&wide)?.scalar_kernel(BinaryOp::Div, n, false)?;
        return k.to_dtype(&m, x.dtype());
    }
    k.sum_all(x)?.scalar_kernel(BinaryOp::Mul, 1.0 / n, false)
}

#[backward(mean)]
fn mean_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    // Scale before expanding: the incoming gradient is small, the expanded view is not.
    let n = x.shape().iter().product::<usize>() as f64;
    grad.mul_scalar(1.0 / n)?.expand_to(x.shape())
}

#[jvp(mean)]
fn mean_jvp(x_t: &Tensor) -> Result<Tensor> {
    mean(x_t)
}

/// `sum(dims)`, PyTorch's `SumBackward1`; `axes` are validated and wrapped.
#[differentiable(builtin, crate = "crate", name = "SumBackward1", rule = sum_axes)]
fn sum_dims(x: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    kernels::of_tensor(x)?.sum_dims(x, &axes, keepdim)
}

#[backward(sum_dims)]
fn sum_dims_backward(
    grad: &Tensor,
    x: &InputMetadata,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    if keepdim {
        return grad.expand_to(x.shape());
    }
    // The reduced dims come back as size 1 before expanding.
    let kept: Dims = (x.shape().iter().enumerate())
        .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
        .collect();
    grad.reshape(&kept)?.expand_to(x.shape())
}

#[jvp(sum_dims)]
fn sum_dims_jvp(x_t: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    sum_dims(x_t, axes, keepdim)
}

/// The reduction of a broadcast result back to `shape` (`SumBackward1` in PyTorch's graphs of
/// `sum_to_size`).
#[differentiable(builtin, crate = "crate", name = "SumBackward1")]
fn sum_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    kernels::of_tensor(x)?.sum_to(x, shape)
}

#[backward(sum_to)]
fn sum_to_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.expand_to(x.shape())
}

#[jvp(sum_to)]
fn sum_to_jvp(x_t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    sum_to(x_t, shape)
}

impl Tensor {
    /// Sum of all elements (a 0-dim tensor).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.sum()?.item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Sum, self, |x| x.sum());
        sum(self)
    }

    /// Mean of all elements (a 0-dim tensor).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.mean()?.item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mean(&self) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(crate::Error::InvalidArgument(format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        mean(self)
    }

    /// Sum over `dims`; the reduced dims are kept with size 1 if `keepdim`.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`] for a dim outside the tensor; [`Error::Shape`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.sum_dims(&[0], false)?.to_vec::<f64>()?, vec![4.0, 6.0]);
    /// assert_eq!(t.sum_dims(&[1], true)?.shape(), &[2, 1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum_dims(&self, dims: &[usize], keepdim: bool) -> Result<Tensor> {
        crate::amp::autocast_op!(Sum, self, |x| x.sum_dims(dims, keepdim));
        let mut axes = Dims::with_capacity(dims.len());
        for &d in dims {
            let d = wrap_dim(d as isize, self.ndim())?;
            if axes.contains(&d) {
                return Err(Error::shape(
                    "sum_dims",
                    format!("dim {d} appears multiple times in the list of dims"),
                ));
            }
            axes.push(d);
        }
        if self.ndim() == 0 {
            axes.clear();
        }
        sum_dims(self, axes, keepdim)
    }

    /// Sums a broadcast result back to `shape` (leading dims and dims where `shape` has 1),
    /// as PyTorch's `sum_to_size`.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] if `shape` does not broadcast to this tensor's shape.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let g = Tensor::ones(&[2, 3], DType::F64)?;
    /// assert_eq!(g.sum_to_shape(&[1, 3])?.to_vec::<f64>()?, vec![2.0; 3]);
    /// assert_eq!(g.sum_to_shape(&[3])?.shape(), &[3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        if !is_expandable_to(shape, self.shape()) {
            return Err(Error::shape(
                "sum_to_shape",
                format!(
                    "size {shape:?} is not expandable to size {:?}",
                    self.shape()
                ),
            ));
        }
        sum_to(self, shape)
    }
}

// ----- derivative rules for `#[differentiable(derive)]` (see `derivative_rules.rs`) -------------

/// `x.sum_dims(dims, keepdim)` in a derived body: the rule of the op (`sum_axes`, generated from
/// its declaration) on the dims wrapped as the method wraps them.
#[doc(hidden)]
#[allow(non_upper_case_globals)]
impl super::DerivativeRules {
    #[allow(clippy::type_complexity)]
    pub const sum_dims: Rule<fn(&Tensor, &Tensor, &Tensor, &[usize], bool) -> Result<Tensor>> =
        Rule {
            reads: Self::sum_axes.reads,
            apply: |grad, x, result, dims, keepdim| {
                let axes: Dims = dims
                    .iter()
                    .map(|&d| wrap_dim(d as isize, x.ndim()))
                    .collect::<Result<_>>()?;
                (Self::sum_axes.apply)(grad, x, result, axes, keepdim)
            },
        };
}
