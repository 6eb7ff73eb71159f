//! Differentiable primitive ops, declared the way PyTorch generates its `*Backward0` nodes from
//! `derivatives.yaml`: each op is a `#[differentiable(builtin, crate = "crate")]` function whose
//! body is a kernel call from `backend/`, and a `#[backward]` function, its gradient formula, which
//! names what it needs (inputs, `result`, attributes, an input's `InputMetadata`, `needs_input_grad`)
//! so that exactly that is saved. The formulas are written with tensor ops, so with
//! `create_graph` they are recorded and differentiable again. The public `Tensor` methods
//! validate their arguments and call the declared functions; only engine-internal nodes
//! (`AccumulateGrad`, `GraphRoot`, in `graph/`) are written by hand.
//!
//! What each backward names is what PyTorch's `derivatives.yaml` entry saves for the op (`exp`,
//! `tanh`, `sigmoid`, `relu`, `sqrt`, `reciprocal`, `softmax`, `log_softmax` their result; `log`,
//! `sin`, `cos`, `abs`, `pow` their input; `mul`, `div`, `matmul` the other operand, and the
//! first only when the second needs its gradient; views, reductions, `cat`, `index_select` and
//! `max_dim` only shapes and indices), and it is unpacked in the same order (`other` before
//! `self`), so modifying a tensor in place fails the version check exactly where PyTorch's
//! does, with the same tensor named. `s / x` is recorded as PyTorch records it:
//! `reciprocal(x) * s`.
//!
//! `builtin` gives the nodes PyTorch's built-in semantics: a node whose incoming gradients are
//! all undefined returns undefined gradients without running, and in-place ops (`dirty`) are
//! checked by [`check_inplace`] before their kernel runs.
//!
//! The declaration is the only place that says what an op's backward reads: `rule` on it makes
//! the macro generate the op's `DerivativeRules` entry (for `#[differentiable(derive)]` bodies)
//! from its `#[backward]`, and `formula = GradFormula::..` on the `#[backward]` names the grad
//! formula kernel that computes the formula in one pass, from the one tensor the backward names,
//! when it is not recorded (`Tensor::grad_formula_or`).

mod binary;
mod clamp;
mod compare;
mod derivative_rules;
mod device;
mod dims;
mod einsum;
mod erf;
mod extrema;
mod index;
mod inplace;
mod join;
mod linalg;
mod math;
mod math_binary;
mod operators;
mod promote;
mod reduce;
mod reorder;
mod scatter;
mod scatter_checks;
mod selection_rules;
mod shape;
mod softmax;
mod sort;
mod stats;
mod strided;
#[cfg(test)]
mod tests;
mod unary;

pub use clamp::ClampBound;
pub use derivative_rules::{
    Binary, DerivativeRules, Read, Reads, Rule, Unary, UnaryWith, accumulate, keep, keep_ref,
    needing_grad, reduce_grad,
};
pub use einsum::einsum;
pub use inplace::check_inplace;
pub use promote::{Scalar, result_type};
pub(crate) use softmax::AttnMask;

use crate::backend::BroadcastError;
use crate::{Error, Result, Tensor};

impl From<BroadcastError> for Error {
    fn from(e: BroadcastError) -> Error {
        Error::Broadcast {
            size_a: e.size_a,
            size_b: e.size_b,
            dim: e.dim,
        }
    }
}

// ----- helpers of the `#[jvp]` rules ---------------------------------------------------------------

/// `view`, a view op applied to `x_t` (an input's tangent) by the op's `#[jvp]`, marked as made
/// from `x_t` the way the public view methods mark their results.
pub(crate) fn tangent_view(view: Result<Tensor>, x_t: &Tensor) -> Result<Tensor> {
    let view = view?;
    view.set_view_creation(x_t, false);
    Ok(view)
}

/// An absent tangent as zeros of `like`'s shape and dtype (for a rule that applies its op to
/// every input's tangent).
pub(crate) fn tangent_or_zeros(t: Option<&Tensor>, like: &Tensor) -> Result<Tensor> {
    match t {
        Some(t) => Ok(t.clone()),
        None => like.zeros_like(),
    }
}

/// The tangents of a two-input op that applies itself to both: absent ones as zeros, both in
/// their promoted dtype (the op's kernels take one dtype).
pub(crate) fn tangent_pair(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
) -> Result<(Tensor, Tensor)> {
    let (a_t, b_t) = (tangent_or_zeros(a_t, a)?, tangent_or_zeros(b_t, b)?);
    let dtype = result_type(&a_t, &b_t);
    Ok((a_t.to_dtype(dtype)?, b_t.to_dtype(dtype)?))
}

/// Whether a backward formula over `inputs` is itself recorded (a `create_graph` pass where one
/// of them requires grad). Then it is written in differentiable ops, so it has a gradient of its
/// own; otherwise it runs as one fused kernel: one pass, one output, no temporaries.
#[inline]
pub(crate) fn records(inputs: &[&Tensor]) -> bool {
    crate::grad_mode::is_recording() && inputs.iter().any(|t| t.requires_grad())
}
