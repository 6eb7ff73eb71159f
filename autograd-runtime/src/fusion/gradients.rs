//! The gradient rules of reverse mode, one function per rule: an op's contribution to one
//! operand's gradient, emitted as the op-by-op backward computes it (the formula of the op's
//! `#[backward]` in `ops/`, with the same roundings), so a fused backward gives its bits.

use super::Elementwise;
use super::backward_plan::Backward;
use super::emitter::ScalarArg;
use crate::backend::generated::Inst;
use crate::backend::{BinaryOp, UnaryOp};

/// One op in reverse mode: the op, its value `v`, its operands `a` (and `b`), its scalar
/// argument `s`, and `g`, the register of its incoming gradient.
pub(super) struct Step {
    pub(super) op: Elementwise,
    pub(super) v: u16,
    pub(super) a: u16,
    pub(super) b: u16,
    pub(super) s: u16,
    pub(super) g: u16,
}

/// A gradient rule: the register of the contribution to one operand's gradient.
type Rule = fn(&mut Backward<'_>, &Step) -> Option<u16>;

/// The contribution of `step`'s gradient to its operand `i` (0: `a`, 1: `b`). `None`: a value
/// the rule reads can be neither loaded nor recomputed.
pub(super) fn contribution(b: &mut Backward<'_>, step: &Step, i: usize) -> Option<u16> {
    rule(step.op, i)(b, step)
}

/// The rule of `op` for operand `i`.
fn rule(op: Elementwise, i: usize) -> Rule {
    use Elementwise as E;
    match (op, i) {
        (E::Add | E::AddScalar | E::SubScalar, _) | (E::Sub, 0) => same,
        (E::Sub, _) | (E::Neg | E::RsubScalar, _) => negated,
        (E::Mul, 0) => mul_lhs,
        (E::Mul, _) => mul_rhs,
        (E::Div, 0) => div_lhs,
        (E::Div, _) => div_rhs,
        (E::MulScalar, _) => mul_scalar,
        (E::DivScalar, _) => div_scalar,
        (E::RdivScalar, _) => rdiv_scalar,
        (E::Exp, _) => exp,
        (E::Log, _) => log,
        (E::Sin, _) => sin,
        (E::Cos, _) => cos,
        (E::Tanh, _) => tanh,
        (E::Sigmoid, _) => sigmoid,
        (E::Relu, _) => relu,
        (E::Sqrt, _) => sqrt,
        (E::Abs, _) => abs,
        (E::Pow, _) => pow,
        // The reduced result's gradient, repeated over every element (scaled by 1/n first, as
        // `mean`'s backward does).
        (E::Sum, _) => same,
        (E::Mean, _) => mean,
    }
}

/// `g` (`x + y`, `x ± s`, and `x - y` for `x`; `sum`).
fn same(_: &mut Backward<'_>, st: &Step) -> Option<u16> {
    Some(st.g)
}

/// `-g` (`x - y` for `y`, `-x`, `s - x`).
fn negated(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    b.e.un(UnaryOp::Neg, st.g)
}

/// `g * y` (`x * y` for `x`).
fn mul_lhs(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.b)?;
    b.e.bin(BinaryOp::Mul, st.g, y)
}

/// `g * x` (`x * y` for `y`).
fn mul_rhs(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    b.e.bin(BinaryOp::Mul, st.g, x)
}

/// `g / y` (`x / y` for `x`).
fn div_lhs(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.b)?;
    b.e.bin(BinaryOp::Div, st.g, y)
}

/// `-(g * x / (y * y))` (`x / y` for `y`).
fn div_rhs(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let (x, y) = (b.val(st.a)?, b.val(st.b)?);
    let gx = b.e.bin(BinaryOp::Mul, st.g, x)?;
    let yy = b.e.bin(BinaryOp::Mul, y, y)?;
    let q = b.e.bin(BinaryOp::Div, gx, yy)?;
    b.e.un(UnaryOp::Neg, q)
}

/// `g * s` (`x * s`).
fn mul_scalar(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let s = b.e.scalar(ScalarArg::Raw(st.s))?;
    b.e.bin(BinaryOp::Mul, st.g, s)
}

/// `g * (1 / s)` (`x / s`).
fn div_scalar(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let s = b.e.scalar(ScalarArg::Recip(st.s))?;
    b.e.bin(BinaryOp::Mul, st.g, s)
}

/// `g * (-s) / (x * x)` (`s / x`).
fn rdiv_scalar(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    let s = b.e.scalar(ScalarArg::Neg(st.s))?;
    let gs = b.e.bin(BinaryOp::Mul, st.g, s)?;
    let xx = b.e.bin(BinaryOp::Mul, x, x)?;
    b.e.bin(BinaryOp::Div, gs, xx)
}

/// `g * y`, `y = exp x`.
fn exp(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.v)?;
    b.e.bin(BinaryOp::Mul, st.g, y)
}

/// `g / x`.
fn log(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    b.e.bin(BinaryOp::Div, st.g, x)
}

/// `g * cos x`.
fn sin(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    let c = b.e.un(UnaryOp::Cos, x)?;
    b.e.bin(BinaryOp::Mul, st.g, c)
}

/// `g * -(sin x)`.
fn cos(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    let s = b.e.un(UnaryOp::Sin, x)?;
    let ns = b.e.un(UnaryOp::Neg, s)?;
    b.e.bin(BinaryOp::Mul, st.g, ns)
}

/// `g * (1 - y²)`, `y = tanh x`.
fn tanh(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.v)?;
    let one = b.e.push(Inst::Const(1))?;
    let yy = b.e.bin(BinaryOp::Mul, y, y)?;
    let d = b.e.bin(BinaryOp::Sub, one, yy)?;
    b.e.bin(BinaryOp::Mul, st.g, d)
}

/// `g * (y * (1 - y))`, `y = σ(x)`.
fn sigmoid(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.v)?;
    let one = b.e.push(Inst::Const(1))?;
    let d = b.e.bin(BinaryOp::Sub, one, y)?;
    let yd = b.e.bin(BinaryOp::Mul, y, d)?;
    b.e.bin(BinaryOp::Mul, st.g, yd)
}

/// `g` where `y > 0`, else 0, `y = relu x`.
fn relu(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.v)?;
    b.e.push(Inst::ReluGrad(st.g, y))
}

/// `g / (y + y)`, `y = √x`.
fn sqrt(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let y = b.val(st.v)?;
    let yy = b.e.bin(BinaryOp::Add, y, y)?;
    b.e.bin(BinaryOp::Div, st.g, yy)
}

/// `g * sign x`.
fn abs(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    let sg = b.e.un(UnaryOp::Sign, x)?;
    b.e.bin(BinaryOp::Mul, st.g, sg)
}

/// `g * e * x^(e - 1)` as `pow`'s backward computes it (`Inst::PowGrad`).
fn pow(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let x = b.val(st.a)?;
    let e = b.e.scalar(ScalarArg::Raw(st.s))?;
    let e1 = b.e.scalar(ScalarArg::MinusOne(st.s))?;
    b.e.push(Inst::PowGrad(st.g, x, e, e1))
}

/// `g * (1 / n)`, `n` the element count.
fn mean(b: &mut Backward<'_>, st: &Step) -> Option<u16> {
    let k = b.e.scalar(ScalarArg::InvCount)?;
    b.e.bin(BinaryOp::Mul, st.g, k)
}
