//! The IR: a derived body as the macro writes it, one [`Var`] per body value, every live
//! op [`Elementwise`].

use crate::backend::UnaryOp;

/// An element-wise op a fused program can hold: the tensor methods and operators of a derived
/// body that map one element to one element.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elementwise {
    Add,
    Sub,
    Mul,
    Div,
    AddScalar,
    SubScalar,
    MulScalar,
    DivScalar,
    RsubScalar,
    RdivScalar,
    Neg,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Sqrt,
    Abs,
    Pow,
    /// `x.sum()`, all elements: only as a result (its value is no other op's operand).
    Sum,
    /// `x.mean()`, all elements: only as a result.
    Mean,
}

impl Elementwise {
    /// Whether the op reduces every element to one (`sum`, `mean`).
    pub(super) fn is_reduction(self) -> bool {
        matches!(self, Elementwise::Sum | Elementwise::Mean)
    }

    /// Whether the op takes two tensor operands.
    pub(super) fn is_binary(self) -> bool {
        matches!(
            self,
            Elementwise::Add | Elementwise::Sub | Elementwise::Mul | Elementwise::Div
        )
    }

    /// The backend's name for a one-operand op with no scalar.
    pub(super) fn unary(self) -> Option<UnaryOp> {
        Some(match self {
            Elementwise::Neg => UnaryOp::Neg,
            Elementwise::Exp => UnaryOp::Exp,
            Elementwise::Log => UnaryOp::Log,
            Elementwise::Sin => UnaryOp::Sin,
            Elementwise::Cos => UnaryOp::Cos,
            Elementwise::Tanh => UnaryOp::Tanh,
            Elementwise::Sigmoid => UnaryOp::Sigmoid,
            Elementwise::Relu => UnaryOp::Relu,
            Elementwise::Sqrt => UnaryOp::Sqrt,
            Elementwise::Abs => UnaryOp::Abs,
            _ => return None,
        })
    }
}

/// One value of a derived body, numbered as the body's values are (inputs first, then one per
/// op, in order).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// Tensor input number `k`.
    Input(u16),
    /// `op(a)` or `op(a, b)`; `s` indexes the scalar arguments (one per op that takes one, in
    /// order). Unused operands are 0.
    Op {
        op: Elementwise,
        a: u16,
        b: u16,
        s: u16,
    },
    /// A value no result depends on: neither kernel computes it.
    Dead,
}

/// A derived body whose every live op is element-wise, as the macro writes it.
#[doc(hidden)]
#[derive(Debug)]
pub struct Program {
    pub vars: &'static [Var],
    /// The values returned, in order.
    pub outputs: &'static [u16],
}

/// Whether a reduction's value is an operand of another op (the kernels compute every other
/// value at the inputs' shape, so a reduced value may only be a result).
pub(super) fn reduction_used(prog: &Program) -> bool {
    let reduced = |v: u16| matches!(prog.vars.get(usize::from(v)), Some(Var::Op { op, .. }) if op.is_reduction());
    prog.vars.iter().any(|var| match *var {
        Var::Op { op, a, b, .. } => reduced(a) || (op.is_binary() && reduced(b)),
        _ => false,
    })
}
