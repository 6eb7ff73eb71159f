//! Reductions beyond `sum`: `mean_dims`, `var_dims`/`std_dims` (with `correction`), `prod` and
//! `prod_dim`, `cumsum`, `logsumexp`, the vector `norm`, and `amax`/`amin`, with PyTorch's node
//! names (`MeanBackward1`, `StdBackward0`, `ProdBackward0/1`, `CumsumBackward0`,
//! `LogsumexpBackward0`, `LinalgVectorNormBackward0`, `AmaxBackward0`, `AminBackward0`,
//! `VarBackward0`).
//!
//! Rust has no overloads: PyTorch's `mean(dims, keepdim)` is `mean_dims`, `var(dims,
//! correction=, keepdim=)` is `var_dims`, `std(..)` is `std_dims`, `prod(dim, keepdim)` is
//! `prod_dim`, `norm(p, dim, keepdim)` is `norm_dims`, `amax`/`amin` keep their names; an empty
//! `dims` list reduces every dim (PyTorch's `dim=None`). Dims are `isize` (negative ones count
//! from the end).
//!
//! The forwards compose existing kernels: `prod` multiplies halves pairwise (log₂ n kernel
//! calls), `cumsum` adds shifted copies (a Hillis-Steele scan, log₂ n kernel calls). The
//! gradients are written in recorded ops, so double backward works; `prod`'s is the product of
//! the other entries (exclusive prefix times exclusive suffix products), which is PyTorch's
//! result with zeros among the entries too; `amax`/`amin` share theirs evenly among ties, as
//! PyTorch's.

use autograd_macros::{backward, differentiable, jvp};

use super::extrema::*;
use crate::backend::{MapOp, UnaryOp};
use crate::layout::{Dims, wrap_dim};
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// `x`'s shape with the `axes` set to 1 (the keepdim shape).
fn kept_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    (shape.iter().enumerate())
        .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
        .collect()
}

/// How many elements each reduced entry covers.
fn reduced_count(shape: &[usize], axes: &[usize]) -> usize {
    axes.iter().map(|&a| shape[a]).product()
}

/// `grad` (of a reduction over `axes`) reshaped to the keepdim shape.
pub(super) fn unreduce(
    grad: &Tensor,
    shape: &[usize],
    axes: &[usize],
    keepdim: bool,
) -> Result<Tensor> {
    if keepdim {
        return Ok(grad.clone());
    }
    grad.reshape(&kept_shape(shape, axes))
}

/// `x.max` over `axes` (kept as size 1), outside autograd; the shifts of `logsumexp`.
pub(super) fn amax_kept(x: &Tensor, axes: &[usize]) -> Result<Tensor> {
    let mut m = x.detach();
    for &a in axes {
        m = m.max_dim_positions(a, true)?.0;
    }
    Ok(m)
}

// ----- the ops ----------------------------------------------------------------------------------

/// `axes` are wrapped and distinct (all dims for `mean(None)`).
#[differentiable(builtin, crate = "crate", name = "MeanBackward1")]
fn mean_dims(x: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    let n = reduced_count(x.shape(), &axes) as f64;
    x.sum_dims(&axes, keepdim)?.mul_scalar(1.0 / n)
}

#[backward(mean_dims)]
fn mean_dims_backward(
    grad: &Tensor,
    x: &crate::graph::InputMetadata,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    let n = reduced_count(x.shape(), axes) as f64;
    unreduce(&grad.mul_scalar(1.0 / n)?, x.shape(), axes, keepdim)?.expand_to(x.shape())
}

#[jvp(mean_dims)]
fn mean_dims_jvp(x_t: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    mean_dims(x_t, axes, keepdim)
}

/// `var` over the wrapped `axes`, PyTorch's `VarBackward0`.
#[differentiable(builtin, crate = "crate", name = "VarBackward0")]
fn var_dims(x: &Tensor, axes: Dims, correction: f64, keepdim: bool) -> Result<Tensor> {
    x.var_axes(&axes, correction, keepdim)
}

#[backward(var_dims)]
fn var_dims_backward(
    grad: &Tensor,
    x: &Tensor,
    axes: &Dims,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    // PyTorch's `var_backward`: (2 / (N - correction)) · grad · (x - mean).
    let n = reduced_count(x.shape(), axes) as f64;
    let dof = (n - correction).max(0.0);
    let g = unreduce(grad, x.shape(), axes, keepdim)?;
    let dev = x.sub(&x.mean_dims_wrapped(axes, true)?)?;
    g.mul_scalar(2.0)?.div_scalar(dof)?.mul(&dev)
}

/// PyTorch's `var_jvp`: (2 / (N - correction)) · Σ ẋ · (x - mean).
#[jvp(var_dims)]
fn var_dims_jvp(
    x_t: &Tensor,
    x: &Tensor,
    axes: Dims,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    let n = reduced_count(x.shape(), &axes) as f64;
    let dof = (n - correction).max(0.0);
    centered_dot(x_t, x, &axes, keepdim)?
        .mul_scalar(2.0)?
        .div_scalar(dof)
}

/// `Σ ẋ · (x - mean(x))` over `axes`: the tangent of `var` up to its factor.
fn centered_dot(x_t: &Tensor, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor> {
    let dev = x.sub(&x.mean_dims_wrapped(axes, true)?)?;
    x_t.mul(&dev)?.sum_dims(axes, keepdim)
}

/// `std` over the wrapped `axes`: the square root of `var_dims`.
#[differentiable(builtin, crate = "crate", name = "StdBackward0")]
fn std_dims(x: &Tensor, axes: Dims, correction: f64, keepdim: bool) -> Result<Tensor> {
    x.var_axes(&axes, correction, keepdim)?.sqrt()
}

#[backward(std_dims)]
fn std_dims_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &Dims,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    // PyTorch's `std_backward`: var_backward(grad / (2 result)), 0 where the result is 0 (there
    // every deviation is 0: divided by 1 instead, the term is 0).
    let n = reduced_count(x.shape(), axes) as f64;
    let dof = (n - correction).max(0.0);
    let g = unreduce(grad, x.shape(), axes, keepdim)?;
    let r = unreduce(result, x.shape(), axes, keepdim)?;
    let dev = x.sub(&x.mean_dims_wrapped(axes, true)?)?;
    g.div(&nonzero_denominator(&r)?.mul_scalar(dof)?)?.mul(&dev)
}

/// PyTorch's `std_jvp`: `var_jvp / (2 result)`, 0 where the result is 0.
#[jvp(std_dims)]
fn std_dims_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: Dims,
    correction: f64,
    keepdim: bool,
) -> Result<Tensor> {
    let n = reduced_count(x.shape(), &axes) as f64;
    let dof = (n - correction).max(0.0);
    // Where the result is 0 every deviation is: the sum is 0, and so the quotient.
    centered_dot(x_t, x, &axes, keepdim)?.div(&nonzero_denominator(result)?.mul_scalar(dof)?)
}

/// The product of all elements.
#[differentiable(builtin, crate = "crate", name = "ProdBackward0")]
fn prod(x: &Tensor) -> Result<Tensor> {
    let flat = x.reshape(&[x.numel()])?;
    Ok(with_shape(product_along(&flat, 0)?, &[]))
}

#[backward(prod)]
fn prod_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let flat = x.reshape(&[x.numel()])?;
    grad.expand(&[x.numel()])?
        .mul(&others_product(&flat, 0)?)?
        .reshape(x.shape())
}

/// Σ ẋ · (the product of the other entries), PyTorch's result with zeros among the entries too.
#[jvp(prod)]
fn prod_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    let flat = x.reshape(&[x.numel()])?;
    x_t.reshape(&[x.numel()])?
        .mul(&others_product(&flat, 0)?)?
        .sum()
}

/// The product along the wrapped `dim`.
#[differentiable(builtin, crate = "crate", name = "ProdBackward1")]
fn prod_dim(x: &Tensor, dim: usize, keepdim: bool) -> Result<Tensor> {
    let p = product_along(x, dim)?;
    if keepdim || x.ndim() == 0 {
        return Ok(p);
    }
    Ok(with_shape(p, &x.reduced_shape(&[dim])))
}

#[backward(prod_dim)]
fn prod_dim_backward(grad: &Tensor, x: &Tensor, dim: usize, keepdim: bool) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(grad.clone());
    }
    unreduce(grad, x.shape(), &[dim], keepdim)?
        .expand_to(x.shape())?
        .mul(&others_product(x, dim)?)
}

#[jvp(prod_dim)]
fn prod_dim_jvp(x_t: &Tensor, x: &Tensor, dim: usize, keepdim: bool) -> Result<Tensor> {
    if x.ndim() == 0 {
        return x_t.copy();
    }
    x_t.mul(&others_product(x, dim)?)?.sum_dims(&[dim], keepdim)
}

/// Running sums along the wrapped `dim`.
#[differentiable(builtin, crate = "crate", name = "CumsumBackward0")]
fn cumsum(x: &Tensor, dim: usize) -> Result<Tensor> {
    if x.ndim() == 0 || x.shape()[dim] <= 1 {
        return x.contiguous_data_owned();
    }
    let n = x.shape()[dim];
    let mut y = x.contiguous()?;
    let mut offset = 1;
    while offset < n {
        // y[i] += y[i - offset]
        let mut zeros_shape = x.shape().to_vec();
        zeros_shape[dim] = offset;
        let zeros = Tensor::filled(&zeros_shape, 0.0, x.dtype(), x.device())?;
        let shifted = Tensor::cat(&[zeros, y.narrow(dim, 0, n - offset)?], dim)?;
        y = y.add(&shifted)?;
        offset *= 2;
    }
    Ok(y)
}

#[backward(cumsum)]
fn cumsum_backward(grad: &Tensor, dim: usize) -> Result<Tensor> {
    if grad.ndim() == 0 {
        return Ok(grad.clone());
    }
    let d = [dim as isize];
    grad.flip(&d)?.cumsum(dim as isize)?.flip(&d)
}

#[jvp(cumsum)]
fn cumsum_jvp(x_t: &Tensor, dim: usize) -> Result<Tensor> {
    cumsum(x_t, dim)
}

/// `log Σ exp(x)` over the wrapped `axes`, shifted by the maximum for stability.
#[differentiable(builtin, crate = "crate", name = "LogsumexpBackward0")]
fn logsumexp(x: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    // Infinite maxima become the largest finite value: an all -inf slice gives -inf, a +inf
    // entry +inf (PyTorch's results), never inf - inf.
    let big = if x.dtype() == crate::DType::F32 {
        f64::from(f32::MAX)
    } else {
        f64::MAX
    };
    let m = amax_kept(x, &axes)?.clamp(Some(-big), Some(big))?;
    let s = x.sub(&m)?.exp()?.sum_dims(&axes, true)?.log()?.add(&m)?;
    if keepdim {
        Ok(s)
    } else {
        Ok(with_shape(s, &x.reduced_shape(&axes)))
    }
}

#[backward(logsumexp)]
fn logsumexp_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    let g = unreduce(grad, x.shape(), axes, keepdim)?;
    let r = unreduce(result, x.shape(), axes, keepdim)?;
    g.mul(&x.sub(&r)?.exp()?)
}

/// PyTorch's `logsumexp_jvp`: Σ ẋ · softmax(x), with `exp(x - result)` as the softmax.
#[jvp(logsumexp)]
fn logsumexp_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: Dims,
    keepdim: bool,
) -> Result<Tensor> {
    let r = unreduce(result, x.shape(), &axes, keepdim)?;
    x_t.mul(&x.sub(&r)?.exp()?)?.sum_dims(&axes, keepdim)
}

/// The `p`-norm over the wrapped `axes` (`p` finite, non-zero).
#[differentiable(builtin, crate = "crate", name = "LinalgVectorNormBackward0")]
fn norm(x: &Tensor, p: f64, axes: Dims, keepdim: bool) -> Result<Tensor> {
    if p == 2.0 {
        return x.mul(x)?.sum_dims(&axes, keepdim)?.sqrt();
    }
    if p == 1.0 {
        return x.abs()?.sum_dims(&axes, keepdim);
    }
    x.abs()?.pow(p)?.sum_dims(&axes, keepdim)?.pow(1.0 / p)
}

#[backward(norm)]
fn norm_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    p: f64,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    // PyTorch's `norm_backward`: grad · sgn(x) |x|^(p-1) / norm^(p-1), 0 where the norm is 0
    // (there every entry is 0: divided by 1 instead, the term is 0).
    let g = unreduce(grad, x.shape(), axes, keepdim)?;
    let r = nonzero_denominator(&unreduce(result, x.shape(), axes, keepdim)?)?;
    if p == 2.0 {
        return g.div(&r)?.mul(x);
    }
    // sgn(x) as a constant: its derivative is 0 everywhere it has one.
    let sgn = kernels::of_tensor(x)?.unary(UnaryOp::Sign, x)?;
    if p == 1.0 {
        return g.expand_to(x.shape())?.mul(&sgn);
    }
    g.div(&r.pow(p - 1.0)?)?
        .mul(&sgn.mul(&x.abs()?.pow(p - 1.0)?)?)
}

/// PyTorch's `norm_jvp`: Σ ẋ · sgn(x) |x|^(p-1) / norm^(p-1) (for p = 2: Σ ẋ x / norm), 0 where
/// the norm is 0.
#[jvp(norm)]
fn norm_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    p: f64,
    axes: Dims,
    keepdim: bool,
) -> Result<Tensor> {
    if p == 2.0 {
        return x_t
            .mul(x)?
            .sum_dims(&axes, keepdim)?
            .div(&nonzero_denominator(result)?);
    }
    let sgn = kernels::of_tensor(x)?.unary(UnaryOp::Sign, x)?;
    if p == 1.0 {
        return x_t.mul(&sgn)?.sum_dims(&axes, keepdim);
    }
    x_t.mul(&sgn.mul(&x.abs()?.pow(p - 1.0)?)?)?
        .sum_dims(&axes, keepdim)?
        .div(&nonzero_denominator(result)?.pow(p - 1.0)?)
}

/// `r` (a norm or a standard deviation, so `>= 0`) with its zeros replaced by 1: a denominator
/// whose quotient the caller multiplies by something that is 0 wherever `r` is. Exact where `r`
/// is positive (`r + 0`), unlike a clamp, which would change the gradient of results below the
/// clamp (a subnormal `f64` norm); the mask is a constant, so `r`'s own gradient passes.
fn nonzero_denominator(r: &Tensor) -> Result<Tensor> {
    let positive = MapOp::ClampInterior {
        lo: 0.0,
        hi: f64::INFINITY,
    };
    let zero = kernels::of_tensor(r)?.map(positive, r)?.rsub_scalar(1.0)?;
    r.add(&zero)
}

// ----- helpers of prod -------------------------------------------------------------------------

/// The product along `dim`, kept as size 1, by multiplying halves pairwise (not recorded when
/// called from a forward).
fn product_along(x: &Tensor, dim: usize) -> Result<Tensor> {
    if x.ndim() == 0 || x.shape()[dim] == 1 {
        // A new tensor, never a handle to (or view of) the input.
        return x.contiguous_data_owned();
    }
    let mut y = x.clone();
    if y.shape()[dim] == 0 {
        let shape = kept_shape(x.shape(), &[dim]);
        return Tensor::filled(&shape, 1.0, x.dtype(), x.device());
    }
    while y.shape()[dim] > 1 {
        let n = y.shape()[dim];
        let half = n / 2;
        let mut p = y.narrow(dim, 0, half)?.mul(&y.narrow(dim, half, half)?)?;
        if n % 2 == 1 {
            p = Tensor::cat(&[p, y.narrow(dim, n - 1, 1)?], dim)?;
        }
        y = p;
    }
    y.contiguous()
}

/// For each entry, the product of the other entries along `dim` (recorded: the gradient of
/// `prod`, differentiable again): exclusive prefix products times exclusive suffix products.
fn others_product(x: &Tensor, dim: usize) -> Result<Tensor> {
    let d = [dim as isize];
    let prefix = exclusive_cumprod(x, dim)?;
    let suffix = exclusive_cumprod(&x.flip(&d)?, dim)?.flip(&d)?;
    prefix.mul(&suffix)
}

/// `out[i] = x[0] · … · x[i-1]` along `dim` (a Hillis-Steele scan over a shifted copy).
fn exclusive_cumprod(x: &Tensor, dim: usize) -> Result<Tensor> {
    let n = x.shape()[dim];
    let ones = |k: usize| {
        let mut shape = x.shape().to_vec();
        shape[dim] = k;
        Tensor::filled(&shape, 1.0, x.dtype(), x.device())
    };
    if n == 0 {
        return Ok(x.clone());
    }
    let mut y = Tensor::cat(&[ones(1)?, x.narrow(dim, 0, n - 1)?], dim)?;
    let mut offset = 1;
    while offset < n {
        let shifted = Tensor::cat(&[ones(offset)?, y.narrow(dim, 0, n - offset)?], dim)?;
        y = y.mul(&shifted)?;
        offset *= 2;
    }
    Ok(y)
}

impl Tensor {
    /// `dims` wrapped and distinct; no dims: every dim (PyTorch's `dim=None`).
    fn reduction_axes(&self, dims: &[isize]) -> Result<Dims> {
        if dims.is_empty() {
            return Ok((0..self.ndim()).collect());
        }
        let axes = self.wrap_dims_unique(dims)?;
        if self.ndim() == 0 {
            return Ok(Dims::new());
        }
        Ok(axes)
    }

    /// The shape without `axes`.
    pub(super) fn reduced_shape(&self, axes: &[usize]) -> Vec<usize> {
        (self.shape().iter().enumerate())
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &n)| n)
            .collect()
    }

    fn mean_dims_wrapped(&self, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        mean_dims(self, axes.into(), keepdim)
    }

    /// `var` over wrapped `axes` (the forward of `var_dims` and `std_dims`, run unrecorded).
    fn var_axes(&self, axes: &[usize], correction: f64, keepdim: bool) -> Result<Tensor> {
        let n = reduced_count(self.shape(), axes) as f64;
        let dev = self.sub(&self.mean_dims_wrapped(axes, true)?)?;
        dev.mul(&dev)?
            .sum_dims(axes, keepdim)?
            .div_scalar((n - correction).max(0.0))
    }

    /// The mean over `dims` (all dims if empty), keeping them with size 1 if `keepdim`
    /// (PyTorch's `mean(dim, keepdim)`, `MeanBackward1`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.mean_dims(&[-1], false)?.to_vec::<f64>()?, vec![1.5, 3.5]);
    /// assert_eq!(t.mean_dims(&[0], true)?.shape(), &[1, 2]);
    /// assert_eq!(t.mean_dims(&[], false)?.item::<f64>()?, 2.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(crate::Error::InvalidArgument(format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        let axes = self.reduction_axes(dims)?;
        mean_dims(self, axes, keepdim)
    }

    /// The variance over `dims` (all if empty) with `correction` (PyTorch's default is 1:
    /// Bessel's correction; divides by `max(0, N - correction)`), as PyTorch's
    /// `var(dim, correction=, keepdim=)`, `VarBackward0`.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?;
    /// assert!((t.var_dims(&[], 1.0, false)?.item::<f64>()? - 5.0 / 3.0).abs() < 1e-15);
    /// assert_eq!(t.var_dims(&[0], 0.0, false)?.item::<f64>()?, 1.25);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn var_dims(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(crate::Error::InvalidArgument(
                "std and var only support floating point and complex dtypes".into(),
            ));
        }
        let axes = self.reduction_axes(dims)?;
        var_dims(self, axes, correction, keepdim)
    }

    /// The standard deviation over `dims` (all if empty) with `correction` (PyTorch's
    /// `std(dim, correction=, keepdim=)`, `StdBackward0`; the gradient is 0 where the result is
    /// 0, as PyTorch's).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 3.0], &[2])?;
    /// assert_eq!(t.std_dims(&[], 0.0, false)?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn std_dims(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(crate::Error::InvalidArgument(
                "std and var only support floating point and complex dtypes".into(),
            ));
        }
        let axes = self.reduction_axes(dims)?;
        std_dims(self, axes, correction, keepdim)
    }

    /// The product of all elements, a 0-dim tensor (PyTorch's `prod()`, `ProdBackward0`; the
    /// gradient is the product of the other elements, right with zeros among them).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 3.0], &[4])?.requires_grad_(true)?;
    /// let p = t.prod()?;
    /// assert_eq!(p.item::<f64>()?, 0.0);
    /// p.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 6.0, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn prod(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Prod, self, |x| x.prod());
        prod(self)
    }

    /// The product along `dim` (PyTorch's `prod(dim, keepdim)`, `ProdBackward1`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(t.prod_dim(1, false)?.to_vec::<f64>()?, vec![6.0, 120.0]);
    /// assert_eq!(t.prod_dim(-2, true)?.shape(), &[1, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn prod_dim(&self, dim: isize, keepdim: bool) -> Result<Tensor> {
        crate::amp::autocast_op!(Prod, self, |x| x.prod_dim(dim, keepdim));
        let d = wrap_dim(dim, self.ndim())?;
        prod_dim(self, d, keepdim)
    }

    /// Running sums along `dim` (PyTorch's `cumsum`, `CumsumBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.cumsum(1)?.to_vec::<f64>()?, vec![1.0, 3.0, 3.0, 7.0]);
    /// assert_eq!(t.cumsum(-2)?.to_vec::<f64>()?, vec![1.0, 2.0, 4.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        crate::amp::autocast_op!(Cumsum, self, |x| x.cumsum(dim));
        let d = wrap_dim(dim, self.ndim())?;
        cumsum(self, d)
    }

    /// `log Σ exp(x)` over `dims` (all if empty), computed stably (PyTorch's `logsumexp`,
    /// `LogsumexpBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim; [`Error::Shape`]
    /// for a reduced dim of size 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1000.0f64, 1000.0], &[2])?;
    /// let want = 1000.0 + 2f64.ln();
    /// assert!((t.logsumexp(&[0], false)?.item::<f64>()? - want).abs() < 1e-12);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn logsumexp(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        crate::amp::autocast_op!(Logsumexp, self, |x| x.logsumexp(dims, keepdim));
        let axes = self.reduction_axes(dims)?;
        if axes.iter().any(|&a| self.shape()[a] == 0) {
            return Err(Error::shape(
                "logsumexp",
                "cannot reduce over a dim of size 0",
            ));
        }
        logsumexp(self, axes, keepdim)
    }

    /// The 2-norm of all elements (PyTorch's `norm()`, `LinalgVectorNormBackward0`; the
    /// gradient is 0 where the norm is 0, as PyTorch's).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?;
    /// assert_eq!(t.norm()?.item::<f64>()?, 5.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn norm(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(VectorNorm, self, |x| x.norm());
        self.norm_dims(2.0, &[], false)
    }

    /// The `p`-norm `(Σ |x|^p)^(1/p)` over `dims` (all if empty), PyTorch's
    /// `norm(p, dim, keepdim)` (`linalg.vector_norm`), for finite non-zero `p`.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim; [`Error::Shape`]
    /// for `p` zero or infinite (not supported).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3.0f64, -4.0, 1.0, 1.0], &[2, 2])?;
    /// assert_eq!(t.norm_dims(1.0, &[1], false)?.to_vec::<f64>()?, vec![7.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn norm_dims(&self, p: f64, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        crate::amp::autocast_op!(VectorNorm, self, |x| x.norm_dims(p, dims, keepdim));
        if p == 0.0 || !p.is_finite() {
            return Err(Error::shape(
                "norm",
                format!("p = {p} is not supported (finite, non-zero p only)"),
            ));
        }
        let axes = self.reduction_axes(dims)?;
        norm(self, p, axes, keepdim)
    }

    /// The maximum over `dims` (all if empty), PyTorch's `amax(dim, keepdim)`
    /// (`AmaxBackward0`): the gradient is shared evenly among the entries equal to the maximum
    /// (unlike [`Tensor::max_dim`]'s, which goes to one index).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim; [`Error::Shape`]
    /// for a reduced dim of size 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 3.0, 3.0, 2.0], &[2, 2])?.requires_grad_(true)?;
    /// let m = t.amax(&[], false)?;
    /// assert_eq!(m.item::<f64>()?, 3.0);
    /// m.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 0.5, 0.5, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn amax(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let axes = self.extreme_axes("amax", dims)?;
        amax(self, axes, keepdim)
    }

    /// The minimum over `dims` (all if empty), PyTorch's `amin(dim, keepdim)`
    /// (`AminBackward0`), its gradient shared among ties as [`Tensor::amax`]'s.
    ///
    /// # Errors
    ///
    /// As [`Tensor::amax`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 3.0, 0.0, 2.0], &[2, 2])?;
    /// assert_eq!(t.amin(&[1], false)?.to_vec::<f64>()?, vec![1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn amin(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let axes = self.extreme_axes("amin", dims)?;
        amin(self, axes, keepdim)
    }

    fn extreme_axes(&self, op: &'static str, dims: &[isize]) -> Result<Dims> {
        let axes = self.reduction_axes(dims)?;
        if let Some(&a) = axes.iter().find(|&&a| self.shape()[a] == 0) {
            return Err(Error::size_mismatch(
                op,
                format!("{op}(): Expected reduction dim {a} to have non-zero size."),
            ));
        }
        Ok(axes)
    }
}
