//! The derivative rules of the selecting ops (`gather`, `sort`, `topk`, `min_dim`) for
//! `#[differentiable(derive)]` (see `derivative_rules.rs`).
//!
//! A derived body keeps tensors, not the positions an op picked, so each rule reads the kept
//! input, finds the positions again (the same call gives the same positions) and adds the
//! gradient there into zeros of the input's shape, with `scatter_add`: the recorded op's
//! `ScatterAddBackward0`, so a derived backward run with `create_graph` differentiates again.

use super::derivative_rules::{Read, Reads, Rule};
use crate::{Result, Tensor};

/// Zeros of `x`'s shape with `grad` added at `index` along `dim` (PyTorch's
/// `grad.new_zeros(x.shape).scatter_add(dim, index, grad)`, the backward of `gather`).
fn put_back(grad: &Tensor, x: &Tensor, dim: isize, index: &Tensor) -> Result<Tensor> {
    Tensor::filled(x.shape(), 0.0, grad.dtype(), grad.device())?.scatter_add(dim, index, grad)
}

/// A rule that reads its input's values and nothing else.
const READS_INPUT: Reads = Reads {
    operands: &[Read::Value],
    result: false,
    value_for: &[],
};

#[doc(hidden)]
#[allow(non_upper_case_globals, clippy::type_complexity)]
impl super::DerivativeRules {
    /// `x.gather(dim, &index)`: the index is an operand (kept by value), never differentiated.
    pub const gather: Rule<
        fn(
            &Tensor,
            [bool; 2],
            &Tensor,
            &Tensor,
            &Tensor,
            isize,
        ) -> Result<(Option<Tensor>, Option<Tensor>)>,
    > = Rule {
        reads: Reads {
            operands: &[Read::Shape, Read::Value],
            result: false,
            value_for: &[],
        },
        apply: |grad, needs, x, index, _result, dim| {
            let gx = if needs[0] {
                Some(put_back(grad, x, dim, index)?)
            } else {
                None
            };
            Ok((gx, None))
        },
    };

    /// `x.sort(dim, descending, stable)`'s values.
    pub const sort: Rule<fn(&Tensor, &Tensor, &Tensor, isize, bool, bool) -> Result<Tensor>> =
        Rule {
            reads: READS_INPUT,
            apply: |grad, x, _result, dim, descending, stable| {
                let (_, index) = x.detach().sort(dim, descending, stable)?;
                put_back(grad, x, dim, &index)
            },
        };

    /// `x.topk(k, dim, largest, sorted)`'s values.
    pub const topk: Rule<
        fn(&Tensor, &Tensor, &Tensor, usize, isize, bool, bool) -> Result<Tensor>,
    > = Rule {
        reads: READS_INPUT,
        apply: |grad, x, _result, k, dim, largest, sorted| {
            let (_, index) = x.detach().topk(k, dim, largest, sorted)?;
            put_back(grad, x, dim, &index)
        },
    };

    /// `x.min_dim(dim, keepdim)`'s values.
    pub const min_dim: Rule<fn(&Tensor, &Tensor, &Tensor, usize, bool) -> Result<Tensor>> = Rule {
        reads: READS_INPUT,
        apply: |grad, x, _result, dim, keepdim| {
            let (_, index) = x.detach().min_dim(dim, true)?;
            let grad = if keepdim || x.ndim() == 0 {
                grad.clone()
            } else {
                grad.unsqueeze(dim as isize)?
            };
            put_back(&grad, x, dim as isize, &index)
        },
    };
}
