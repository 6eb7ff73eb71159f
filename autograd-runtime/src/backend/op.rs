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
    /// `ln(1 + x)`, accurate near 0.
    Log1p,
    /// `e^x - 1`, accurate near 0.
    Expm1,
    /// Base-2 logarithm.
    Log2,
    /// `2^x`
    Exp2,
    /// `1 / √x`
    Rsqrt,
    /// `x σ(x)`
    Silu,
    /// `x tanh(softplus x)`, softplus with PyTorch's threshold 20.
    Mish,
    /// Largest integer not above `x`.
    Floor,
    /// Smallest integer not below `x`.
    Ceil,
    /// Nearest integer, halves to even (PyTorch's `round`).
    Round,
    /// Integer part, towards zero.
    Trunc,
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
            UnaryOp::Log1p => 12,
            UnaryOp::Expm1 => 13,
            UnaryOp::Log2 => 14,
            UnaryOp::Exp2 => 15,
            UnaryOp::Rsqrt => 16,
            UnaryOp::Silu => 17,
            UnaryOp::Mish => 18,
            UnaryOp::Floor => 19,
            UnaryOp::Ceil => 20,
            UnaryOp::Round => 21,
            UnaryOp::Trunc => 22,
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
    /// The smaller of `x` and `y`; NaN if either is NaN (PyTorch's `minimum`).
    Minimum,
    /// The larger of `x` and `y`; NaN if either is NaN (PyTorch's `maximum`).
    Maximum,
    /// `x - trunc(x / y) y`: the C `fmod`, the sign of `x`.
    Fmod,
    /// `x - floor(x / y) y`: the sign of `y` (PyTorch's `remainder`).
    Remainder,
    /// `atan2(x, y)`: the angle of the point `(y, x)`.
    Atan2,
    /// The share of the gradient of `minimum(x, y)` that goes to `x`: 1 where `x < y`, ½
    /// where `x == y`, 0 where `x > y`, 1 where either is NaN (PyTorch's `masked_fill` rule in
    /// `derivatives.yaml`; `maximum`'s shares are this with the operands swapped).
    MinShare,
}

impl BinaryOp {
    /// The op's number in the CUDA kernels' `binary_op` switch (declaration order).
    pub(crate) fn code(self) -> u8 {
        match self {
            BinaryOp::Add => 0,
            BinaryOp::Sub => 1,
            BinaryOp::Mul => 2,
            BinaryOp::Div => 3,
            BinaryOp::Minimum => 4,
            BinaryOp::Maximum => 5,
            BinaryOp::Fmod => 6,
            BinaryOp::Remainder => 7,
            BinaryOp::Atan2 => 8,
            BinaryOp::MinShare => 9,
        }
    }
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
    /// `log(1 + e^(βx)) / β`, or `x` where `βx > threshold` (PyTorch's `softplus`).
    Softplus {
        /// `β`.
        beta: f64,
        /// Above this, `βx` is returned as is.
        threshold: f64,
    },
    /// Softplus's slope: `σ(βx)`, or 1 where `βx > threshold`.
    SoftplusSlope {
        /// `β`.
        beta: f64,
        /// Above this, the slope is 1.
        threshold: f64,
    },
}

/// A comparison, element-wise, giving a bool tensor (`eq ne lt le gt ge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompareOp {
    /// `x == y`
    Eq,
    /// `x != y` (true where either is NaN)
    Ne,
    /// `x < y`
    Lt,
    /// `x <= y`
    Le,
    /// `x > y`
    Gt,
    /// `x >= y`
    Ge,
}

impl CompareOp {
    /// Whether `a (op) b` holds (IEEE semantics for floats: only `!=` holds with a NaN).
    #[inline]
    pub(crate) fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CompareOp::Eq => a == b,
            CompareOp::Ne => a != b,
            CompareOp::Lt => a < b,
            CompareOp::Le => a <= b,
            CompareOp::Gt => a > b,
            CompareOp::Ge => a >= b,
        }
    }

    /// PyTorch's name of the op.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }
}
