//! The binary element-wise math ops of `math.rs` (`minimum maximum fmod remainder atan2`,
//! and the scalar forms of `fmod`/`remainder`), with the gradients and forward rules of their
//! entries in PyTorch's `derivatives.yaml`; their `Tensor` methods are in `math.rs`.

use super::binary::{no_tangent, product_rule, spread, spread_term};
use crate::backend::BinaryOp;
use crate::{Result, Tensor};
use autograd_macros::{backward, differentiable, jvp};

/// `grad` times `minimum(a, b)`'s share for `a` (`BinaryOp::MinShare`; not recorded: a mask,
/// as PyTorch's `masked_fill` mask, with no derivative).
pub(super) fn min_share(grad: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    grad.mul(&a.binary_kernel(BinaryOp::MinShare, "minimum", b)?)
}

/// `minimum`: `self: where(self == other, grad / 2, grad).masked_fill(self > other, 0)`,
/// `other` the same with `self < other`.
#[differentiable(builtin, crate = "crate", name = "MinimumBackward0", rule)]
pub(super) fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Minimum, "minimum", b)
}

#[backward(minimum)]
pub(super) fn minimum_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    a: &Tensor,
    b: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = needs_input_grad[0]
        .then(|| min_share(grad, a, b))
        .transpose()?;
    let gb = needs_input_grad[1]
        .then(|| min_share(grad, b, a))
        .transpose()?;
    Ok((ga, gb))
}

/// Each tangent times its operand's share of the minimum (PyTorch's
/// `other_t + where(self == other, 0.5, self < other) * (self_t - other_t)`, with the shares of
/// the backward, so that the two modes agree where the operands tie or are NaN).
#[jvp(minimum)]
pub(super) fn minimum_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    product_rule(
        a_t.map(|t| min_share(t, a, b)),
        b_t.map(|t| min_share(t, b, a)),
    )
}

/// `maximum`: `self: where(self == other, grad / 2, grad).masked_fill(self < other, 0)`,
/// `other` the same with `self > other`.
#[differentiable(builtin, crate = "crate", name = "MaximumBackward0", rule)]
pub(super) fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Maximum, "maximum", b)
}

#[backward(maximum)]
pub(super) fn maximum_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    a: &Tensor,
    b: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = needs_input_grad[0]
        .then(|| min_share(grad, b, a))
        .transpose()?;
    let gb = needs_input_grad[1]
        .then(|| min_share(grad, a, b))
        .transpose()?;
    Ok((ga, gb))
}

/// Each tangent times its operand's share of the maximum, as [`minimum_jvp`].
#[jvp(maximum)]
pub(super) fn maximum_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    product_rule(
        a_t.map(|t| min_share(t, b, a)),
        b_t.map(|t| min_share(t, a, b)),
    )
}

/// `fmod.Tensor`: `self: grad`, `other: -grad * self.div(other, rounding_mode="trunc")`.
#[differentiable(builtin, crate = "crate", name = "FmodBackward1", rule)]
pub(super) fn fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Fmod, "fmod", b)
}

#[backward(fmod)]
pub(super) fn fmod_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    b: &Tensor,
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = needs_input_grad[0].then(|| grad.clone());
    let gb = a
        .map(|a| grad.mul(&a.div(b)?.trunc()?)?.neg())
        .transpose()?;
    Ok((ga, gb))
}

/// `self_t - other_t * self.div(other, rounding_mode="trunc")`.
#[jvp(fmod)]
pub(super) fn fmod_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    rounded_quotient_jvp(a_t, b_t, result, || a.div(b)?.trunc())
}

/// `ȧ - ḃ q` for `fmod` and `remainder`, `q` the rounded quotient (made only when `ḃ` is
/// given).
pub(super) fn rounded_quotient_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    result: &Tensor,
    quotient: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => a_t.sub(&b_t.mul(&quotient()?)?),
        (Some(a_t), None) => spread(a_t, result),
        (None, Some(b_t)) => spread_term(b_t.mul(&quotient()?)?.neg()?, result),
        (None, None) => no_tangent(),
    }
}

/// `remainder.Tensor`: `self: grad`, `other: -grad * self.div(other, rounding_mode="floor")`.
#[differentiable(builtin, crate = "crate", name = "RemainderBackward1", rule)]
pub(super) fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Remainder, "remainder", b)
}

#[backward(remainder)]
pub(super) fn remainder_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    b: &Tensor,
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = needs_input_grad[0].then(|| grad.clone());
    let gb = a
        .map(|a| grad.mul(&floor_quotient(a, b)?)?.neg())
        .transpose()?;
    Ok((ga, gb))
}

/// `a.div(b, rounding_mode="floor")` for floating `a` and `b`, as PyTorch's
/// `div_floor_floating` computes it (not `floor(a / b)`, which differs where `a / b` rounds up
/// to an integer: `1.0 // 0.1` is 9, `floor(1.0 / 0.1)` 10). The quotient `q` of
/// `a = q b + remainder(a, b)`, exact in every case but the huge ones. A constant (its
/// derivative is zero, as PyTorch's rounding `div`'s): computed on detached values.
///
/// With `m = fmod(a, b)`: `d = (a - m) / b`, one less where `m` is nonzero and its sign differs
/// from `b`'s, then `floor(d)`, one more where `d - floor(d) > 0.5`; a zero `d` takes the sign
/// of `a / b`; `b == 0` gives `a / b`.
fn floor_quotient(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = (a.detach(), b.detach());
    let m = a.fmod(&b)?;
    let d = a.sub(&m)?.div(&b)?;
    let signs_differ = b.lt_scalar(0)?.ne(&m.lt_scalar(0)?)?;
    let d = Tensor::where_(&m.ne_scalar(0)?.mul(&signs_differ)?, &d.sub_scalar(1)?, &d)?;
    let floor = d.floor()?;
    let floor = Tensor::where_(
        &d.sub(&floor)?.gt_scalar(0.5)?,
        &floor.add_scalar(1)?,
        &floor,
    )?;
    let quotient = a.div(&b)?;
    // `copysign(0, a / b)`: `a / b` is finite there (`|a| < |b|`, or `a` zero).
    let floor = Tensor::where_(&d.eq_scalar(0)?, &quotient.mul_scalar(0.0)?, &floor)?;
    Tensor::where_(&b.eq_scalar(0)?, &quotient, &floor)
}

/// `self_t - other_t * self.div(other, rounding_mode="floor")`.
#[jvp(remainder)]
pub(super) fn remainder_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    rounded_quotient_jvp(a_t, b_t, result, || floor_quotient(a, b))
}

/// `atan2: atan2_backward`: with `r = 1 / (self² + other²)`, `self: grad * other * r`,
/// `other: grad * -self * r`.
#[differentiable(builtin, crate = "crate", name = "Atan2Backward0", rule)]
pub(super) fn atan2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Atan2, "atan2", b)
}

#[backward(atan2)]
pub(super) fn atan2_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    a: &Tensor,
    b: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let r = a.mul(a)?.add(&b.mul(b)?)?.reciprocal()?;
    let ga = needs_input_grad[0]
        .then(|| grad.mul(b)?.mul(&r))
        .transpose()?;
    let gb = needs_input_grad[1]
        .then(|| grad.mul(&a.neg()?)?.mul(&r))
        .transpose()?;
    Ok((ga, gb))
}

/// `(other · self_t - self · other_t) / (self² + other²)`.
#[jvp(atan2)]
pub(super) fn atan2_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    let numerator = match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => a_t.mul(b)?.sub(&b_t.mul(a)?)?,
        (Some(a_t), None) => a_t.mul(b)?,
        (None, Some(b_t)) => b_t.mul(a)?.neg()?,
        (None, None) => return no_tangent(),
    };
    numerator.div(&a.mul(a)?.add(&b.mul(b)?)?)
}

/// `fmod.Scalar: grad`.
#[differentiable(builtin, crate = "crate", name = "FmodBackward0", rule)]
pub(super) fn fmod_scalar(x: &Tensor, other: f64) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Fmod, other, false)
}

#[backward(fmod_scalar)]
pub(super) fn fmod_scalar_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

/// `ẋ`, in a tensor of its own.
#[jvp(fmod_scalar)]
pub(super) fn fmod_scalar_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.copy()
}

/// `remainder.Scalar: grad`.
#[differentiable(builtin, crate = "crate", name = "RemainderBackward0", rule)]
pub(super) fn remainder_scalar(x: &Tensor, other: f64) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Remainder, other, false)
}

#[backward(remainder_scalar)]
pub(super) fn remainder_scalar_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

/// `ẋ`, in a tensor of its own.
#[jvp(remainder_scalar)]
pub(super) fn remainder_scalar_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.copy()
}
