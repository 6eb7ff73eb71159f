//! The index checks of `scatter.rs`'s ops, as PyTorch's: an index tensor's dtype, shape and
//! values against the tensor it reads or writes, with PyTorch's error texts, and its values
//! as flat positions.

use crate::layout::contiguous_strides;
use crate::{DType, Error, Result, Tensor};

/// The values of an `int64` or `int32` index tensor, or `dtype_error` for any other dtype.
pub(super) fn index_values(
    index: &Tensor,
    dtype_error: impl FnOnce(DType) -> String,
) -> Result<Vec<i64>> {
    match index.dtype() {
        DType::I64 => index.to_vec::<i64>(),
        DType::I32 => Ok(index.to_vec::<i32>()?.into_iter().map(i64::from).collect()),
        other => Err(Error::InvalidArgument(dtype_error(other))),
    }
}

/// `shape`, with a 0-dim tensor seen as one element along one dim (as PyTorch's index ops do).
pub(super) fn at_least_1d(shape: &[usize]) -> Vec<usize> {
    if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    }
}

/// `value` checked to be a position along a dim of `size` (PyTorch's text for both negative
/// and too large values).
pub(super) fn in_bounds(value: i64, dim: usize, size: usize) -> Result<usize> {
    match usize::try_from(value) {
        Ok(v) if v < size => Ok(v),
        _ => Err(Error::InvalidArgument(format!(
            "index {value} is out of bounds for dimension {dim} with size {size}"
        ))),
    }
}

/// Calls `f` with every position of `shape` in C order.
pub(super) fn for_each_position(
    shape: &[usize],
    mut f: impl FnMut(&[usize]) -> Result<()>,
) -> Result<()> {
    if shape.contains(&0) {
        return Ok(());
    }
    let mut pos = vec![0usize; shape.len()];
    loop {
        f(&pos)?;
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
}

/// How `gather` or `scatter` reads the index tensor: the op's name for its errors, and the
/// source's shape for `scatter` (the index must fit in it too).
#[derive(Clone, Copy)]
pub(super) enum AlongDim<'a> {
    Gather,
    Scatter { src: Option<&'a [usize]> },
}

/// The flat positions in `x` (C order) that `index` names along `dim`, one per element of
/// `index` in its C order: PyTorch's `gather`/`scatter` addressing, with its checks and texts.
pub(super) fn positions_along_dim(
    x: &Tensor,
    dim: usize,
    index: &Tensor,
    how: AlongDim<'_>,
) -> Result<Vec<usize>> {
    let values = index_values(index, |_| {
        let op = match how {
            AlongDim::Gather => "gather",
            AlongDim::Scatter { .. } => "scatter",
        };
        format!("{op}(): Expected dtype int32/int64 for index")
    })?;
    let shape = at_least_1d(x.shape());
    let ishape = at_least_1d(index.shape());
    if shape.len() != ishape.len() {
        let what = match how {
            AlongDim::Gather => "input",
            AlongDim::Scatter { .. } => "self",
        };
        return Err(Error::InvalidArgument(format!(
            "Index tensor must have the same number of dimensions as {what} tensor"
        )));
    }
    if index.numel() > 0 {
        let past_self = (0..shape.len()).find(|&d| d != dim && ishape[d] > shape[d]);
        match how {
            AlongDim::Gather => {
                if let Some(d) = past_self {
                    return Err(Error::InvalidArgument(format!(
                        "Size does not match at dimension {d} expected index {ishape:?} to be \
                         no larger than self {shape:?} apart from dimension {dim}"
                    )));
                }
            }
            AlongDim::Scatter { src } => {
                let src = src.map(at_least_1d);
                let past_src = src.as_ref().is_some_and(|s| {
                    s.len() != ishape.len() || ishape.iter().zip(s).any(|(i, s)| i > s)
                });
                if past_self.is_some() || past_src {
                    let mut msg = format!(
                        "Expected index {ishape:?} to be no larger than self {shape:?} apart \
                         from dimension {dim}"
                    );
                    if let Some(s) = src {
                        msg.push_str(&format!(" and to be no larger size than src {s:?}"));
                    }
                    return Err(Error::InvalidArgument(msg));
                }
            }
        }
    }
    let strides = contiguous_strides(&shape);
    let mut flat = Vec::with_capacity(values.len());
    let mut values = values.into_iter();
    for_each_position(&ishape, |pos| {
        let v = values
            .next()
            .expect("invariant: one value per position of the index");
        let along = in_bounds(v, dim, shape[dim])?;
        flat.push(
            pos.iter()
                .zip(&strides)
                .enumerate()
                .map(|(d, (&p, &s))| if d == dim { along * s } else { p * s })
                .sum(),
        );
        Ok(())
    })?;
    Ok(flat)
}

/// `src` cut down to `shape` (a view, when it is larger along some dims), so that its C order
/// matches the index's.
pub(super) fn fit_to(src: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if src.shape() == shape || src.ndim() == 0 {
        return Ok(src.clone());
    }
    let mut cut = src.clone();
    for (d, &n) in shape.iter().enumerate() {
        if cut.shape()[d] != n {
            cut = cut.narrow(d, 0, n)?;
        }
    }
    Ok(cut)
}
