//! Index ops that take PyTorch's integer index tensors: `gather`, `scatter` (tensor and value),
//! `scatter_add`, `index_add`, `index_select_tensor`, `masked_select`, `masked_scatter`,
//! `nonzero`.
//!
//! Each public method checks its index tensor as PyTorch does (dtype `int64` or `int32`, its
//! shape, every value in range, with PyTorch's error texts) and turns it into flat positions in
//! the C order of the tensor it reads or writes. Two kernels then do all the work: reading at
//! positions is `index_select` on the flattened tensor (every dtype; on CUDA too), writing is
//! the backend's `put` (every dtype, on the host; CUDA refuses it with a clear error). The
//! nodes keep the positions ([`SavedIndices`]), as PyTorch's keep the index tensor, and their
//! gradients are the same ops again, so double backward works: `gather`'s gradient adds into
//! zeros at the positions (repeated indices sum), and that op's gradient gathers.

use autograd_macros::{backward, differentiable, jvp};
use smallvec::smallvec;

use super::Scalar;
use super::scatter_checks::*;
use crate::backend::{BinaryOp, broadcast_shapes};
use crate::graph::{InputMetadata, SavedIndices};
use crate::layout::{Layout, contiguous_strides, wrap_dim};
use crate::sync::Arc;
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor};

// ----- the two kernels, on flat positions ---------------------------------------------------------

/// `x`'s elements at `flat` (positions in its C order), laid out as `shape`.
fn take(x: &Tensor, shape: &[usize], flat: &[usize]) -> Result<Tensor> {
    let k = kernels::of_tensor(x)?;
    let x = if x.layout().is_contiguous() {
        x.clone()
    } else {
        k.contiguous(x)?
    };
    let line = Layout {
        shape: smallvec![x.numel()],
        strides: smallvec![1],
        offset: x.layout().offset,
    };
    let line = Tensor::from_parts(Arc::clone(&x.0.storage), line);
    let picked = k.index_select(&line, 0, flat)?;
    Ok(Tensor::from_parts(
        Arc::clone(&picked.0.storage),
        Layout::contiguous(shape),
    ))
}

/// Zeros of `shape` (in `g`'s dtype and device) with `g`'s elements added at `flat`.
fn add_into_zeros(g: &Tensor, shape: &[usize], flat: &[usize]) -> Result<Tensor> {
    let zeros = Tensor::filled(shape, 0.0, g.dtype(), g.device())?;
    kernels::of_tensor(g)?.put(&zeros, g, flat, true)
}

// ----- the differentiable ops --------------------------------------------------------------------

#[differentiable(builtin, crate = "crate", name = "GatherBackward0")]
fn gather_at(x: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    take(x, shape, &flat.get()?)
}

#[backward(gather_at)]
fn gather_at_backward(grad: &Tensor, x: &InputMetadata, flat: &SavedIndices) -> Result<Tensor> {
    scatter_add_zeros(grad, x.shape(), flat)
}

// Every op here is linear in its tensor inputs (jointly, for the writes): its tangent is the
// same op on the tangents, an absent one as zeros (PyTorch's `scatter(self_t, dim, index,
// src_t)` and so on).
#[jvp(gather_at)]
fn gather_at_jvp(x_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    gather_at(x_t, shape, flat)
}

/// Zeros of `shape` with `g` added at the positions: the gradient of `gather` and
/// `masked_select` (PyTorch's `new_zeros(..).scatter_add_(..)`, hence its node's name).
#[differentiable(builtin, crate = "crate", name = "ScatterAddBackward0")]
fn scatter_add_zeros(g: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    add_into_zeros(g, shape, &flat.get()?)
}

#[backward(scatter_add_zeros)]
fn scatter_add_zeros_backward(
    grad: &Tensor,
    g: &InputMetadata,
    flat: &SavedIndices,
) -> Result<Tensor> {
    gather_at(grad, g.shape(), flat)
}

#[jvp(scatter_add_zeros)]
fn scatter_add_zeros_jvp(g_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    scatter_add_zeros(g_t, shape, flat)
}

#[differentiable(builtin, crate = "crate", name = "MaskedSelectBackward0")]
fn masked_select_at(x: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    take(x, shape, &flat.get()?)
}

#[backward(masked_select_at)]
fn masked_select_at_backward(
    grad: &Tensor,
    x: &InputMetadata,
    flat: &SavedIndices,
) -> Result<Tensor> {
    scatter_add_zeros(grad, x.shape(), flat)
}

#[jvp(masked_select_at)]
fn masked_select_at_jvp(x_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    masked_select_at(x_t, shape, flat)
}

#[differentiable(builtin, crate = "crate", name = "ScatterBackward0")]
fn scatter_src(x: &Tensor, src: &Tensor, flat: &SavedIndices) -> Result<Tensor> {
    kernels::of_tensor(x)?.put(x, src, &flat.get()?, false)
}

#[backward(scatter_src)]
fn scatter_src_backward(
    grad: &Tensor,
    src: &InputMetadata,
    flat: &SavedIndices,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    put_backward(grad, src.shape(), flat, needs_input_grad)
}

#[jvp(scatter_src)]
fn scatter_src_jvp(
    x_t: Option<&Tensor>,
    src_t: Option<&Tensor>,
    x: &Tensor,
    src: &Tensor,
    flat: &SavedIndices,
) -> Result<Tensor> {
    let (x_t, src_t) = super::tangent_pair(x_t, src_t, x, src)?;
    scatter_src(&x_t, &src_t, flat)
}

/// The gradients of a write of `source` at `flat` (`scatter` with a source, `masked_scatter`):
/// PyTorch's `grad.scatter(dim, index, 0)` for the target and `grad.gather(dim, index)` for the
/// source (every repeat of a position gets the gradient, though only the last write survived).
fn put_backward(
    grad: &Tensor,
    source_shape: &[usize],
    flat: &SavedIndices,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let gx = if needs_input_grad[0] {
        Some(scatter_value(grad, flat, Scalar::Float(0.0))?)
    } else {
        None
    };
    let gs = if needs_input_grad[1] {
        Some(gather_at(grad, source_shape, flat)?)
    } else {
        None
    };
    Ok((gx, gs))
}

#[differentiable(builtin, crate = "crate", name = "ScatterBackward1")]
fn scatter_value(x: &Tensor, flat: &SavedIndices, value: Scalar) -> Result<Tensor> {
    let flat = flat.get()?;
    let fill = Tensor::filled_scalar(&[flat.len()], value, x.dtype(), x.device())?;
    kernels::of_tensor(x)?.put(x, &fill, &flat, false)
}

#[backward(scatter_value)]
fn scatter_value_backward(grad: &Tensor, flat: &SavedIndices) -> Result<Tensor> {
    scatter_value(grad, flat, Scalar::Float(0.0))
}

/// The written entries are constants: PyTorch's `self_t.scatter(dim, index, 0)`.
#[jvp(scatter_value)]
fn scatter_value_jvp(x_t: &Tensor, flat: &SavedIndices) -> Result<Tensor> {
    scatter_value(x_t, flat, Scalar::Float(0.0))
}

#[differentiable(builtin, crate = "crate", name = "ScatterAddBackward0")]
fn scatter_add_src(x: &Tensor, src: &Tensor, flat: &SavedIndices) -> Result<Tensor> {
    kernels::of_tensor(x)?.put(x, src, &flat.get()?, true)
}

#[backward(scatter_add_src)]
fn scatter_add_src_backward(
    grad: &Tensor,
    src: &InputMetadata,
    flat: &SavedIndices,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let gx = needs_input_grad[0].then(|| grad.clone());
    let gs = if needs_input_grad[1] {
        Some(gather_at(grad, src.shape(), flat)?)
    } else {
        None
    };
    Ok((gx, gs))
}

#[jvp(scatter_add_src)]
fn scatter_add_src_jvp(
    x_t: Option<&Tensor>,
    src_t: Option<&Tensor>,
    x: &Tensor,
    src: &Tensor,
    flat: &SavedIndices,
) -> Result<Tensor> {
    let (x_t, src_t) = super::tangent_pair(x_t, src_t, x, src)?;
    scatter_add_src(&x_t, &src_t, flat)
}

/// `x` with `alpha * source` added at the positions; `alpha` is already in `x`'s category
/// (truncated for an integer tensor, as PyTorch's, and exact there).
#[differentiable(builtin, crate = "crate", name = "IndexAddBackward0")]
fn index_add_src(
    x: &Tensor,
    source: &Tensor,
    flat: &SavedIndices,
    alpha: Scalar,
) -> Result<Tensor> {
    let k = kernels::of_tensor(x)?;
    if alpha.to_f64() == 1.0 {
        return k.put(x, source, &flat.get()?, true);
    }
    let scaled = if source.dtype().is_floating_point() {
        k.binary_scalar(BinaryOp::Mul, source, alpha.to_f64(), false)?
    } else {
        let alpha = Tensor::filled_scalar(&[], alpha, source.dtype(), source.device())?;
        source.binary_kernel(BinaryOp::Mul, "index_add", &alpha)?
    };
    k.put(x, &scaled, &flat.get()?, true)
}

#[backward(index_add_src)]
fn index_add_src_backward(
    grad: &Tensor,
    source: &InputMetadata,
    flat: &SavedIndices,
    alpha: Scalar,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let gx = needs_input_grad[0].then(|| grad.clone());
    let gs = if needs_input_grad[1] {
        let g = gather_at(grad, source.shape(), flat)?;
        Some(if alpha.to_f64() == 1.0 {
            g
        } else {
            g.mul_scalar(alpha)?
        })
    } else {
        None
    };
    Ok((gx, gs))
}

#[jvp(index_add_src)]
fn index_add_src_jvp(
    x_t: Option<&Tensor>,
    source_t: Option<&Tensor>,
    x: &Tensor,
    source: &Tensor,
    flat: &SavedIndices,
    alpha: Scalar,
) -> Result<Tensor> {
    let (x_t, source_t) = super::tangent_pair(x_t, source_t, x, source)?;
    index_add_src(&x_t, &source_t, flat, alpha)
}

#[differentiable(builtin, crate = "crate", name = "MaskedScatterBackward0")]
fn masked_scatter_at(x: &Tensor, source: &Tensor, flat: &SavedIndices) -> Result<Tensor> {
    kernels::of_tensor(x)?.put(x, source, &flat.get()?, false)
}

#[backward(masked_scatter_at)]
fn masked_scatter_at_backward(
    grad: &Tensor,
    source: &InputMetadata,
    flat: &SavedIndices,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    put_backward(grad, source.shape(), flat, needs_input_grad)
}

#[jvp(masked_scatter_at)]
fn masked_scatter_at_jvp(
    x_t: Option<&Tensor>,
    source_t: Option<&Tensor>,
    x: &Tensor,
    source: &Tensor,
    flat: &SavedIndices,
) -> Result<Tensor> {
    let (x_t, source_t) = super::tangent_pair(x_t, source_t, x, source)?;
    masked_scatter_at(&x_t, &source_t, flat)
}

impl Tensor {
    /// PyTorch's `gather(dim, index)`: `out[i][j] = self[index[i][j]][j]` for `dim == 0`
    /// (likewise along any dim), shaped as `index`, an `I64` or `I32` tensor with this tensor's
    /// number of dims and no larger than it along the other dims. Every dtype. Differentiable
    /// (`GatherBackward0`): the gradient adds into zeros at the indices, so repeated indices sum.
    /// `dim` may be negative.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::InvalidArgument`] in PyTorch's words for an index
    /// of another dtype, of another number of dims, too large, or holding a value out of range
    /// (`"index 5 is out of bounds for dimension 1 with size 3"`; negative values are refused
    /// the same way).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    /// let index = Tensor::from_vec(vec![0i64, 0, 1, 0], &[2, 2])?;
    /// let y = x.gather(1, &index)?;
    /// assert_eq!(y.to_vec::<f64>()?, vec![1.0, 1.0, 4.0, 3.0]);
    /// y.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 0.0, 1.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn gather(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        let dim = wrap_dim(dim, self.ndim().max(1))?;
        let flat = positions_along_dim(self, dim, index, AlongDim::Gather)?;
        gather_at(self, index.shape(), &SavedIndices::new(&flat))
    }

    /// PyTorch's `scatter(dim, index, src)`: a copy of this tensor with
    /// `out[index[i][j]][j] = src[i][j]` for `dim == 0` (likewise along any dim), `src` of this
    /// tensor's dtype and at least `index`'s size along every dim (only the part `index` covers
    /// is read). With repeated indices the last write wins, as on PyTorch's CPU. Every dtype.
    /// Differentiable in both (`ScatterBackward0`: the overwritten elements get no gradient,
    /// `src` gets the gradient gathered at the indices).
    ///
    /// # Errors
    ///
    /// As [`Tensor::gather`] (`"scatter(): ..."`), and `"scatter(): Expected self.dtype to be
    /// equal to src.dtype"`; on CUDA, not implemented (host only).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::zeros(&[2, 3], DType::F32)?;
    /// let index = Tensor::from_vec(vec![2i64, 0], &[2, 1])?;
    /// let src = Tensor::from_vec(vec![7.0f32, 8.0], &[2, 1])?;
    /// let y = x.scatter(1, &index, &src)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![0.0, 0.0, 7.0, 8.0, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let (flat, src) = self.scatter_args(dim, index, src)?;
        scatter_src(self, &src, &SavedIndices::new(&flat))
    }

    /// PyTorch's `scatter(dim, index, value)`: a copy of this tensor with `value` (cast to its
    /// dtype: truncated for an integer tensor) written at the indices. Differentiable in this
    /// tensor (`ScatterBackward1`: no gradient where the value was written).
    ///
    /// # Errors
    ///
    /// As [`Tensor::scatter`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let one_hot = Tensor::zeros(&[3, 4], DType::F32)?
    ///     .scatter_value(1, &Tensor::from_vec(vec![3i64, 0, 1], &[3, 1])?, 1.0)?;
    /// assert_eq!(one_hot.to_vec::<f32>()?, vec![0., 0., 0., 1., 1., 0., 0., 0., 0., 1., 0., 0.]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scatter_value(
        &self,
        dim: isize,
        index: &Tensor,
        value: impl Into<Scalar>,
    ) -> Result<Tensor> {
        let dim = wrap_dim(dim, self.ndim().max(1))?;
        let flat = positions_along_dim(self, dim, index, AlongDim::Scatter { src: None })?;
        scatter_value(self, &SavedIndices::new(&flat), value.into())
    }

    /// PyTorch's `scatter_add(dim, index, src)`: a copy of this tensor with
    /// `out[index[i][j]][j] += src[i][j]` for `dim == 0` (likewise along any dim); repeated
    /// indices add every term, in order, as PyTorch's CPU kernel: `f32`/`f64` in their own type,
    /// halves in `f32` rounded once at the end, integers wrapping, bools or-ing. Every dtype.
    /// Differentiable in both (`ScatterAddBackward0`: the gradient of `src` is the gradient
    /// gathered at the indices).
    ///
    /// # Errors
    ///
    /// As [`Tensor::scatter`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// // Counts per class: a histogram of labels.
    /// let labels = Tensor::from_vec(vec![2i64, 0, 2, 2], &[4])?;
    /// let counts = Tensor::zeros(&[3], DType::I64)?
    ///     .scatter_add(0, &labels, &Tensor::ones(&[4], DType::I64)?)?;
    /// assert_eq!(counts.to_vec::<i64>()?, vec![1, 0, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        crate::amp::autocast_entry!(scatter_add(self, dim, index, src));
        let (flat, src) = self.scatter_args(dim, index, src)?;
        scatter_add_src(self, &src, &SavedIndices::new(&flat))
    }

    /// The positions and `src` cut to the index's shape, for `scatter` and `scatter_add`.
    fn scatter_args(
        &self,
        dim: isize,
        index: &Tensor,
        src: &Tensor,
    ) -> Result<(Vec<usize>, Tensor)> {
        let dim = wrap_dim(dim, self.ndim().max(1))?;
        if self.dtype() != src.dtype() {
            return Err(Error::InvalidArgument(
                "scatter(): Expected self.dtype to be equal to src.dtype".into(),
            ));
        }
        let how = AlongDim::Scatter {
            src: Some(src.shape()),
        };
        let flat = positions_along_dim(self, dim, index, how)?;
        let src = fit_to(src, index.shape())?;
        Ok((flat, src))
    }

    /// PyTorch's `index_add(dim, index, source, alpha)`: a copy of this tensor with
    /// `alpha * source[i]` added to slice `index[i]` along `dim`; repeated indices add every
    /// term (as [`Tensor::scatter_add`] does). `index` is a 1-D (or 0-dim) `I64`/`I32` tensor
    /// with one entry per slice of `source` along `dim`; `source` has this tensor's dtype and
    /// shape apart from `dim`. `alpha` is truncated for an integer tensor (PyTorch's cast).
    /// Differentiable in both (`IndexAddBackward0`: `source` gets the gradient's slices at the
    /// indices, times `alpha`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::InvalidArgument`] in PyTorch's words (`"index_add_():
    /// ..."`) for an index that is not a vector or not an integer tensor, a `source` of
    /// another dtype or shape, a count of indices other than `source.size(dim)`, and an index
    /// out of range; on CUDA, not implemented.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::zeros(&[3, 2], DType::F64)?;
    /// let index = Tensor::from_vec(vec![0i64, 2, 0], &[3])?;
    /// let source = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    /// let y = x.index_add(0, &index, &source, 2.0)?;
    /// assert_eq!(y.to_vec::<f64>()?, vec![12.0, 16.0, 0.0, 0.0, 6.0, 8.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn index_add(
        &self,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        alpha: impl Into<Scalar>,
    ) -> Result<Tensor> {
        let dim = wrap_dim(dim, self.ndim().max(1))?;
        if index.ndim() > 1 {
            return Err(Error::InvalidArgument(format!(
                "index_add_(): Index is supposed to be a vector, but got dim: {} with type: {} \
                 and size: {:?}",
                index.ndim(),
                index.dtype().scalar_type_name(),
                index.shape()
            )));
        }
        let values = index_values(index, |d| {
            format!(
                "index_add_(): Expected dtype int32/int64 for index but got: {}",
                d.scalar_type_name()
            )
        })?;
        if self.dtype() != source.dtype() {
            return Err(Error::InvalidArgument(format!(
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let shape = at_least_1d(self.shape());
        let sshape = at_least_1d(source.shape());
        if values.len() != sshape.get(dim).copied().unwrap_or(1) {
            return Err(Error::InvalidArgument(format!(
                "index_add_(): Number of indices ({}) should be equal to source.size(dim): ({}), \
                 for dim: {dim}",
                values.len(),
                sshape.get(dim).copied().unwrap_or(1)
            )));
        }
        let same_apart_from_dim = shape.len() == sshape.len()
            && (0..shape.len()).all(|d| d == dim || shape[d] == sshape[d]);
        if !same_apart_from_dim {
            return Err(Error::InvalidArgument(format!(
                "source tensor shape must match self tensor shape, excluding the specified \
                 dimension. Got self.shape = {:?} source.shape = {:?}",
                self.shape(),
                source.shape()
            )));
        }
        let along = values
            .iter()
            .map(|&v| in_bounds(v, dim, shape[dim]))
            .collect::<Result<Vec<usize>>>()?;
        let strides = contiguous_strides(&shape);
        let mut flat = Vec::with_capacity(source.numel());
        for_each_position(&sshape, |pos| {
            flat.push(
                pos.iter()
                    .zip(&strides)
                    .enumerate()
                    .map(|(d, (&p, &s))| if d == dim { along[p] * s } else { p * s })
                    .sum(),
            );
            Ok(())
        })?;
        let alpha = match alpha.into() {
            a if self.dtype().is_floating_point() => Scalar::Float(a.to_f64()),
            Scalar::Float(f) => Scalar::Int(f.trunc() as i64),
            a => a,
        };
        index_add_src(self, source, &SavedIndices::new(&flat), alpha)
    }

    /// PyTorch's `index_select(dim, index)` with its `I64` (or `I32`) index tensor, 1-D or
    /// 0-dim: the slices `index[k]` along `dim`, in order. The same op as
    /// [`Tensor::index_select`] (which takes `&[usize]`), so the same node
    /// (`IndexSelectBackward0`).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::InvalidArgument`] in PyTorch's words:
    /// `"index_select(): Index is supposed to be a vector"`, `"index_select(): Expected dtype
    /// int32 or int64 for index"`, and `"index out of range in self"` for a negative or too
    /// large index.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    /// let rows = Tensor::from_vec(vec![2i64, 0, 2], &[3])?;
    /// assert_eq!(t.index_select_tensor(0, &rows)?.to_vec::<f32>()?, vec![5., 6., 1., 2., 5., 6.]);
    /// let err = t.index_select_tensor(0, &Tensor::from_vec(vec![-1i64], &[1])?).unwrap_err();
    /// assert_eq!(err.to_string(), "index out of range in self");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn index_select_tensor(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        let dim = wrap_dim(dim, self.ndim().max(1))?;
        if index.ndim() > 1 {
            return Err(Error::InvalidArgument(
                "index_select(): Index is supposed to be a vector".into(),
            ));
        }
        let values = index_values(index, |_| {
            "index_select(): Expected dtype int32 or int64 for index".into()
        })?;
        let size = self.shape().get(dim).copied().unwrap_or(1);
        let index = values
            .iter()
            .map(|&v| match usize::try_from(v) {
                Ok(v) if v < size => Ok(v),
                _ => Err(Error::InvalidArgument("index out of range in self".into())),
            })
            .collect::<Result<Vec<usize>>>()?;
        self.index_select(dim, &index)
    }

    /// PyTorch's `masked_select(mask)`: the elements where the bool `mask` is true, as a 1-D
    /// tensor in C order; `mask` and this tensor broadcast together first. Every dtype.
    /// Differentiable (`MaskedSelectBackward0`: the gradient goes back to the selected elements,
    /// summed over broadcast copies).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] `"masked_select: expected BoolTensor for mask"`;
    /// [`Error::Broadcast`] for shapes that do not broadcast.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, -4.0], &[2, 2])?.requires_grad_(true)?;
    /// let positive = x.masked_select(&x.gt_scalar(0)?)?;
    /// assert_eq!(positive.to_vec::<f64>()?, vec![1.0, 3.0]);
    /// positive.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, 0.0, 1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::InvalidArgument(
                "masked_select: expected BoolTensor for mask".into(),
            ));
        }
        // Mask first: PyTorch's broadcast error names the mask as tensor `a`.
        let shape = broadcast_shapes(mask.shape(), self.shape())?;
        let picked = mask.detach().broadcast_to(&shape)?.to_vec::<bool>()?;
        // This tensor's contiguous strides, aligned right against `shape`; 0 where broadcast.
        let own = contiguous_strides(self.shape());
        let lead = shape.len() - self.ndim();
        let strides: Vec<usize> = (0..shape.len())
            .map(|d| match d.checked_sub(lead) {
                Some(i) if self.shape()[i] != 1 => own[i],
                _ => 0,
            })
            .collect();
        let mut flat = Vec::new();
        let mut k = 0;
        for_each_position(&shape, |pos| {
            if picked[k] {
                flat.push(pos.iter().zip(&strides).map(|(p, s)| p * s).sum());
            }
            k += 1;
            Ok(())
        })?;
        masked_select_at(self, &[flat.len()], &SavedIndices::new(&flat))
    }

    /// PyTorch's `masked_scatter(mask, source)`: this tensor (broadcast with the bool `mask`)
    /// with the elements where `mask` is true replaced, in C order, by the first elements of
    /// `source` (any shape, read in C order, at least as many elements as `mask` has true
    /// values). Every dtype. Differentiable in both (`MaskedScatterBackward0`: no gradient
    /// where an element was replaced; `source`'s first elements get the gradient there, the
    /// rest zero).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] in PyTorch's words: `"masked_scatter_ only supports boolean
    /// masks, but got mask with dtype Long"`, a `source` of another dtype, and `"Number of
    /// elements of source < number of ones in mask"`; [`Error::Broadcast`]; on CUDA, not
    /// implemented.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::zeros(&[2, 3], DType::F32)?;
    /// let mask = Tensor::from_vec(vec![true, false, true, false, true, false], &[2, 3])?;
    /// let source = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4])?;
    /// let y = x.masked_scatter(&mask, &source)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::InvalidArgument(format!(
                "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().scalar_type_name()
            )));
        }
        if self.dtype() != source.dtype() {
            return Err(Error::InvalidArgument(format!(
                "masked_scatter: expected self and source to have same dtypes but got{} and {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let shape = broadcast_shapes(self.shape(), mask.shape())?;
        let picked = mask.detach().broadcast_to(&shape)?.to_vec::<bool>()?;
        let flat: Vec<usize> = picked
            .iter()
            .enumerate()
            .filter_map(|(k, &p)| p.then_some(k))
            .collect();
        if flat.len() > source.numel() {
            return Err(Error::InvalidArgument(
                "Number of elements of source < number of ones in mask".into(),
            ));
        }
        let x = if self.shape() == shape.as_slice() {
            self.clone()
        } else {
            self.expand(&shape)?
        };
        let source = source
            .reshape(&[source.numel()])?
            .narrow(0, 0, flat.len())?;
        masked_scatter_at(&x, &source, &SavedIndices::new(&flat))
    }

    /// PyTorch's `nonzero()`: the positions of the nonzero elements (NaN counts as nonzero), one
    /// row each in C order, as an `I64` tensor `[n, ndim]`. Not differentiable.
    ///
    /// # Errors
    ///
    /// A device error.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![0i64, 1, 2, 0], &[2, 2])?;
    /// let at = t.nonzero()?;
    /// assert_eq!((at.shape(), at.to_vec::<i64>()?), (&[2usize, 2][..], vec![0, 1, 1, 0]));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn nonzero(&self) -> Result<Tensor> {
        let hit = self.detach().ne_scalar(0)?.to_vec::<bool>()?;
        let mut rows = Vec::new();
        let mut k = 0;
        let mut n = 0;
        // A 0-dim tensor has one position, `[]`: a row of no columns when it is nonzero.
        for_each_position(self.shape(), |pos| {
            if hit[k] {
                rows.extend(pos.iter().map(|&p| p as i64));
                n += 1;
            }
            k += 1;
            Ok(())
        })?;
        Tensor::from_vec(rows, &[n, self.ndim()])?.to(self.device())
    }
}
