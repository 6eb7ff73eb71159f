//! The CPU's run of a [`GeneratedKernel`]: each instruction interpreted per element, with the
//! CPU kernels' own element functions (`with_unary_fn!`, `vmath`, `dense::pow_scalar`'s exact
//! cases). Not a fast path (the CPU runs a derived function op by op, on SIMD lanes); it is how
//! a fused forward and backward are exercised where there is no GPU.

use super::formulas::with_unary_fn;
use super::vmath::{VMath, powf};
use super::{BinaryOp, UnaryOp};
use crate::backend::generated::{GeneratedKernel, Inst};
use crate::backend::{Buffer, ElemVec};
use crate::{Element, Error, Result};

/// Runs `k` over `n` elements of `inputs` (buffers of `T`: dense, or one value where
/// `repeated` says so), one new buffer per output.
pub(crate) fn run<T: Element + VMath>(
    k: &GeneratedKernel,
    inputs: &[&Buffer],
    repeated: &[bool],
    scalars: &[f64],
    n: usize,
) -> Result<Vec<Buffer>> {
    let repeated: Vec<bool> = (0..inputs.len())
        .map(|j| repeated.get(j).copied().unwrap_or(false))
        .collect();
    let inputs: Vec<&[T]> = inputs
        .iter()
        .zip(&repeated)
        .map(|(b, &one)| {
            b.as_slice::<T>()
                .filter(|s| s.len() >= if one { 1 } else { n })
                .ok_or(Error::WrongDType {
                    expected: T::DTYPE,
                    actual: b.dtype(),
                })
        })
        .collect::<Result<_>>()?;
    let scalars: Vec<T> = scalars.iter().map(|&s| T::from_f64(s)).collect();
    let mut outs: Vec<ElemVec<T>> = k
        .outputs
        .iter()
        .map(|_| ElemVec::with_capacity(n))
        .collect();
    let mut r: Vec<T> = vec![T::zero(); k.insts.len()];
    for i in 0..n {
        for (j, inst) in k.insts.iter().enumerate() {
            r[j] = step(*inst, &r, &inputs, &repeated, &scalars, i);
        }
        for (out, &reg) in outs.iter_mut().zip(&k.outputs) {
            out.push(r[usize::from(reg)]);
        }
    }
    Ok(outs.into_iter().map(Buffer::host).collect())
}

/// The value of one instruction at element `i`, given the registers before it.
fn step<T: Element + VMath>(
    inst: Inst,
    r: &[T],
    inputs: &[&[T]],
    repeated: &[bool],
    scalars: &[T],
    i: usize,
) -> T {
    let at = |k: u16| r[usize::from(k)];
    match inst {
        Inst::Load(k) => {
            let k = usize::from(k);
            inputs[k][if repeated[k] { 0 } else { i }]
        }
        Inst::Scalar(k) => scalars[usize::from(k)],
        Inst::Const(c) => T::from_f64(f64::from(c)),
        Inst::Unary(op, x) => {
            let x = at(x);
            with_unary_fn!(op, T, |f| f(x))
        }
        Inst::Binary(op, a, b) => {
            let (a, b) = (at(a), at(b));
            match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                BinaryOp::Mul => a * b,
                BinaryOp::Div => a / b,
            }
        }
        Inst::Pow(x, e) => pow_scalar(at(x), at(e)),
        Inst::PowGrad(g, x, e) => {
            let (g, x, e) = (at(g), at(x), at(e));
            let two = T::from_f64(2.0);
            if e == two {
                g * (x + x)
            } else {
                g * (e * powf(x, e - T::one()))
            }
        }
        Inst::Clamp(x, lo, hi) => {
            let y = if at(x) < at(lo) { at(lo) } else { at(x) };
            if y > at(hi) { at(hi) } else { y }
        }
        Inst::InRange(x, lo, hi) => {
            if at(x) >= at(lo) && at(x) <= at(hi) {
                T::one()
            } else {
                T::zero()
            }
        }
        Inst::Erf(x) => T::from_f64(super::formulas::erf_f64(at(x).to_f64())),
        Inst::ReluGrad(g, y) => {
            if at(y) > T::zero() {
                at(g)
            } else {
                T::zero()
            }
        }
    }
}

/// `x^e` with the exact cases of the CPU's `pow_scalar`.
fn pow_scalar<T: Element + VMath>(x: T, e: T) -> T {
    let one = T::one();
    match e.to_f64() {
        0.0 => one,
        1.0 => x,
        2.0 => x * x,
        3.0 => x * x * x,
        0.5 => x.sqrt(),
        -0.5 => one / x.sqrt(),
        -1.0 => one / x,
        -2.0 => one / (x * x),
        _ => powf(x, e),
    }
}
