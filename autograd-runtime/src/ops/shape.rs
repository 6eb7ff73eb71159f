//! Shape and data-movement ops: views (`reshape` where strides allow, `transpose`, `permute`,
//! `expand`, `narrow`, `chunk`/`split`), and copies (`copy`, `cat`, `stack`, `to_dtype`).

use autograd_macros::{backward, differentiable, jvp};
use smallvec::smallvec;

use super::derivative_rules::{Rule, Unary};
use crate::graph::InputMetadata;
use crate::layout::{Dims, Layout, contiguous_strides, wrap_dim};
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor};

// ----- the ops: views first, then copies ---------------------------------------------------------
// A view's forward returns a new handle aliasing its input's storage (`alias_with_layout`), so
// the recorded output stays a view of the input.

/// `reshape` of contiguous data with its view `strides`: PyTorch's `view`, `ViewBackward0`.
#[differentiable(builtin, crate = "crate", name = "ViewBackward0", rule = reshape_view)]
fn reshape(x: &Tensor, shape: &[usize], strides: Dims) -> Result<Tensor> {
    Ok(x.alias_with_layout(Layout {
        shape: shape.into(),
        strides,
        offset: x.layout().offset,
    }))
}

#[backward(reshape)]
fn reshape_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

// The tangent of a view is the same view of the input's tangent (PyTorch's `auto_linear` for
// view ops): a view of it, so that in-place ops on either side are seen by the other, whatever
// the tangent's layout (`reshape` copies only where no view of it describes the new shape).
#[jvp(reshape)]
fn reshape_jvp(x_t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    x_t.reshape(shape)
}

/// `reshape` of strided data that a view with `strides` describes: PyTorch's `_reshape_alias`,
/// `ReshapeAliasBackward0`.
#[differentiable(builtin, crate = "crate", name = "ReshapeAliasBackward0")]
fn reshape_alias(x: &Tensor, shape: &[usize], strides: Dims) -> Result<Tensor> {
    Ok(x.alias_with_layout(Layout {
        shape: shape.into(),
        strides,
        offset: x.layout().offset,
    }))
}

#[backward(reshape_alias)]
fn reshape_alias_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

#[jvp(reshape_alias)]
fn reshape_alias_jvp(x_t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    x_t.reshape(shape)
}

/// The new shape of the contiguous `x` as a tensor that is not a view of it: PyTorch's
/// `_unsafe_view`, `UnsafeViewBackward0`, which `reshape` applies to its copy of data no view
/// describes.
#[differentiable(builtin, crate = "crate", name = "UnsafeViewBackward0")]
pub(super) fn unsafe_view(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    Ok(Tensor::from_parts(
        crate::sync::Arc::clone(&x.0.storage),
        Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: x.layout().offset,
        },
    ))
}

#[backward(unsafe_view)]
fn unsafe_view_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

/// PyTorch's `_unsafe_view(self_t, size)`: not a view, like the result.
#[jvp(unsafe_view)]
fn unsafe_view_jvp(x_t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    unsafe_view(&x_t.contiguous()?, shape)
}

/// `d0`, `d1` are wrapped.
#[differentiable(builtin, crate = "crate", rule)]
fn transpose(x: &Tensor, d0: usize, d1: usize) -> Result<Tensor> {
    // A 0-dim tensor has no dims to swap (`d0 == d1 == 0`): the view keeps its layout.
    let layout = if x.ndim() == 0 {
        x.layout().clone()
    } else {
        x.layout().transpose(d0, d1)
    };
    Ok(x.alias_with_layout(layout))
}

#[backward(transpose)]
fn transpose_backward(grad: &Tensor, d0: usize, d1: usize) -> Result<Tensor> {
    grad.transpose(d0, d1)
}

#[jvp(transpose)]
fn transpose_jvp(x_t: &Tensor, d0: usize, d1: usize) -> Result<Tensor> {
    x_t.transpose(d0, d1)
}

/// `dims` is a validated permutation.
#[differentiable(builtin, crate = "crate", rule = permute_dims)]
fn permute(x: &Tensor, dims: Dims) -> Result<Tensor> {
    Ok(x.alias_with_layout(x.layout().permute(&dims)))
}

#[backward(permute)]
fn permute_backward(grad: &Tensor, dims: &Dims) -> Result<Tensor> {
    let mut inverse: Dims = smallvec![0; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inverse[d] = i;
    }
    grad.permute(&inverse)
}

#[jvp(permute)]
fn permute_jvp(x_t: &Tensor, dims: Dims) -> Result<Tensor> {
    x_t.permute(&dims)
}

#[differentiable(builtin, crate = "crate", rule)]
fn expand(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    Ok(x.alias_with_layout(x.layout().expand(shape)?))
}

#[backward(expand)]
fn expand_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.sum_to_shape(x.shape())
}

#[jvp(expand)]
fn expand_jvp(x_t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    x_t.expand(shape)
}

/// `narrow`, PyTorch's `SliceBackward0`.
#[differentiable(builtin, crate = "crate", name = "SliceBackward0", rule)]
fn narrow(x: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    x.narrow_view(dim, start, len)
}

#[backward(narrow)]
fn narrow_backward(grad: &Tensor, x: &InputMetadata, dim: usize, start: usize) -> Result<Tensor> {
    let dim = wrap_dim(dim as isize, x.shape().len())?;
    grad.narrow_scatter(x.shape(), dim, start)
}

#[jvp(narrow)]
fn narrow_jvp(x_t: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    x_t.narrow(dim, start, len)
}

/// Zeros of `shape` with `g` written at `start..` along `dim`: the gradient of `narrow`, whose
/// own gradient narrows again.
#[differentiable(builtin, crate = "crate", name = "SliceBackwardBackward0")]
fn narrow_scatter(g: &Tensor, shape: &[usize], dim: usize, start: usize) -> Result<Tensor> {
    kernels::of_tensor(g)?.narrow_scatter(g, shape, dim, start)
}

#[backward(narrow_scatter)]
fn narrow_scatter_backward(
    grad: &Tensor,
    g: &InputMetadata,
    dim: usize,
    start: usize,
) -> Result<Tensor> {
    grad.narrow(dim, start, g.shape()[dim])
}

#[jvp(narrow_scatter)]
fn narrow_scatter_jvp(g_t: &Tensor, shape: &[usize], dim: usize, start: usize) -> Result<Tensor> {
    narrow_scatter(g_t, shape, dim, start)
}

/// `select`: entry `index` of the (wrapped, in range) `dim`, that dim removed.
#[differentiable(builtin, crate = "crate", name = "SelectBackward0")]
fn select(x: &Tensor, dim: usize, index: usize) -> Result<Tensor> {
    let mut layout = x.layout().narrow(dim, index, 1);
    layout.shape.remove(dim);
    layout.strides.remove(dim);
    Ok(x.alias_with_layout(layout))
}

#[backward(select)]
fn select_backward(grad: &Tensor, x: &InputMetadata, dim: usize, index: usize) -> Result<Tensor> {
    let mut kept: Vec<usize> = x.shape().to_vec();
    kept[dim] = 1;
    grad.reshape(&kept)?.narrow_scatter(x.shape(), dim, index)
}

#[jvp(select)]
fn select_jvp(x_t: &Tensor, dim: usize, index: usize) -> Result<Tensor> {
    x_t.select(dim, index)
}

/// PyTorch's `clone()`, `CloneBackward0`.
#[differentiable(builtin, crate = "crate", name = "CloneBackward0", rule)]
fn copy(x: &Tensor) -> Result<Tensor> {
    x.contiguous_data_owned()
}

#[backward(copy)]
fn copy_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

#[jvp(copy)]
fn copy_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.copy()
}

/// `to(dtype)`, PyTorch's `ToCopyBackward0`.
#[differentiable(builtin, crate = "crate", name = "ToCopyBackward0", rule)]
fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    kernels::of_tensor(x)?.to_dtype(x, dtype)
}

#[backward(to_dtype)]
fn to_dtype_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.to_dtype(x.dtype())
}

/// PyTorch's `_to_copy(self_t)`: always a copy (a tangent may have the target dtype already).
#[jvp(to_dtype)]
fn to_dtype_jvp(x_t: &Tensor, dtype: DType) -> Result<Tensor> {
    if x_t.dtype() == dtype {
        return x_t.copy();
    }
    to_dtype(x_t, dtype)
}

impl Tensor {
    /// The elements with a new shape of the same number of elements, as PyTorch's `reshape`: a
    /// view whenever strides can describe the new shape over the same memory (always for
    /// contiguous data, `ViewBackward0`; for strided data where each new dim stays within a run
    /// of evenly strided old dims, `ReshapeAliasBackward0`), else a contiguous copy that is not a
    /// view (`UnsafeViewBackward0` over `CloneBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] if the element counts differ.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// let r = t.reshape(&[3, 2])?;
    /// assert!(r.is_view());
    /// assert_eq!(r.shape(), &[3, 2]);
    /// // A column is strided: reshaping it keeps the stride.
    /// let col = t.narrow(1, 1, 1)?.reshape(&[2])?;
    /// assert!(col.is_view());
    /// assert_eq!(col.strides(), &[3]);
    /// // The transpose read in order is no evenly strided run: a copy.
    /// let flat = t.transpose(0, 1)?.reshape(&[6])?;
    /// assert!(!flat.is_view());
    /// assert_eq!(flat.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if crate::layout::checked_numel("reshape", shape)? != self.numel() {
            return Err(Error::shape(
                "reshape",
                format!(
                    "shape '{shape:?}' is invalid for input of size {}",
                    self.numel()
                ),
            ));
        }
        // PyTorch's `reshape`: `view` of contiguous data (every tensor without elements is),
        // `_reshape_alias` of strided data a view describes, else `_unsafe_view` of a `clone`.
        let layout = self.layout();
        let out = if layout.has_contiguous_strides() {
            // The common case, without the general walk: contiguous view strides.
            reshape(self, shape, contiguous_strides(shape))?
        } else {
            match layout.view_strides(shape) {
                Some(strides) if self.is_contiguous() || self.numel() == 0 => {
                    reshape(self, shape, strides)?
                }
                Some(strides) => reshape_alias(self, shape, strides)?,
                None => return unsafe_view(&self.copy()?, shape),
            }
        };
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// PyTorch's `view` of a `shape` with as many elements whose strides exist (checked by the
    /// caller): always `ViewBackward0`.
    pub(crate) fn reshape_view_only(&self, shape: &[usize]) -> Result<Tensor> {
        let layout = self.layout();
        let strides = if layout.has_contiguous_strides() {
            contiguous_strides(shape)
        } else {
            layout
                .view_strides(shape)
                .ok_or_else(|| Error::shape("view", "no strides describe the view"))?
        };
        let out = reshape(self, shape, strides)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view with dims `d0` and `d1` swapped.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(t.transpose(0, 1)?.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn transpose(&self, d0: usize, d1: usize) -> Result<Tensor> {
        let (d0, d1) = (
            wrap_dim(d0 as isize, self.ndim())?,
            wrap_dim(d1 as isize, self.ndim())?,
        );
        let out = transpose(self, d0, d1)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view with dims reordered: result dim `i` is input dim `dims[i]`.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] unless `dims` is a permutation of `0..ndim`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3, 4], DType::F32)?;
    /// assert_eq!(t.permute(&[2, 0, 1])?.shape(), &[4, 2, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn permute(&self, dims: &[usize]) -> Result<Tensor> {
        let mut seen = vec![false; self.ndim()];
        if dims.len() != self.ndim()
            || dims
                .iter()
                .any(|&d| d >= self.ndim() || std::mem::replace(&mut seen[d], true))
        {
            return Err(Error::shape(
                "permute",
                format!(
                    "dims {dims:?} is not a permutation of the {} dims of the input",
                    self.ndim()
                ),
            ));
        }
        let out = permute(self, dims.into())?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view broadcasting this tensor to `shape` (size-1 and new leading dims repeat without
    /// copying).
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] if the shapes do not broadcast.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2, 1])?;
    /// assert_eq!(t.expand(&[2, 3])?.to_vec::<f32>()?, vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        let out = expand(self, shape)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// [`Tensor::expand`], or this tensor itself when it has `shape` already (gradient formulas:
    /// no view, no node).
    pub(crate) fn expand_to(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        self.expand(shape)
    }

    /// Same as [`Tensor::expand`] (NumPy's name).
    ///
    /// # Errors
    ///
    /// As [`Tensor::expand`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(1.0f32).broadcast_to(&[2])?.shape(), &[2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        self.expand(shape)
    }

    /// A view of `len` entries of `dim` starting at `start`.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`], or [`Error::Shape`] if the range exceeds the dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4])?;
    /// assert_eq!(t.narrow(0, 1, 2)?.to_vec::<f32>()?, vec![2.0, 3.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        let out = narrow(self, dim, start, len)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view of entry `index` of `dim`, without that dim (PyTorch's `select`, `x[i]` for
    /// `dim = 0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for a 0-dim tensor or an index past the dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    /// let col = t.select(1, 0)?;
    /// assert_eq!(col.to_vec::<f64>()?, vec![1.0, 3.0]);
    /// assert_eq!(col.grad_fn().unwrap().name(), "SelectBackward0");
    /// col.sum()?.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![1.0, 0.0, 1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape(
                "select",
                "select() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim as isize, self.ndim())?;
        if index >= self.shape()[d] {
            return Err(Error::shape(
                "select",
                format!(
                    "select(): index {index} out of range for tensor of size {:?} at dimension {d}",
                    self.shape()
                ),
            ));
        }
        let out = select(self, d, index)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    pub(super) fn narrow_view(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape(
                "narrow",
                "narrow() cannot be applied to a 0-dim tensor.",
            ));
        }
        let dim = wrap_dim(dim as isize, self.ndim())?;
        if start
            .checked_add(len)
            .is_none_or(|end| end > self.shape()[dim])
        {
            return Err(Error::shape(
                "narrow",
                format!(
                    "start ({start}) + length ({len}) exceeds dimension size ({}).",
                    self.shape()[dim]
                ),
            ));
        }
        Ok(self.alias_with_layout(self.layout().narrow(dim, start, len)))
    }

    /// Zeros of `shape` with `self` written at `start..` along `dim` (the gradient of `narrow`).
    fn narrow_scatter(&self, shape: &[usize], dim: usize, start: usize) -> Result<Tensor> {
        narrow_scatter(self, shape, dim, start)
    }

    /// A differentiable copy with its own storage (PyTorch's `clone()`; `Tensor::clone` is another
    /// handle to the same tensor).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f32).requires_grad_(true)?;
    /// let c = x.copy()?;
    /// assert_eq!(c.grad_fn().unwrap().name(), "CloneBackward0");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn copy(&self) -> Result<Tensor> {
        copy(self)
    }

    /// `self` if contiguous, else a differentiable contiguous copy.
    ///
    /// # Errors
    ///
    /// As [`Tensor::copy`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3], DType::F32)?.transpose(0, 1)?;
    /// assert!(t.contiguous()?.is_contiguous());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            Ok(self.clone())
        } else {
            self.copy()
        }
    }

    /// A conversion to `dtype` (`self` if it already has it) with PyTorch's cast rules: float to
    /// integer truncates toward zero, anything to bool is "not zero", `f32` to a half type
    /// rounds to nearest even. Differentiable between floating dtypes (`ToCopyBackward0`: the
    /// gradient comes back in the input's dtype); a conversion to an integer or bool dtype is
    /// not recorded (its result never requires grad).
    ///
    /// # Errors
    ///
    /// [`Error::NotImplementedForDType`](crate::Error::NotImplementedForDType) for a dtype the
    /// tensor's device has no buffers of (integer, bool and half tensors are host-only on CUDA
    /// in this build).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::scalar(1.5f32).to_dtype(DType::F64)?.item::<f64>()?, 1.5);
    /// let x = Tensor::from_vec(vec![-1.7f32, 0.0, 300.0], &[3])?;
    /// assert_eq!(x.to_dtype(DType::I64)?.to_vec::<i64>()?, vec![-1, 0, 300]);
    /// assert_eq!(x.to_dtype(DType::U8)?.to_vec::<u8>()?, vec![255, 0, 44]);
    /// assert_eq!(x.to_dtype(DType::Bool)?.to_vec::<bool>()?, vec![true, false, true]);
    /// let h = x.to_dtype(DType::BF16)?;
    /// assert_eq!(h.to_vec::<autograd_runtime::bf16>()?[2].to_f32(), 300.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        if !dtype.is_floating_point() {
            // An integer or bool result never requires grad: not recorded, as in PyTorch.
            return self.promoted_to(dtype);
        }
        to_dtype(self, dtype)
    }

    /// A contiguous copy of the data with no autograd history.
    pub(crate) fn contiguous_data_owned(&self) -> Result<Tensor> {
        // An expanded view may stand for far more elements than its storage holds.
        crate::layout::check_alloc("contiguous", self.numel(), self.dtype().size_of())?;
        kernels::of_tensor(self)?.contiguous(self)
    }
}

// ----- derivative rules for `#[differentiable(derive)]` (see `derivative_rules.rs`) -------------

/// The rules of the view methods that are not an op's declaration: `reshape` is one of three
/// ops, whose gradients are all the gradient reshaped back (the view op's rule, `reshape_view`,
/// takes the view's strides too), `permute` takes its dims as written (the op's rule,
/// `permute_dims`, takes them validated), `broadcast_to` is `expand`, and `contiguous` is a copy.
#[doc(hidden)]
#[allow(non_upper_case_globals, clippy::type_complexity)]
impl super::DerivativeRules {
    pub const reshape: Rule<fn(&Tensor, &Tensor, &Tensor, &[usize]) -> Result<Tensor>> = Rule {
        reads: Self::reshape_view.reads,
        apply: |grad, x, result, shape| {
            (Self::reshape_view.apply)(grad, x, result, shape, Dims::new())
        },
    };
    pub const permute: Rule<fn(&Tensor, &Tensor, &Tensor, &[usize]) -> Result<Tensor>> = Rule {
        reads: Self::permute_dims.reads,
        apply: |grad, x, result, dims| (Self::permute_dims.apply)(grad, x, result, dims.into()),
    };
    pub const broadcast_to: Rule<fn(&Tensor, &Tensor, &Tensor, &[usize]) -> Result<Tensor>> =
        Self::expand;
    pub const contiguous: Rule<Unary> = Self::copy;
}
