//! The op-by-op path's arithmetic, rounded as PyTorch's CPU kernels round it (`add` with
//! `alpha` is one fused multiply-add, `lerp` switches formula at `|w| = 0.5`, Python scalars are
//! rounded to the tensor's dtype first), so that the path follows PyTorch's trajectories.

use crate::{DType, Result, Tensor};

/// A 0-dim tensor of `p`'s dtype and device holding `v` (rounded to that dtype): the scalar
/// operand of an in-place op.
pub(crate) fn scalar_like(p: &Tensor, v: f64) -> Result<Tensor> {
    Tensor::filled(&[], v, p.dtype(), p.device())
}

/// `v` rounded to `p`'s dtype (what PyTorch's kernels do to a Python scalar): so that a
/// coefficient computed from a rounded scalar (`1 - w` in `lerp`) is computed as PyTorch does.
pub(crate) fn round_to(p: &Tensor, v: f64) -> f64 {
    match p.dtype() {
        // Half-precision kernels take their scalars in `f32` (their compute type).
        DType::F32 | DType::F16 | DType::BF16 => f64::from(v as f32),
        _ => v,
    }
}

/// `m.lerp_(g, w)` as PyTorch's CPU kernel computes it: `m + w (g - m)` for `|w| < 0.5`, else
/// `g - (g - m)(1 - w)`.
pub(crate) fn lerp_(m: &Tensor, g: &Tensor, w: f64) -> Result<()> {
    let w = round_to(m, w);
    let diff = g.sub(m)?;
    if w.abs() < 0.5 {
        m.add_(&diff.mul_scalar(w)?)?;
    } else {
        let one_minus = round_to(m, 1.0 - w);
        m.copy_(&g.sub(&diff.mul_scalar(one_minus)?)?)?;
    }
    Ok(())
}

/// `x + alpha * y` (PyTorch's `add(y, alpha=alpha)`) with one rounding, as PyTorch's CPU kernel
/// computes it (a fused multiply-add): for `f32` through `f64`, where the product of two `f32`
/// values is exact.
pub(crate) fn add_scaled(x: &Tensor, y: &Tensor, alpha: f64) -> Result<Tensor> {
    if alpha == 1.0 {
        return x.add(y);
    }
    match x.dtype() {
        DType::F32 => {
            let alpha = round_to(x, alpha);
            let wide = x
                .to_dtype(DType::F64)?
                .add(&y.to_dtype(DType::F64)?.mul_scalar(alpha)?)?;
            wide.to_dtype(DType::F32)
        }
        _ => x.add(&y.mul_scalar(alpha)?),
    }
}

/// `x += alpha * y` in place, rounded as [`add_scaled`].
pub(crate) fn add_scaled_(x: &Tensor, y: &Tensor, alpha: f64) -> Result<()> {
    if alpha == 1.0 {
        x.add_(y)?;
    } else {
        x.copy_(&add_scaled(x, y, alpha)?)?;
    }
    Ok(())
}

/// `max(a, b)` element-wise for the op-by-op path, as `b + relu(a - b)` (exact when `a` is at
/// most twice `b`, by Sterbenz's lemma; within an ulp otherwise).
pub(crate) fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    b.add(&a.sub(b)?.relu()?)
}
