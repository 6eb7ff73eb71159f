//! The emitter: straight-line code for a generated kernel, one register per instruction, and
//! what the kernel's inputs and scalars are.

use super::Elementwise;
use crate::backend::generated::Inst;
use crate::backend::{BinaryOp, UnaryOp};

/// A scalar a kernel takes, from the program's scalar arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum ScalarArg {
    Raw(u16),
    Neg(u16),
    Recip(u16),
    /// `s - 1` (`pow`'s gradient exponent).
    MinusOne(u16),
    /// `1 / n`, `n` the element count (`mean`'s gradient scale).
    InvCount,
}

impl ScalarArg {
    /// The value, computed in `f64` as the op-by-op path computes it before converting, for a
    /// kernel over `n` elements.
    pub(super) fn value(self, scalars: &[f64], n: usize) -> f64 {
        match self {
            ScalarArg::Raw(k) => scalars[usize::from(k)],
            ScalarArg::Neg(k) => -scalars[usize::from(k)],
            ScalarArg::Recip(k) => 1.0 / scalars[usize::from(k)],
            ScalarArg::MinusOne(k) => scalars[usize::from(k)] - 1.0,
            ScalarArg::InvCount => 1.0 / n as f64,
        }
    }
}

/// Where a kernel input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// Tensor input `k` of the forward.
    Input(u16),
    /// The incoming gradient of result `j`.
    Grad(u16),
    /// The kept value of body value `v`.
    Value(u16),
}

/// `item`'s index in `list`, appended if it is not there yet.
fn index_of<T: PartialEq>(list: &mut Vec<T>, item: T) -> Option<u16> {
    let k = match list.iter().position(|x| *x == item) {
        Some(k) => k,
        None => {
            list.push(item);
            list.len() - 1
        }
    };
    u16::try_from(k).ok()
}

/// Builds straight-line code, one register per instruction.
#[derive(Default)]
pub(super) struct Emitter {
    pub(super) insts: Vec<Inst>,
    pub(super) sources: Vec<Source>,
    pub(super) scalars: Vec<ScalarArg>,
}

impl Emitter {
    pub(super) fn push(&mut self, inst: Inst) -> Option<u16> {
        self.insts.push(inst);
        u16::try_from(self.insts.len() - 1).ok()
    }

    pub(super) fn load(&mut self, source: Source) -> Option<u16> {
        let k = index_of(&mut self.sources, source)?;
        self.push(Inst::Load(k))
    }

    pub(super) fn scalar(&mut self, arg: ScalarArg) -> Option<u16> {
        let k = index_of(&mut self.scalars, arg)?;
        self.push(Inst::Scalar(k))
    }

    pub(super) fn bin(&mut self, op: BinaryOp, a: u16, b: u16) -> Option<u16> {
        self.push(Inst::Binary(op, a, b))
    }

    pub(super) fn un(&mut self, op: UnaryOp, a: u16) -> Option<u16> {
        self.push(Inst::Unary(op, a))
    }

    /// The forward formula of `op` on registers `a` (and `b`), as the op-by-op kernels
    /// compute it.
    pub(super) fn forward_op(&mut self, op: Elementwise, a: u16, b: u16, s: u16) -> Option<u16> {
        use Elementwise as E;
        match op {
            E::Add => self.bin(BinaryOp::Add, a, b),
            E::Sub => self.bin(BinaryOp::Sub, a, b),
            E::Mul => self.bin(BinaryOp::Mul, a, b),
            E::Div => self.bin(BinaryOp::Div, a, b),
            // `x - s` runs as `x + (-s)`, `x / s` as `x * (1 / s)` (`Tensor::sub_scalar`,
            // `Tensor::div_scalar`); `s - x` with the scalar on the left.
            E::AddScalar | E::SubScalar | E::MulScalar | E::DivScalar | E::RsubScalar => {
                let (arg, bin) = match op {
                    E::AddScalar => (ScalarArg::Raw(s), BinaryOp::Add),
                    E::SubScalar => (ScalarArg::Neg(s), BinaryOp::Add),
                    E::MulScalar => (ScalarArg::Raw(s), BinaryOp::Mul),
                    E::DivScalar => (ScalarArg::Recip(s), BinaryOp::Mul),
                    _ => (ScalarArg::Raw(s), BinaryOp::Sub),
                };
                let s = self.scalar(arg)?;
                if op == E::RsubScalar {
                    self.bin(bin, s, a)
                } else {
                    self.bin(bin, a, s)
                }
            }
            // `s / x` runs as `reciprocal(x) * s`.
            E::RdivScalar => {
                let one = self.push(Inst::Const(1))?;
                let r = self.bin(BinaryOp::Div, one, a)?;
                let s = self.scalar(ScalarArg::Raw(s))?;
                self.bin(BinaryOp::Mul, r, s)
            }
            E::Pow => {
                let e = self.scalar(ScalarArg::Raw(s))?;
                self.push(Inst::Pow(a, e))
            }
            // A reduced value is not an element's: the kernels never compute one.
            E::Sum | E::Mean => None,
            _ => self.un(op.unary()?, a),
        }
    }
}
