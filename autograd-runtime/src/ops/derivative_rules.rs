//! `DerivativeRules`: the per-op gradient rules that `#[differentiable(derive)]` applies in
//! reverse order. The rules themselves sit beside their ops (`impl DerivativeRules` blocks in
//! `unary.rs`, `binary.rs`, `reduce.rs`, `linalg.rs`); this file holds the type, its calling
//! convention and the helpers the derived backward uses.

use crate::backend::BinaryOp;
use crate::{Result, Tensor};

/// The derivative rules of the tensor methods, one associated function per method, named like
/// the method (`DerivativeRules::exp` is the rule of [`Tensor::exp`]).
///
/// `#[differentiable(derive)]` turns each tensor method call `x.m(..)` (and each operator) of a
/// derived body into a call of `DerivativeRules::m`. A method without a rule is a compile error
/// at that call: "no function or associated item named `m` found for struct `DerivativeRules`".
/// Add the rule beside the op, or write the backward by hand with `#[backward]`.
///
/// Calling convention, for an op with tensor operands `a, ..` (receiver first), result `result`
/// and non-tensor arguments `s, ..`:
///
/// * one tensor operand: `fn m(grad: &Tensor, a: &Tensor, result: &Tensor, s, ..) ->
///   Result<Tensor>`, called only when `a` needs a gradient;
/// * `N > 1` tensor operands: `fn m(grad: &Tensor, needs: [bool; N], a: &Tensor, .., result:
///   &Tensor, s, ..) -> Result<(Option<Tensor>, ..)>`, one gradient per operand (`None` where
///   `needs` is false), each already reduced to its operand's shape.
///
/// Rules are written with differentiable tensor ops, so a derived backward run with
/// `create_graph` is recorded and can be differentiated again.
#[doc(hidden)]
#[derive(Debug)]
pub struct DerivativeRules;

/// `acc + g`, where either may be absent: sums the gradients of a value used several times.
/// Both are the derived backward's own locals, used for the last time: the sum is written over
/// whichever nothing else references, when the backward is not recorded.
#[doc(hidden)]
pub fn accumulate(acc: Option<Tensor>, g: Option<Tensor>) -> Result<Option<Tensor>> {
    match (acc, g) {
        (Some(a), Some(g)) if !a.is_uniquely_owned() && g.is_uniquely_owned() => {
            Ok(Some(g.last_use(BinaryOp::Add, &a)?))
        }
        (Some(a), Some(g)) => Ok(Some(a.last_use(BinaryOp::Add, &g)?)),
        (a, None) => Ok(a),
        (None, g) => Ok(g),
    }
}

/// `grad` summed down to `like`'s shape when an op broadcast `like` (PyTorch's `sum_to_size`).
fn reduce_to(grad: Tensor, like: &Tensor) -> Result<Tensor> {
    if grad.shape() == like.shape() {
        Ok(grad)
    } else {
        grad.sum_to_shape(like.shape())
    }
}

/// Both gradients of a two-operand rule, each summed down to its operand's shape.
pub(crate) fn reduce_pair(
    (ga, gb): (Option<Tensor>, Option<Tensor>),
    a: &Tensor,
    b: &Tensor,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((
        ga.map(|g| reduce_to(g, a)).transpose()?,
        gb.map(|g| reduce_to(g, b)).transpose()?,
    ))
}
