//! Differentiable primitive ops. Each op is a kernel call from `backend/` plus a small
//! [`Backward`](crate::graph::Backward) holding what its gradient formula needs; the formulas are
//! written with tensor ops, so with `create_graph` they are recorded and differentiable again.

mod binary;
mod device;
mod index;
mod inplace;
mod linalg;
mod operators;
mod reduce;
mod shape;
mod softmax;
mod unary;

use crate::backend::cpu::BroadcastError;
use crate::Error;

impl From<BroadcastError> for Error {
    fn from(e: BroadcastError) -> Error {
        Error::Broadcast {
            size_a: e.size_a,
            size_b: e.size_b,
            dim: e.dim,
        }
    }
}

/// Whether `shape` can be broadcast (expanded) to `target`.
pub(crate) fn is_expandable_to(shape: &[usize], target: &[usize]) -> bool {
    if shape.len() > target.len() {
        return false;
    }
    shape
        .iter()
        .rev()
        .zip(target.iter().rev())
        .all(|(&s, &t)| s == t || s == 1)
}
