//! Views that add, remove, merge or split dims: `unsqueeze`, `squeeze` (all size-1 dims, one,
//! or a list), `flatten`, `unflatten`, `t`, and `view`/`reshape_infer` (shapes with PyTorch's
//! `-1`). Each is a real view (autograd view tracking as `transpose`'s), except `flatten` and
//! `reshape_infer` of data no view describes, which copy as `reshape` does.
//!
//! Dims are `isize` here, so negative dims count from the end as in PyTorch (`unsqueeze(-1)`).
//! Rust has no overloads; PyTorch's `squeeze()`, `squeeze(dim)` and `squeeze(dims)` are
//! `squeeze`, `squeeze_dim` and `squeeze_dims`, with its node names (`SqueezeBackward0/1/2`).

use autograd_macros::{backward, differentiable, jvp};

use crate::graph::InputMetadata;
use crate::layout::{Dims, Layout, wrap_dim};
use crate::{Error, Result, Tensor};

// ----- the ops ----------------------------------------------------------------------------------

/// `dim` is wrapped against `ndim + 1`.
#[differentiable(builtin, crate = "crate", name = "UnsqueezeBackward0")]
fn unsqueeze(x: &Tensor, dim: usize) -> Result<Tensor> {
    let l = x.layout();
    // PyTorch's stride for the new dim: the extent of the dim it goes in front of.
    let stride = if dim >= l.shape.len() {
        1
    } else {
        l.shape[dim] * l.strides[dim]
    };
    let mut layout = l.clone();
    layout.shape.insert(dim, 1);
    layout.strides.insert(dim, stride);
    Ok(x.alias_with_layout(layout))
}

#[backward(unsqueeze)]
fn unsqueeze_backward(grad: &Tensor, dim: usize) -> Result<Tensor> {
    grad.squeeze_dim(dim as isize)
}

// Each view's tangent is the same view of the input's tangent (see `shape.rs`).
#[jvp(unsqueeze)]
fn unsqueeze_jvp(x_t: &Tensor, dim: usize) -> Result<Tensor> {
    super::tangent_view(unsqueeze(x_t, dim), x_t)
}

/// The layout of `x` without the size-1 dims among `dims` (wrapped; others stay).
fn squeezed(x: &Tensor, dims: &[usize]) -> Tensor {
    let l = x.layout();
    let mut layout = Layout {
        shape: Dims::new(),
        strides: Dims::new(),
        offset: l.offset,
    };
    for (i, (&n, &s)) in l.shape.iter().zip(&l.strides).enumerate() {
        if n != 1 || !dims.contains(&i) {
            layout.shape.push(n);
            layout.strides.push(s);
        }
    }
    x.alias_with_layout(layout)
}

/// `squeeze()`: every size-1 dim removed.
#[differentiable(builtin, crate = "crate", name = "SqueezeBackward0")]
fn squeeze(x: &Tensor) -> Result<Tensor> {
    let all: Dims = (0..x.ndim()).collect();
    Ok(squeezed(x, &all))
}

#[backward(squeeze)]
fn squeeze_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

#[jvp(squeeze)]
fn squeeze_jvp(x_t: &Tensor) -> Result<Tensor> {
    super::tangent_view(squeeze(x_t), x_t)
}

/// `squeeze(dim)`; `dim` is wrapped.
#[differentiable(builtin, crate = "crate", name = "SqueezeBackward1")]
fn squeeze_dim(x: &Tensor, dim: usize) -> Result<Tensor> {
    Ok(squeezed(x, &[dim]))
}

#[backward(squeeze_dim)]
fn squeeze_dim_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

#[jvp(squeeze_dim)]
fn squeeze_dim_jvp(x_t: &Tensor, dim: usize) -> Result<Tensor> {
    super::tangent_view(squeeze_dim(x_t, dim), x_t)
}

/// `squeeze(dims)`; `dims` are wrapped and distinct.
#[differentiable(builtin, crate = "crate", name = "SqueezeBackward2")]
fn squeeze_dims(x: &Tensor, dims: Dims) -> Result<Tensor> {
    Ok(squeezed(x, &dims))
}

#[backward(squeeze_dims)]
fn squeeze_dims_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

#[jvp(squeeze_dims)]
fn squeeze_dims_jvp(x_t: &Tensor, dims: Dims) -> Result<Tensor> {
    super::tangent_view(squeeze_dims(x_t, dims), x_t)
}

/// `t()` of a tensor with at most 2 dims.
#[differentiable(builtin, crate = "crate", name = "TBackward0")]
fn t(x: &Tensor) -> Result<Tensor> {
    let layout = if x.ndim() == 2 {
        x.layout().transpose(0, 1)
    } else {
        x.layout().clone()
    };
    Ok(x.alias_with_layout(layout))
}

#[backward(t)]
fn t_backward(grad: &Tensor) -> Result<Tensor> {
    grad.t()
}

#[jvp(t)]
fn t_jvp(x_t: &Tensor) -> Result<Tensor> {
    super::tangent_view(t(x_t), x_t)
}

// ----- shapes with `-1` -------------------------------------------------------------------------

/// PyTorch's `infer_size`: `spec` with its one `-1` entry replaced by what makes `numel`
/// elements, with PyTorch's errors.
pub(crate) fn infer_size(spec: &[isize], numel: usize) -> Result<Vec<usize>> {
    let mut inferred = None;
    let mut known = 1usize;
    for (i, &d) in spec.iter().enumerate() {
        if d == -1 {
            if inferred.is_some() {
                return Err(Error::size_mismatch(
                    "view",
                    "only one dimension can be inferred",
                ));
            }
            inferred = Some(i);
        } else if d < 0 {
            return Err(Error::size_mismatch(
                "view",
                format!("invalid shape dimension {d} at index {i} of shape {spec:?}"),
            ));
        } else {
            known = known.checked_mul(d as usize).ok_or_else(|| {
                Error::size_mismatch(
                    "view",
                    format!("shape '{spec:?}' is invalid for input of size {numel}"),
                )
            })?;
        }
    }
    let invalid = || {
        Error::size_mismatch(
            "view",
            format!("shape '{spec:?}' is invalid for input of size {numel}"),
        )
    };
    let mut shape: Vec<usize> = spec.iter().map(|&d| d.max(0) as usize).collect();
    match inferred {
        Some(i) => {
            if known == 0 {
                if numel == 0 {
                    return Err(Error::size_mismatch(
                        "view",
                        format!(
                            "cannot reshape tensor of 0 elements into shape {spec:?} because the \
                             unspecified dimension size -1 can be any value and is ambiguous"
                        ),
                    ));
                }
                return Err(invalid());
            }
            if !numel.is_multiple_of(known) {
                return Err(invalid());
            }
            shape[i] = numel / known;
        }
        None if known != numel => return Err(invalid()),
        None => {}
    }
    Ok(shape)
}

impl Tensor {
    /// A view with a new dim of size 1 at `dim` (negative counts from the end, in the result's
    /// `ndim + 1` dims), as PyTorch's `unsqueeze` (`UnsqueezeBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`] outside `[-ndim - 1, ndim]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    /// assert_eq!(t.unsqueeze(0)?.shape(), &[1, 3]);
    /// let col = t.unsqueeze(-1)?;
    /// assert_eq!(col.shape(), &[3, 1]);
    /// assert!(col.is_view());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let out = unsqueeze(self, d)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view without the dims of size 1 (PyTorch's `squeeze()`, `SqueezeBackward0`).
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[1, 3, 1, 2], DType::F32)?;
    /// assert_eq!(t.squeeze()?.shape(), &[3, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn squeeze(&self) -> Result<Tensor> {
        let out = squeeze(self)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view without `dim` if its size is 1, else a view of the same shape (PyTorch's
    /// `squeeze(dim)`, `SqueezeBackward1`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[1, 3, 1], DType::F32)?;
    /// assert_eq!(t.squeeze_dim(-1)?.shape(), &[1, 3]);
    /// assert_eq!(t.squeeze_dim(1)?.shape(), &[1, 3, 1]); // size 3: kept
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn squeeze_dim(&self, dim: isize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        let out = squeeze_dim(self, d)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// A view without those of `dims` whose size is 1 (PyTorch's `squeeze(dims)`,
    /// `SqueezeBackward2`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a repeated dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[1, 3, 1], DType::F32)?;
    /// assert_eq!(t.squeeze_dims(&[0, -1])?.shape(), &[3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn squeeze_dims(&self, dims: &[isize]) -> Result<Tensor> {
        let dims = self.wrap_dims_unique(dims)?;
        let out = squeeze_dims(self, dims)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// `dims` wrapped, each at most once (PyTorch's `dim_list_to_bitset`).
    pub(crate) fn wrap_dims_unique(&self, dims: &[isize]) -> Result<Dims> {
        let mut out = Dims::with_capacity(dims.len());
        for &d in dims {
            let w = wrap_dim(d, self.ndim())?;
            if out.contains(&w) {
                return Err(Error::size_mismatch(
                    "dims",
                    format!("dim {w} appears multiple times in the list of dims"),
                ));
            }
            out.push(w);
        }
        Ok(out)
    }

    /// The transpose of a matrix; a tensor with fewer dims is returned as a view of itself
    /// (PyTorch's `t()`, `TBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] for more than 2 dims, with PyTorch's text.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let m = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(m.t()?.shape(), &[3, 2]);
    /// assert_eq!(m.t()?.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn t(&self) -> Result<Tensor> {
        if self.ndim() > 2 {
            return Err(Error::size_mismatch(
                "t",
                format!(
                    "t() expects a tensor with <= 2 dimensions, but self is {}D",
                    self.ndim()
                ),
            ));
        }
        let out = t(self)?;
        out.set_view_creation(self, false);
        Ok(out)
    }

    /// PyTorch's `view`: a view with `shape` (one entry may be `-1`, inferred), which must be
    /// describable by strides over this tensor's memory (always for contiguous data);
    /// `ViewBackward0`. Use [`Tensor::reshape_infer`] to copy when it is not.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] with PyTorch's texts: `only one dimension can be inferred`,
    /// `shape '[4, -1]' is invalid for input of size 6`, and `view size is not compatible with
    /// input tensor's size and stride ...` for data no view describes.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// let v = t.view(&[-1, 2])?;
    /// assert_eq!(v.shape(), &[3, 2]);
    /// assert!(v.is_view());
    /// let err = t.t()?.view(&[6]).unwrap_err();
    /// assert!(err.to_string().starts_with("view size is not compatible"));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        let shape = infer_size(shape, self.numel())?;
        if self.layout().view_strides(&shape).is_none() {
            return Err(Error::size_mismatch(
                "view",
                "view size is not compatible with input tensor's size and stride (at least one \
                 dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            ));
        }
        self.reshape_view_only(&shape)
    }

    /// `reshape` with PyTorch's `-1`: one entry of `shape` may be `-1`, inferred from the
    /// number of elements; otherwise as [`Tensor::reshape`] (a view where strides allow, else
    /// a copy).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] with PyTorch's texts (`only one dimension can be inferred`,
    /// `shape '[-1, 4]' is invalid for input of size 6`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    /// assert_eq!(t.reshape_infer(&[-1, 2])?.shape(), &[3, 2]);
    /// assert_eq!(
    ///     t.reshape_infer(&[-1, 4]).unwrap_err().to_string(),
    ///     "shape '[-1, 4]' is invalid for input of size 6"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn reshape_infer(&self, shape: &[isize]) -> Result<Tensor> {
        let shape = infer_size(shape, self.numel())?;
        self.reshape(&shape)
    }

    /// Dims `start_dim..=end_dim` merged into one (PyTorch's `flatten`): a view where strides
    /// allow, else a copy, as [`Tensor::reshape`]; this tensor itself when
    /// `start_dim == end_dim`; a 0-dim tensor becomes 1-D.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] when `start_dim` comes after `end_dim`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3, 4], DType::F32)?;
    /// assert_eq!(t.flatten(0, -1)?.shape(), &[24]);
    /// assert_eq!(t.flatten(1, 2)?.shape(), &[2, 12]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<Tensor> {
        let (s, e) = (
            wrap_dim(start_dim, self.ndim())?,
            wrap_dim(end_dim, self.ndim())?,
        );
        if s > e {
            return Err(Error::size_mismatch(
                "flatten",
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        if s == e {
            return Ok(self.clone());
        }
        let shape = self.shape();
        let mut out: Vec<usize> = shape[..s].to_vec();
        out.push(shape[s..=e].iter().product());
        out.extend_from_slice(&shape[e + 1..]);
        self.reshape(&out)
    }

    /// Dim `dim` split into `sizes` (one may be `-1`), a view (PyTorch's `unflatten`,
    /// `ViewBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] when the sizes do not multiply to the
    /// dim's size, with PyTorch's text.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 6], DType::F32)?;
    /// assert_eq!(t.unflatten(1, &[3, -1])?.shape(), &[2, 3, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn unflatten(&self, dim: isize, sizes: &[isize]) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::size_mismatch(
                "unflatten",
                format!("Dimension specified as {dim} but tensor has no dimensions"),
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if sizes.is_empty() {
            return Err(Error::size_mismatch(
                "unflatten",
                "unflatten: sizes must be non-empty",
            ));
        }
        let n = self.shape()[d];
        let parts = infer_size(sizes, n).map_err(|e| match e {
            Error::SizeMismatch { message, .. } if message.starts_with("shape '") => {
                Error::size_mismatch(
                    "unflatten",
                    format!(
                        "unflatten: Provided sizes {sizes:?} don't multiply up to the size of \
                         dim {d} ({n}) in the input tensor"
                    ),
                )
            }
            Error::SizeMismatch { message, .. } => Error::size_mismatch(
                "unflatten",
                format!("unflatten got an unexpected error:\n{message}"),
            ),
            e => e,
        })?;
        let mut shape: Vec<usize> = self.shape()[..d].to_vec();
        shape.extend(parts);
        shape.extend_from_slice(&self.shape()[d + 1..]);
        self.reshape_view_only(&shape)
    }

    /// Same as `self.expand(other.shape())` (PyTorch's `expand_as`, `ExpandBackward0`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::expand`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[3], DType::F32)?;
    /// let big = Tensor::zeros(&[2, 3], DType::F32)?;
    /// assert_eq!(t.expand_as(&big)?.shape(), &[2, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.expand(other.shape())
    }
}
