//! `amax`/`amin` (PyTorch's `AmaxBackward0`/`AminBackward0`): the extremes over dims, the
//! gradient shared evenly among ties; their `Tensor` methods are in `stats.rs`.

use super::stats::{amax_kept, unreduce};
use crate::backend::MapOp;
use crate::layout::Dims;
use crate::tensor::kernels;
use crate::{Result, Tensor};
use autograd_macros::{backward, differentiable, jvp};

/// The maximum over the wrapped `axes` (`min` negates around it).
#[differentiable(builtin, crate = "crate", name = "AmaxBackward0")]
pub(super) fn amax(x: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    extreme(x, &axes, keepdim, false)
}

#[backward(amax)]
pub(super) fn amax_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    extreme_backward(grad, x, result, axes, keepdim, false)
}

/// PyTorch's `amaxamin_jvp`: the mean of the tangent over the entries equal to the result.
#[jvp(amax)]
pub(super) fn amax_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: Dims,
    keepdim: bool,
) -> Result<Tensor> {
    extreme_jvp(x_t, x, result, &axes, keepdim, false)
}

#[differentiable(builtin, crate = "crate", name = "AminBackward0")]
pub(super) fn amin(x: &Tensor, axes: Dims, keepdim: bool) -> Result<Tensor> {
    extreme(x, &axes, keepdim, true)
}

#[backward(amin)]
pub(super) fn amin_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &Dims,
    keepdim: bool,
) -> Result<Tensor> {
    extreme_backward(grad, x, result, axes, keepdim, true)
}

#[jvp(amin)]
pub(super) fn amin_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: Dims,
    keepdim: bool,
) -> Result<Tensor> {
    extreme_jvp(x_t, x, result, &axes, keepdim, true)
}

/// `amax` (or `amin`) over `axes`, a tensor of its own.
pub(super) fn extreme(x: &Tensor, axes: &[usize], keepdim: bool, min: bool) -> Result<Tensor> {
    if axes.is_empty() {
        return x.contiguous_data_owned();
    }
    let src = if min { x.neg()? } else { x.detach() };
    let mut m = amax_kept(&src, axes)?;
    if min {
        m = m.neg()?;
    }
    let m = m.contiguous_data_owned()?;
    if keepdim {
        Ok(m)
    } else {
        Ok(with_shape(m, &x.reduced_shape(axes)))
    }
}

/// PyTorch's `amax`/`amin` gradient: shared evenly among the entries equal to the result.
pub(super) fn extreme_backward(
    grad: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &[usize],
    keepdim: bool,
    min: bool,
) -> Result<Tensor> {
    let g = unreduce(grad, x.shape(), axes, keepdim)?;
    let (ties, count) = extreme_ties(x, result, axes, keepdim, min)?;
    g.div(&count)?.mul(&ties)
}

/// The tangent of `amax`/`amin`: the mean of `x_t` over the entries equal to the result.
pub(super) fn extreme_jvp(
    x_t: &Tensor,
    x: &Tensor,
    result: &Tensor,
    axes: &[usize],
    keepdim: bool,
    min: bool,
) -> Result<Tensor> {
    if axes.is_empty() {
        return x_t.copy();
    }
    let (ties, count) = extreme_ties(x, result, axes, keepdim, min)?;
    let count = if keepdim {
        count
    } else {
        count.reshape(result.shape())?
    };
    x_t.mul(&ties)?.sum_dims(axes, keepdim)?.div(&count)
}

/// Not recorded: 1 at the entries of `x` equal to the result (the ties), 0 elsewhere, and how
/// many there are in each reduced slice (keepdim-shaped).
pub(super) fn extreme_ties(
    x: &Tensor,
    result: &Tensor,
    axes: &[usize],
    keepdim: bool,
    min: bool,
) -> Result<(Tensor, Tensor)> {
    let r = unreduce(&result.detach(), x.shape(), axes, keepdim)?;
    // How far each entry is from the result, on the losing side (< 0) or at it (0);
    // `ClampInterior` is 1 strictly inside (-inf, 0), so 1 - it marks the ties.
    let below = if min {
        r.sub(&x.detach())?
    } else {
        x.detach().sub(&r)?
    };
    let interior = kernels::of_tensor(&below)?.map(
        MapOp::ClampInterior {
            lo: f64::NEG_INFINITY,
            hi: 0.0,
        },
        &below,
    )?;
    let ties = interior.rsub_scalar(1.0)?;
    let count = ties.sum_dims(axes, true)?;
    Ok((ties, count))
}

/// The contiguous new tensor `t` (a kernel's result) read with `shape`: not a view, so an op's
/// result stays a tensor of its own.
pub(super) fn with_shape(t: Tensor, shape: &[usize]) -> Tensor {
    let offset = t.layout().offset;
    t.reinterpret(crate::layout::Layout {
        shape: shape.into(),
        strides: crate::layout::contiguous_strides(shape),
        offset,
    })
}
