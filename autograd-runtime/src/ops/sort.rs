//! Sorting and selection along a dimension: `sort`, `argsort`, `topk`, `min_dim`, and the
//! reductions over every element `max()`/`min()`, with PyTorch's node names (`SortBackward0`,
//! `TopkBackward0`, `MinBackward0`, `MaxBackward1`, `MinBackward1`). `max_dim` (`MaxBackward0`)
//! lives with the index ops in `index.rs`.
//!
//! The order is PyTorch's: NaN sorts above every number (first when descending, last when
//! ascending), integers and bools by value, and equal values keep their order along the
//! dimension (the kernel is always stable, which `stable == false` allows). `topk` selects
//! instead of sorting, with PyTorch's CPU algorithms, so its positions among ties are
//! PyTorch's. Every dtype sorts; the indices are `I64` tensors and never require grad.
//!
//! The values are the input's elements at the positions the kernel found: each op's node keeps
//! those positions (freed with the node) and scatters the gradient back to them with an
//! `index_add`, a recorded op, so double backward works. `max()`/`min()` share their gradient
//! evenly among the entries equal to the result, as PyTorch's `MaxBackward1`.
//!
//! CUDA: there is no CUDA sort kernel in this build, so `sort`, `argsort` and `topk` of a CUDA
//! tensor return [`Error::NotImplementedForDType`]; the indices of `max_dim`/`min_dim` of a
//! CUDA tensor are a host tensor (this build keeps `I64` tensors on the host).

use autograd_macros::{backward, differentiable, jvp};

use crate::graph::{InputMetadata, SavedIndices};
use crate::layout::wrap_dim;
use crate::tensor::kernels;
use crate::{Device, Error, Result, Tensor};

/// `shape` as the kernels see it along a dim: a 0-dim tensor is one lane of one element.
fn lane_shape(shape: &[usize]) -> Vec<usize> {
    if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    }
}

/// The positions in `shape`'s C order of elements chosen along `dim`: `index` holds positions
/// along `dim`, in the C order of `shape` with `dim` of size `k`.
fn flat_positions(shape: &[usize], dim: usize, k: usize, index: &[usize]) -> Vec<usize> {
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let block = k * inner;
    (index.iter().enumerate())
        .map(|(p, &j)| (p / block * n + j) * inner + p % inner)
        .collect()
}

/// Positions along a dim as PyTorch's `int64` index tensor of `shape`, on `device` (on the host
/// for a CUDA tensor: this build keeps `I64` tensors on the host).
pub(crate) fn index_tensor(index: &[usize], shape: &[usize], device: Device) -> Result<Tensor> {
    let t = Tensor::from_vec(index.iter().map(|&i| i as i64).collect::<Vec<_>>(), shape)?;
    if device.is_host() {
        t.to(device)
    } else {
        Ok(t)
    }
}

/// The positions along `dim` of the first maximum (`largest`) or minimum of each lane; NaN is
/// both, as in PyTorch. `x` has at least one dim and `dim` is not empty.
fn extreme_positions(x: &Tensor, dim: usize, largest: bool) -> Result<Vec<usize>> {
    let k = kernels::of_tensor(x)?;
    if largest {
        return Ok(k.max_dim(x, dim)?.1);
    }
    if x.device().is_host() || !x.dtype().is_floating_point() {
        return k.argmin(x, dim);
    }
    // Off the host only the maximum has a kernel: the first minimum of `x` is the first
    // maximum of `-x` (NaN stays NaN, the maximum).
    let neg = x.detach().neg()?;
    Ok(kernels::of_tensor(&neg)?.max_dim(&neg, dim)?.1)
}

/// The elements of `x` at `flat` (positions in its C order), shaped `shape`.
fn pick(x: &Tensor, flat: &[usize], shape: &[usize]) -> Result<Tensor> {
    let all = x.reshape(&[x.numel()])?;
    kernels::of_tensor(&all)?
        .index_select(&all, 0, flat)?
        .reshape(shape)
}

/// The gradient of [`pick`]: `grad` added into zeros of `x`'s shape at `flat`, recorded (its
/// own gradient picks the same positions again).
fn unpick(grad: &Tensor, x: &InputMetadata, flat: &SavedIndices) -> Result<Tensor> {
    let n: usize = x.shape().iter().product();
    grad.reshape(&[grad.numel()])?
        .index_add_into(&[n], 0, &flat.get()?)?
        .reshape(x.shape())
}

// ----- the ops ----------------------------------------------------------------------------------

#[differentiable(builtin, crate = "crate", name = "SortBackward0")]
fn sort_values(x: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    pick(x, &flat.get()?, shape)
}

#[backward(sort_values)]
fn sort_values_backward(grad: &Tensor, x: &InputMetadata, flat: &SavedIndices) -> Result<Tensor> {
    unpick(grad, x, flat)
}

// The values are the input's elements at fixed positions: their tangents are the tangent's
// elements at the same positions (PyTorch's `gather(self_t, dim, indices)`).
#[jvp(sort_values)]
fn sort_values_jvp(x_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    sort_values(x_t, shape, flat)
}

#[differentiable(builtin, crate = "crate", name = "TopkBackward0")]
fn topk_values(x: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    pick(x, &flat.get()?, shape)
}

#[backward(topk_values)]
fn topk_values_backward(grad: &Tensor, x: &InputMetadata, flat: &SavedIndices) -> Result<Tensor> {
    unpick(grad, x, flat)
}

#[jvp(topk_values)]
fn topk_values_jvp(x_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    topk_values(x_t, shape, flat)
}

#[differentiable(builtin, crate = "crate", name = "MinBackward0")]
fn min_values(x: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    pick(x, &flat.get()?, shape)
}

#[backward(min_values)]
fn min_values_backward(grad: &Tensor, x: &InputMetadata, flat: &SavedIndices) -> Result<Tensor> {
    unpick(grad, x, flat)
}

#[jvp(min_values)]
fn min_values_jvp(x_t: &Tensor, shape: &[usize], flat: &SavedIndices) -> Result<Tensor> {
    min_values(x_t, shape, flat)
}

#[differentiable(builtin, crate = "crate", name = "MaxBackward1")]
fn max_all(x: &Tensor) -> Result<Tensor> {
    extreme_all(x, true)
}

#[backward(max_all)]
fn max_all_backward(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    evenly_distribute(grad, x, result)
}

/// PyTorch's `evenly_read_jvp`: the mean of the tangent over the entries equal to the result.
#[jvp(max_all)]
fn max_all_jvp(x_t: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    evenly_read(x_t, x, result)
}

#[differentiable(builtin, crate = "crate", name = "MinBackward1")]
fn min_all(x: &Tensor) -> Result<Tensor> {
    extreme_all(x, false)
}

#[backward(min_all)]
fn min_all_backward(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    evenly_distribute(grad, x, result)
}

#[jvp(min_all)]
fn min_all_jvp(x_t: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    evenly_read(x_t, x, result)
}

/// The maximum (or minimum) of all of `x`'s elements (at least one), 0-dim.
fn extreme_all(x: &Tensor, largest: bool) -> Result<Tensor> {
    let flat = x.reshape(&[x.numel()])?;
    let at = extreme_positions(&flat, 0, largest)?;
    pick(&flat, &at, &[])
}

/// PyTorch's `evenly_distribute_backward`: `grad` shared among the entries of `x` equal to
/// `result` (the NaNs when it is NaN).
fn evenly_distribute(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    let share = equal_to_result(x, result, grad.dtype())?;
    let count = share.sum()?;
    share.div(&count)?.mul(grad)
}

/// The tangent of `max()`/`min()` (PyTorch's `evenly_read_jvp`): the mean of `x_t` over the
/// entries of `x` equal to `result`.
fn evenly_read(x_t: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    let share = equal_to_result(x, result, x_t.dtype())?;
    let count = share.sum()?;
    x_t.mul(&share)?.sum()?.div(&count)
}

/// Not recorded: 1 (in `dtype`) at the entries of `x` equal to the 0-dim `result` (the NaNs
/// when it is NaN), 0 elsewhere.
fn equal_to_result(x: &Tensor, result: &Tensor, dtype: crate::DType) -> Result<Tensor> {
    let (x, r) = (x.detach(), result.detach());
    let mask = if r.item::<f64>()?.is_nan() {
        x.ne(&x)?
    } else {
        x.eq(&r)?
    };
    mask.to_dtype(dtype)
}

impl Tensor {
    /// PyTorch's `sort(dim, descending, stable)`: the values sorted along `dim` and, as an `I64`
    /// tensor, the position along `dim` each came from. NaN sorts as the largest value; equal
    /// values keep their order along `dim` (always: `stable == false` allows that too). Every
    /// dtype sorts. The values are differentiable (`SortBackward0`: the gradient goes back to
    /// the positions they came from); the indices never require grad.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::NotImplementedForDType`] for a CUDA tensor (no CUDA
    /// sort kernel in this build).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::from_vec(vec![2.0f64, f64::NAN, 1.0, 2.0], &[4])?.requires_grad_(true)?;
    /// let (values, indices) = x.sort(0, false, true)?;
    /// assert_eq!(indices.dtype(), DType::I64);
    /// assert_eq!(indices.to_vec::<i64>()?, vec![2, 0, 3, 1]);
    /// assert_eq!(values.to_vec::<f64>()?[..3], [1.0, 2.0, 2.0]);
    /// assert_eq!(values.grad_fn().unwrap().name(), "SortBackward0");
    /// values.mul(&Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?)?.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 4.0, 1.0, 3.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sort(&self, dim: isize, descending: bool, stable: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        let shape = lane_shape(self.shape());
        let (_, index) = kernels::of_tensor(self)?.sort(self, d, descending, stable)?;
        let flat = flat_positions(&shape, d, shape[d], &index);
        let values = sort_values(self, self.shape(), &SavedIndices::new(&flat))?;
        Ok((values, index_tensor(&index, self.shape(), self.device())?))
    }

    /// PyTorch's `argsort(dim, descending, stable)`: the indices of [`Tensor::sort`] alone, an
    /// `I64` tensor (nothing is recorded).
    ///
    /// # Errors
    ///
    /// As [`Tensor::sort`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![3i32, 1, 2, 1, 0, 5], &[2, 3])?;
    /// assert_eq!(x.argsort(-1, true, true)?.to_vec::<i64>()?, vec![0, 2, 1, 2, 0, 1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn argsort(&self, dim: isize, descending: bool, stable: bool) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim())?;
        let (_, index) = kernels::of_tensor(self)?.sort(self, d, descending, stable)?;
        index_tensor(&index, self.shape(), self.device())
    }

    /// PyTorch's `topk(k, dim, largest, sorted)`: the `k` largest (or smallest, `largest ==
    /// false`) values along `dim` and their positions (`I64`). NaN counts as the largest value.
    /// The positions are exactly PyTorch's CPU ones, ties and `sorted == false` included: a
    /// selection as PyTorch's (libstdc++'s `partial_sort` when `k * 64 <= n`, else
    /// `nth_element` and, if `sorted`, a sort of the `k - 1` before the `k`-th), not a sort of
    /// the whole dim, so equal values come in PyTorch's order (not the lower position first),
    /// and without `sorted` the order is the selection's. The values are differentiable
    /// (`TopkBackward0`); the indices never require grad.
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] (`selected index k out of range`) when `k` exceeds the size of
    /// `dim`; [`Error::DimOutOfRange`]; [`Error::InvalidArgument`] for a bool tensor (as
    /// PyTorch's CPU); [`Error::NotImplementedForDType`] for a CUDA tensor.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![0.1f64, 0.7, 0.2, 0.9, 0.3, 0.0], &[2, 3])?
    ///     .requires_grad_(true)?;
    /// let (values, indices) = x.topk(2, 1, true, true)?;
    /// assert_eq!(values.to_vec::<f64>()?, vec![0.7, 0.2, 0.9, 0.3]);
    /// assert_eq!(indices.to_vec::<i64>()?, vec![1, 2, 0, 1]);
    /// values.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![0.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
    /// assert_eq!(x.topk(4, 1, true, true).unwrap_err().to_string(), "selected index k out of range");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim, self.ndim())?;
        if self.dtype() == crate::DType::Bool {
            return Err(Error::InvalidArgument(
                "topk does not support bool dtypes on CPU".into(),
            ));
        }
        let shape = lane_shape(self.shape());
        if k > shape[d] {
            return Err(Error::size_mismatch(
                "topk",
                "selected index k out of range",
            ));
        }
        if self.ndim() == 0 {
            // PyTorch returns the element for `k` 0 and 1 alike.
            let values = topk_values(self, &[], &SavedIndices::new(&[0]))?;
            return Ok((values, index_tensor(&[0], &[], self.device())?));
        }
        let picked = kernels::of_tensor(self)?.topk(self, d, k, largest, sorted)?;
        let flat = flat_positions(&shape, d, k, &picked);
        let mut out_shape = shape;
        out_shape[d] = k;
        let values = topk_values(self, &out_shape, &SavedIndices::new(&flat))?;
        Ok((values, index_tensor(&picked, &out_shape, self.device())?))
    }

    /// PyTorch's `torch.min(x, dim, keepdim)`: the minimum over `dim` and the position of its
    /// first occurrence, an `I64` tensor. NaN counts as the minimum (it propagates), as in
    /// PyTorch. The values are differentiable (`MinBackward0`: the gradient goes to that one
    /// position); the indices never require grad. See [`Tensor::max_dim`].
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::SizeMismatch`] for a dim of size 0 (PyTorch's text).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3.0f64, 1.0, 1.0, 0.0, 5.0, -1.0], &[2, 3])?
    ///     .requires_grad_(true)?;
    /// let (values, indices) = t.min_dim(1, false)?;
    /// assert_eq!(values.to_vec::<f64>()?, vec![1.0, -1.0]);
    /// assert_eq!(indices.to_vec::<i64>()?, vec![1, 2]);
    /// assert_eq!(values.grad_fn().unwrap().name(), "MinBackward0");
    /// values.sum()?.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn min_dim(&self, dim: usize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let d = wrap_dim(dim as isize, self.ndim())?;
        let shape = lane_shape(self.shape());
        if shape[d] == 0 {
            return Err(Error::size_mismatch(
                "min_dim",
                format!("min(): Expected reduction dim {d} to have non-zero size."),
            ));
        }
        let at = if self.ndim() == 0 {
            vec![0]
        } else {
            extreme_positions(self, d, false)?
        };
        let mut out_shape = shape.clone();
        if self.ndim() == 0 {
            out_shape.clear();
        } else if keepdim {
            out_shape[d] = 1;
        } else {
            out_shape.remove(d);
        }
        let flat = flat_positions(&shape, d, 1, &at);
        let values = min_values(self, &out_shape, &SavedIndices::new(&flat))?;
        Ok((values, index_tensor(&at, &out_shape, self.device())?))
    }

    /// PyTorch's `max()`: the largest element, 0-dim (NaN if any is NaN). Differentiable
    /// (`MaxBackward1`: the gradient is shared evenly among the elements equal to the maximum).
    ///
    /// # Errors
    ///
    /// [`Error::SizeMismatch`] for an empty tensor (PyTorch's text).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 3.0, 3.0, 2.0], &[2, 2])?.requires_grad_(true)?;
    /// let m = t.max()?;
    /// assert_eq!(m.item::<f64>()?, 3.0);
    /// m.backward()?;
    /// assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![0.0, 0.5, 0.5, 0.0]);
    /// assert_eq!(Tensor::from_vec(vec![4u8, 9, 1], &[3])?.max()?.item::<u8>()?, 9);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn max(&self) -> Result<Tensor> {
        self.check_reducible("max")?;
        max_all(self)
    }

    /// PyTorch's `min()`: the smallest element, 0-dim (NaN if any is NaN); `MinBackward1`, as
    /// [`Tensor::max`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::max`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![4i64, -2, 7], &[3])?;
    /// assert_eq!(t.min()?.item::<i64>()?, -2);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn min(&self) -> Result<Tensor> {
        self.check_reducible("min")?;
        min_all(self)
    }

    fn check_reducible(&self, op: &'static str) -> Result<()> {
        if self.numel() == 0 {
            return Err(Error::size_mismatch(
                op,
                format!(
                    "{op}(): Expected reduction dim to be specified for input.numel() == 0. \
                     Specify the reduction dim with the 'dim' argument."
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_positions_follow_c_order() {
        // [2, 3, 2] along dim 1, k = 2: two positions along dim 1 for each lane.
        let shape = [2, 3, 2];
        let picked = vec![2, 0, 1, 2, 0, 1, 2, 0];
        assert_eq!(
            flat_positions(&shape, 1, 2, &picked),
            vec![4, 1, 2, 5, 6, 9, 10, 7]
        );
    }
}
