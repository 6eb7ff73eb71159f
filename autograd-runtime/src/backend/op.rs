//! The kinds of element-wise work an op asks a backend for: backend-neutral names, so that every
//! backend (CPU and CUDA) implements the same set.

/// An element-wise function of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// Natural logarithm.
    Log,
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// `tanh x`
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `max(x, 0)`; NaN stays NaN.
    Relu,
    /// Square root.
    Sqrt,
    /// `|x|`
    Abs,
    /// -1, 0 or 1 by the sign of `x` (zero keeps its sign bit); NaN stays NaN.
    Sign,
    /// 1 where x > 0, else 0 (relu's derivative).
    PositiveMask,
}

impl UnaryOp {
    /// The op's number in the CUDA kernels' `unary_op` switch (declaration order).
    pub(crate) fn code(self) -> u8 {
        match self {
            UnaryOp::Neg => 0,
            UnaryOp::Exp => 1,
            UnaryOp::Log => 2,
            UnaryOp::Sin => 3,
            UnaryOp::Cos => 4,
            UnaryOp::Tanh => 5,
            UnaryOp::Sigmoid => 6,
            UnaryOp::Relu => 7,
            UnaryOp::Sqrt => 8,
            UnaryOp::Abs => 9,
            UnaryOp::Sign => 10,
            UnaryOp::PositiveMask => 11,
        }
    }
}

/// An element-wise function of two tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    /// `x + y`
    Add,
    /// `x - y`
    Sub,
    /// `x * y`
    Mul,
    /// `x / y`
    Div,
}

/// A grad formula: the backward formula of a built-in element-wise op, named after the op,
/// computed in one pass with one output (`Backend::grad_formula`). `a` is always the incoming
/// gradient `g`; `b` is what the formula saved. Not to be confused with fusion (`fusion/`, a
/// derived body as a generated kernel) or the optimizers' fused steps (`optim/fused_step.rs`, `Backend::fused_step`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum GradFormula {
    /// `g * (1 - y²)`, `y = tanh x`.
    Tanh,
    /// `g * y * (1 - y)`, `y = σ(x)`.
    Sigmoid,
    /// `g` where `y > 0`, else 0 (`y = relu x`).
    Relu,
    /// `g / (2y)`, `y = √x`.
    Sqrt,
    /// `g * sign x`.
    Abs,
    /// `g * cos x` (the gradient of `sin`).
    Sin,
    /// `-g * sin x` (the gradient of `cos`).
    Cos,
    /// `g * e * x^(e - 1)`.
    Pow {
        /// The exponent `e` of the forward `x^e`.
        exponent: f64,
    },
}

impl GradFormula {
    /// Whether the formula is plain arithmetic (no transcendental function): those run in
    /// one pass, and can write their result over the gradient's buffer.
    pub(crate) fn is_closed_form(self) -> bool {
        match self {
            GradFormula::Tanh
            | GradFormula::Sigmoid
            | GradFormula::Relu
            | GradFormula::Sqrt
            | GradFormula::Abs => true,
            GradFormula::Pow { exponent } => exponent == 2.0,
            GradFormula::Sin | GradFormula::Cos => false,
        }
    }
}

/// An element-wise function with parameters that is not arithmetic on the vectorised paths:
/// each backend runs it as one pass (one launch on a device).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum MapOp {
    /// `min(max(x, lo), hi)` with the bounds rounded to the element type; NaN stays NaN.
    Clamp {
        /// The lower bound (`-inf`: none).
        lo: f64,
        /// The upper bound (`inf`: none).
        hi: f64,
    },
    /// 1 where `lo < x < hi`, else 0 (a bound itself and NaN included): clamp's gradient mask.
    ClampInterior {
        /// The lower bound.
        lo: f64,
        /// The upper bound.
        hi: f64,
    },
    /// The error function, computed in `f64` and rounded to the element type.
    Erf,
}
