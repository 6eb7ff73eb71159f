//! Splitting a tensor along a dim and joining tensors along one: `split`, `chunk` (views, one
//! multi-output node), `cat` and `stack` (copies), with their gradients.

use autograd_macros::{backward, differentiable, jvp};

use crate::graph::InputMetadata;
use crate::layout::wrap_dim;
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// Views of `sizes` along `dim` (wrapped; the sizes add up): one node with an output per part
/// (PyTorch's `split_with_sizes`).
#[differentiable(builtin, crate = "crate", name = "SplitWithSizesBackward0")]
fn split(x: &Tensor, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
    x.split_views(sizes, dim)
}

#[backward(split)]
fn split_backward(grad: &[Tensor], dim: usize) -> Result<Tensor> {
    Tensor::cat(grad, dim)
}

/// The same split of the tangent: views of it, made as the outputs are of the input.
#[jvp(split)]
fn split_jvp(x_t: &Tensor, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
    split_parts(x_t, split(x_t, sizes, dim)?)
}

/// `parts` of `x`, marked as the views of a multi-output op (as the public `split` marks them).
fn split_parts(x: &Tensor, parts: Vec<Tensor>) -> Result<Vec<Tensor>> {
    for p in &parts {
        p.set_view_creation(x, true);
    }
    Ok(parts)
}

/// `split` into parts of one size (PyTorch's `split` with an integer, which `chunk` calls).
#[differentiable(builtin, crate = "crate", name = "SplitBackward0")]
fn split_even(x: &Tensor, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
    x.split_views(sizes, dim)
}

#[backward(split_even)]
fn split_even_backward(grad: &[Tensor], dim: usize) -> Result<Tensor> {
    split_backward(grad, dim)
}

#[jvp(split_even)]
fn split_even_jvp(x_t: &Tensor, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
    split_parts(x_t, split_even(x_t, sizes, dim)?)
}

/// `tensors` are checked (same dtype, device and shape except along the wrapped `dim`).
#[differentiable(builtin, crate = "crate")]
fn cat(tensors: &[Tensor], dim: usize) -> Result<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
    let numel = tensors
        .iter()
        .try_fold(0usize, |n, t| n.checked_add(t.numel()))
        .ok_or_else(|| Error::shape("cat", "the result has more than usize::MAX elements"))?;
    crate::layout::check_alloc("cat", numel, first.dtype().size_of())?;
    if tensors.iter().any(|t| is_legacy_empty(t.shape()))
        && !tensors.iter().all(|t| is_legacy_empty(t.shape()))
    {
        // The skipped parts (see `Tensor::cat`) are left out of the kernel's list.
        let kept: Vec<Tensor> = tensors
            .iter()
            .filter(|t| !is_legacy_empty(t.shape()))
            .cloned()
            .collect();
        return kernels::of_tensor(first)?.cat(&kept, dim);
    }
    kernels::of_tensor(first)?.cat(tensors, dim)
}

#[backward(cat)]
fn cat_backward(
    grad: &Tensor,
    needs_input_grad: &[bool],
    tensors: &[InputMetadata],
    dim: usize,
) -> Result<Vec<Option<Tensor>>> {
    let mut start = 0;
    let mut grads = Vec::with_capacity(tensors.len());
    for (t, &needed) in tensors.iter().zip(needs_input_grad) {
        if is_legacy_empty(t.shape()) {
            // A skipped 1-D empty input (or one of only such inputs): an empty gradient, made
            // afresh as PyTorch's `cat_tensors_backward` makes it.
            grads.push(needed.then(|| t.zeros()).transpose()?);
            continue;
        }
        let len = t.shape()[dim];
        grads.push(if needed {
            Some(grad.narrow(dim, start, len)?)
        } else {
            None
        });
        start += len;
    }
    Ok(grads)
}

/// PyTorch's `cat_jvp`: the tangents concatenated, zeros for the inputs without one; in one
/// dtype, the tangents' promoted (a tangent may have another floating dtype than its primal).
#[jvp(cat)]
fn cat_jvp(tensors_t: &[Tensor], dim: usize) -> Result<Tensor> {
    let dtype = tensors_t
        .iter()
        .map(Tensor::dtype)
        .reduce(crate::DType::promote)
        .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
    if tensors_t.iter().all(|t| t.dtype() == dtype) {
        return cat(tensors_t, dim);
    }
    let promoted = tensors_t
        .iter()
        .map(|t| t.to_dtype(dtype))
        .collect::<Result<Vec<Tensor>>>()?;
    cat(&promoted, dim)
}

/// The shape of a 1-D tensor of size 0, which `cat` skips (PyTorch's legacy rule).
fn is_legacy_empty(shape: &[usize]) -> bool {
    shape == [0]
}

impl Tensor {
    /// Splits into `chunks` views along `dim` (the last may be smaller), recorded as one
    /// multi-output node.
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for `chunks == 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5])?;
    /// let parts = t.chunk(2, 0)?;
    /// assert_eq!(parts[0].to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
    /// assert_eq!(parts[1].to_vec::<f32>()?, vec![4.0, 5.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn chunk(&self, chunks: usize, dim: usize) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(Error::shape(
                "chunk",
                "chunk expects `chunks` to be greater than 0, got: 0",
            ));
        }
        let d = wrap_dim(dim as isize, self.ndim())?;
        let size = self.shape().get(d).copied().unwrap_or(1);
        let step = size.div_ceil(chunks).max(1);
        let sizes: Vec<usize> = (0..size)
            .step_by(step)
            .map(|s| step.min(size - s))
            .collect();
        self.check_split(&sizes, d)?;
        let parts = split_even(self, &sizes, d)?;
        for p in &parts {
            p.set_view_creation(self, true);
        }
        Ok(parts)
    }

    fn split_views(&self, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
        let mut parts = Vec::with_capacity(sizes.len());
        let mut start = 0;
        for &len in sizes {
            parts.push(self.narrow_view(dim, start, len)?);
            start += len;
        }
        Ok(parts)
    }

    fn check_split(&self, sizes: &[usize], d: usize) -> Result<()> {
        let total = sizes.iter().try_fold(0usize, |n, &s| n.checked_add(s));
        if total != Some(self.shape()[d]) {
            return Err(Error::shape(
                "split",
                format!(
                    "split sizes {sizes:?} do not add up to the size {} of dim {d}",
                    self.shape()[d]
                ),
            ));
        }
        Ok(())
    }

    /// Splits into views of the given `sizes` along `dim` (they must add up to the dim's size).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] if the sizes do not add up.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    /// let parts = t.split(&[1, 2], 0)?;
    /// assert_eq!(parts[1].to_vec::<f32>()?, vec![2.0, 3.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn split(&self, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim as isize, self.ndim())?;
        self.check_split(sizes, d)?;
        let parts = split(self, sizes, d)?;
        for p in &parts {
            p.set_view_creation(self, true);
        }
        Ok(parts)
    }

    /// Concatenates tensors of equal shape except along `dim`. As in PyTorch, a 1-D tensor of
    /// size 0 is skipped whatever the others' shapes (its gradient is an empty tensor), so an
    /// empty accumulator can start a loop of `cat`s.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] for an empty list, [`Error::SizeMismatch`] with PyTorch's text for
    /// mismatched ranks or sizes or a 0-dim tensor; dtype and device mismatches.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?;
    /// let b = Tensor::from_vec(vec![3.0f32, 4.0], &[1, 2])?;
    /// assert_eq!(Tensor::cat(&[a.clone(), b], 0)?.shape(), &[2, 2]);
    /// let empty = Tensor::from_vec(Vec::<f32>::new(), &[0])?;
    /// assert_eq!(Tensor::cat(&[empty, a], 1)?.shape(), &[1, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn cat(tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        crate::amp::autocast_op!(Cat, tensors, |ts| Tensor::cat(&ts, dim));
        let first = tensors
            .first()
            .ok_or_else(|| Error::shape("cat", "expected a non-empty list of Tensors"))?;
        if let Some(k) = tensors.iter().position(|t| t.ndim() == 0) {
            return Err(Error::size_mismatch(
                "cat",
                format!("zero-dimensional tensor (at position {k}) cannot be concatenated"),
            ));
        }
        // PyTorch's legacy rule: a 1-D tensor of size 0 is skipped (its shape is not checked and
        // it adds nothing; its gradient is an empty tensor), unless every tensor is one.
        let first = tensors
            .iter()
            .find(|t| !is_legacy_empty(t.shape()))
            .unwrap_or(first);
        let d = wrap_dim(dim as isize, first.ndim())?;
        for (k, t) in tensors.iter().enumerate() {
            first.check_same_dtype_device("cat", t)?;
            if is_legacy_empty(t.shape()) {
                continue;
            }
            if t.ndim() != first.ndim() {
                return Err(Error::size_mismatch(
                    "cat",
                    format!(
                        "Tensors must have same number of dimensions: got {} and {}",
                        first.ndim(),
                        t.ndim()
                    ),
                ));
            }
            let differs = (0..t.ndim()).find(|&i| i != d && t.shape()[i] != first.shape()[i]);
            if let Some(i) = differs {
                return Err(Error::size_mismatch(
                    "cat",
                    format!(
                        "Sizes of tensors must match except in dimension {d}. Expected size {} \
                         but got size {} for tensor number {k} in the list.",
                        first.shape()[i],
                        t.shape()[i]
                    ),
                ));
            }
        }
        cat(tensors, d)
    }

    /// Stacks tensors of equal shape along a new dim `dim`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::cat`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// assert_eq!(Tensor::stack(&[a.clone(), a], 0)?.shape(), &[2, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn stack(tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        crate::amp::autocast_op!(Stack, tensors, |ts| Tensor::stack(&ts, dim));
        let first = tensors
            .first()
            .ok_or_else(|| Error::shape("stack", "expected a non-empty list of Tensors"))?;
        if dim > first.ndim() {
            return Err(Error::DimOutOfRange {
                dim: dim as isize,
                min: -(first.ndim() as isize) - 1,
                max: first.ndim() as isize,
            });
        }
        if let Some(k) = tensors.iter().position(|t| t.shape() != first.shape()) {
            return Err(Error::size_mismatch(
                "stack",
                format!(
                    "stack expects each tensor to be equal size, but got {:?} at entry 0 and \
                     {:?} at entry {k}",
                    first.shape(),
                    tensors[k].shape()
                ),
            ));
        }
        let parts = tensors
            .iter()
            .map(|t| {
                let mut shape = t.shape_dims();
                shape.insert(dim.min(shape.len()), 1);
                t.reshape(&shape)
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&parts, dim)
    }
}
