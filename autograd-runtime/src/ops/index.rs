//! Indexing ops: `index_select` and `max_dim` (values and indices), and the scatter/gather pairs
//! that are their gradients (each differentiable, so double backward works).

use autograd_macros::{backward, differentiable, jvp};

use super::derivative_rules::{Read, Reads, Rule};
use crate::graph::{InputMetadata, SavedIndices};
use crate::layout::{Dims, Layout, wrap_dim};
use crate::sync::Arc;
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// Positions of the maxima along `dim`, in keepdim layout.
#[derive(Clone)]
struct Argmax {
    dim: usize,
    keepdim_shape: Dims,
    /// One index along `dim` per element of the keepdim-shaped result, in C order; freed with
    /// the node (PyTorch keeps them as a saved tensor).
    indices: SavedIndices,
}

impl Argmax {
    /// Frees the indices with the node's saved tensors (see [`SavedIndices`]).
    fn __autograd_release(&self) {
        self.indices.__autograd_release();
    }
}

// ----- the ops ----------------------------------------------------------------------------------

/// `dim` is wrapped and `index` checked. The node keeps a clone of the index, freed with it.
#[differentiable(builtin, crate = "crate")]
fn index_select(x: &Tensor, dim: usize, index: &SavedIndices) -> Result<Tensor> {
    let index = index.get()?;
    let mut shape = x.shape().to_vec();
    shape[dim] = index.len();
    let numel = crate::layout::checked_numel("index_select", &shape)?;
    crate::layout::check_alloc("index_select", numel, x.dtype().size_of())?;
    kernels::of_tensor(x)?.index_select(x, dim, &index)
}

#[backward(index_select)]
fn index_select_backward(
    grad: &Tensor,
    x: &InputMetadata,
    dim: usize,
    index: &SavedIndices,
) -> Result<Tensor> {
    grad.index_add_into(x.shape(), dim, &index.get()?)
}

// Linear: each op's tangent is the same op on the input's tangent.
#[jvp(index_select)]
fn index_select_jvp(x_t: &Tensor, dim: usize, index: &SavedIndices) -> Result<Tensor> {
    index_select(x_t, dim, index)
}

/// Zeros of `shape` with `g`'s slices added at `index` along `dim`: the gradient of
/// `index_select`, whose own gradient selects the same slices again.
#[differentiable(builtin, crate = "crate")]
fn index_add(g: &Tensor, shape: &[usize], dim: usize, index: &SavedIndices) -> Result<Tensor> {
    kernels::of_tensor(g)?.index_add(g, shape, dim, &index.get()?)
}

#[backward(index_add)]
fn index_add_backward(grad: &Tensor, dim: usize, index: &SavedIndices) -> Result<Tensor> {
    grad.index_select(dim, &index.get()?)
}

#[jvp(index_add)]
fn index_add_jvp(
    g_t: &Tensor,
    shape: &[usize],
    dim: usize,
    index: &SavedIndices,
) -> Result<Tensor> {
    index_add(g_t, shape, dim, index)
}

/// The maxima of `x` over `dim` (the node's output), their positions (returned to the caller,
/// not differentiable) and the same positions kept for the backward (`save(argmax)`): one kernel
/// computes values and positions. PyTorch's `MaxBackward0` keeps the indices the same way.
/// `dim` is wrapped and not empty.
#[differentiable(builtin, crate = "crate", name = "MaxBackward0", save(argmax))]
fn max_dim(x: &Tensor, dim: usize, keepdim: bool) -> Result<(Tensor, Vec<usize>, Argmax)> {
    let (values, flat) = kernels::of_tensor(x)?.max_dim(x, dim)?;
    let mut keepdim_shape = x.shape_dims();
    if let Some(d) = keepdim_shape.get_mut(dim) {
        *d = 1;
    }
    let values = if x.ndim() == 0 {
        x.contiguous_data_owned()?
    } else if keepdim {
        values
    } else {
        let mut shape = keepdim_shape.clone();
        shape.remove(dim);
        Tensor::from_parts(Arc::clone(&values.0.storage), Layout::contiguous(&shape))
    };
    let argmax = Argmax {
        dim,
        keepdim_shape,
        indices: SavedIndices::new(&flat),
    };
    Ok((values, flat, argmax))
}

#[backward(max_dim)]
fn max_dim_backward(grad: &Tensor, x: &InputMetadata, argmax: &Argmax) -> Result<Tensor> {
    argmax.indices.get()?; // freed with the node: a second backward fails here
    grad.reshape(&argmax.keepdim_shape)?
        .scatter_argmax(x.shape(), argmax)
}

/// PyTorch's `gather_with_keepdimed_indices(self_t, dim, indices, keepdim)`: the tangent read at
/// the positions of the maxima.
#[jvp(max_dim)]
fn max_dim_jvp(x_t: &Tensor, argmax: &Argmax, result: &Tensor) -> Result<Tensor> {
    if x_t.ndim() == 0 {
        // The maximum of a 0-dim tensor is itself (a copy, as the forward's).
        return x_t.copy();
    }
    x_t.gather_argmax(argmax)?.reshape(result.shape())
}

/// Zeros of `shape` with `g` (keepdim-shaped) written at the argmax positions: the gradient of
/// `max_dim`, whose own gradient gathers at the same positions.
#[differentiable(builtin, crate = "crate", name = "MaxBackwardBackward0")]
fn scatter_argmax(g: &Tensor, shape: &[usize], argmax: Argmax) -> Result<Tensor> {
    kernels::of_tensor(g)?.scatter(g, shape, argmax.dim, &argmax.indices.get()?)
}

#[backward(scatter_argmax)]
fn scatter_argmax_backward(grad: &Tensor, argmax: &Argmax) -> Result<Tensor> {
    grad.gather_argmax(argmax)
}

#[jvp(scatter_argmax)]
fn scatter_argmax_jvp(g_t: &Tensor, shape: &[usize], argmax: Argmax) -> Result<Tensor> {
    scatter_argmax(g_t, shape, argmax)
}

/// `g` (shaped like `x`) read at the argmax positions, keepdim-shaped: the gradient of
/// `scatter_argmax`, whose own gradient scatters again (so `max_dim` is differentiable any
/// number of times, as PyTorch's, whose `value_selecting_reduction_backward` is a `scatter`).
#[differentiable(builtin, crate = "crate", name = "GatherBackward0")]
fn gather_argmax(g: &Tensor, argmax: Argmax) -> Result<Tensor> {
    kernels::of_tensor(g)?.gather(g, argmax.dim, &argmax.indices.get()?)
}

#[backward(gather_argmax)]
fn gather_argmax_backward(grad: &Tensor, g: &InputMetadata, argmax: &Argmax) -> Result<Tensor> {
    grad.scatter_argmax(g.shape(), argmax)
}

#[jvp(gather_argmax)]
fn gather_argmax_jvp(g_t: &Tensor, argmax: Argmax) -> Result<Tensor> {
    gather_argmax(g_t, argmax)
}

impl Tensor {
    /// The entries `index[k]` of dim `dim`, in order (repeats allowed).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for an index past the dim's size.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    /// assert_eq!(t.index_select(0, &[2, 0])?.to_vec::<f32>()?, vec![5.0, 6.0, 1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn index_select(&self, dim: usize, index: &[usize]) -> Result<Tensor> {
        let dim = wrap_dim(dim as isize, self.ndim())?;
        let size = self.shape().get(dim).copied().unwrap_or(1);
        if let Some(&bad) = index.iter().find(|&&i| i >= size) {
            return Err(Error::shape(
                "index_select",
                format!("index {bad} is out of bounds for dimension {dim} with size {size}"),
            ));
        }
        index_select(self, dim, &SavedIndices::new(index))
    }

    /// Zeros of `shape` with this tensor's slices added at `index` along `dim`.
    pub(crate) fn index_add_into(
        &self,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        index_add(self, shape, dim, &SavedIndices::new(index))
    }

    /// PyTorch's `torch.max(x, dim, keepdim)`: the maximum over `dim` and the position of its
    /// first occurrence, an `I64` tensor of the values' shape. NaN counts as the maximum, as in
    /// PyTorch. The values are differentiable (`MaxBackward0`: the gradient goes to that one
    /// position, unlike [`Tensor::amax`]'s); the indices never require grad. For a CUDA tensor
    /// the indices are a host tensor (this build keeps `I64` tensors on the host). See
    /// [`Tensor::min_dim`] and, over every element, [`Tensor::max`].
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a dim of size 0 (PyTorch's text).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::from_vec(vec![1.0f64, 9.0, 3.0, 7.0, 2.0, 8.0], &[2, 3])?.requires_grad_(true)?;
    /// let (values, indices) = t.max_dim(1, false)?;
    /// assert_eq!(values.to_vec::<f64>()?, vec![9.0, 8.0]);
    /// assert_eq!((indices.dtype(), indices.to_vec::<i64>()?), (DType::I64, vec![1, 2]));
    /// values.sum()?.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn max_dim(&self, dim: usize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (values, index) = self.max_dim_positions(dim, keepdim)?;
        let indices = super::sort::index_tensor(&index, values.shape(), self.device())?;
        Ok((values, indices))
    }

    /// [`Tensor::max_dim`] with the positions as they come from the kernel, not as a tensor:
    /// for the crate's own callers (pooling, `amax`, clipping) that only want the values.
    pub(crate) fn max_dim_positions(
        &self,
        dim: usize,
        keepdim: bool,
    ) -> Result<(Tensor, Vec<usize>)> {
        let dim = wrap_dim(dim as isize, self.ndim())?;
        if self.shape().get(dim) == Some(&0) {
            return Err(Error::size_mismatch(
                "max_dim",
                format!("max(): Expected reduction dim {dim} to have non-zero size."),
            ));
        }
        max_dim(self, dim, keepdim)
    }

    /// Zeros of `shape` with this (keepdim-shaped) tensor written at the argmax positions.
    fn scatter_argmax(&self, shape: &[usize], argmax: &Argmax) -> Result<Tensor> {
        scatter_argmax(self, shape, argmax.clone())
    }

    /// This tensor's entries at the argmax positions, keepdim-shaped.
    fn gather_argmax(&self, argmax: &Argmax) -> Result<Tensor> {
        gather_argmax(self, argmax.clone())
    }
}

// ----- derivative rules for `#[differentiable(derive)]` (see `derivative_rules.rs`) -------------

/// `max_dim`'s rule finds the positions of the maxima again from the kept input (a derived body
/// keeps tensors, not the indices), then scatters the gradient there as `max_dim_backward` does.
#[doc(hidden)]
#[allow(non_upper_case_globals, clippy::type_complexity)]
impl super::DerivativeRules {
    pub const max_dim: Rule<fn(&Tensor, &Tensor, &Tensor, usize, bool) -> Result<Tensor>> = Rule {
        // The input's values, for the positions of the maxima.
        reads: Reads {
            operands: &[Read::Value],
            result: false,
            value_for: &[],
        },
        apply: |grad, x, _result, dim, _keepdim| {
            let dim = wrap_dim(dim as isize, x.ndim())?;
            let (_, flat) = kernels::of_tensor(x)?.max_dim(x, dim)?;
            let mut keepdim_shape = x.shape_dims();
            if let Some(d) = keepdim_shape.get_mut(dim) {
                *d = 1;
            }
            let argmax = Argmax {
                dim,
                keepdim_shape,
                indices: SavedIndices::new(&flat),
            };
            max_dim_backward(grad, &InputMetadata::of(x), &argmax)
        },
    };
}
