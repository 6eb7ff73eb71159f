//! Element-wise kernels over dense (contiguous) buffers: the fast paths of the CPU backend.
//! Each writes its output chunk by chunk (see [`super::parallel`]), so wide tensors use every
//! thread of the pool, and transcendental functions run on SIMD lanes ([`super::vmath`]).
//!
//! An operand is either a slice with one element per output element, or a single value
//! repeated (a scalar, or a view expanded from one element with all strides 0, as the
//! gradient of `sum()` is): see [`Operand`].

use std::mem::MaybeUninit;

use super::formulas::{with_binary_fn, with_unary_fn};
use super::parallel::{collect_chunks, for_chunks_mut};
use super::vmath::{self, MathFn, VMath};
use crate::Element;
use crate::backend::op::{BinaryOp, GradFormula, UnaryOp};

/// One input of a dense element-wise kernel.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'a, T> {
    /// One element per output element, in order.
    Slice(&'a [T]),
    /// The same element for every output element.
    Scalar(T),
}

impl<'a, T: Copy> Operand<'a, T> {
    /// The part of this operand that pairs with output elements `start..start + len`.
    #[inline]
    fn sub(self, start: usize, len: usize) -> Operand<'a, T> {
        match self {
            Operand::Slice(s) => Operand::Slice(&s[start..start + len]),
            Operand::Scalar(x) => Operand::Scalar(x),
        }
    }
}

/// Expands `$body` with `$f` bound to the `Fn(T, T) -> T` of a closed-form [`GradFormula`]
/// (`(gradient, saved) -> result`), one monomorphised loop per op.
macro_rules! with_grad_formula_fn {
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        let (zero, one) = (<$T>::zero(), <$T>::one());
        match $op {
            GradFormula::Tanh => {
                let $f = |g: $T, y: $T| g * (one - y * y);
                $body
            }
            GradFormula::Sigmoid => {
                let $f = |g: $T, y: $T| g * (y * (one - y));
                $body
            }
            GradFormula::Relu => {
                let $f = |g: $T, y: $T| if y > zero { g } else { zero };
                $body
            }
            GradFormula::Sqrt => {
                let $f = |g: $T, y: $T| g / (y + y);
                $body
            }
            GradFormula::Abs => {
                // ±0 and NaN are their own sign.
                let $f = |g: $T, x: $T| {
                    g * if x > zero {
                        one
                    } else if x < zero {
                        -one
                    } else {
                        x
                    }
                };
                $body
            }
            GradFormula::Pow { .. } => {
                // Closed form only for the exponent 2 (`is_closed_form`).
                let $f = |g: $T, x: $T| g * (x + x);
                $body
            }
            GradFormula::Sin | GradFormula::Cos => {
                unreachable!("invariant: only closed-form formulas reach with_grad_formula_fn")
            }
        }
    }};
}

/// Runs `f` compiled for the best instruction set of this CPU (pulp's run-time dispatch:
/// AVX-512, AVX2+FMA, NEON or the baseline), so the element loop it inlines uses the widest
/// SIMD registers. The loops are plain IEEE arithmetic (no fused multiply-add), so every
/// instruction set gives the same bits.
#[inline(always)]
pub(crate) fn simd<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

/// `dst[i] = f(a[i], b[i])` for one chunk, with the operand kinds matched outside the loop so
/// each loop is a plain zip the compiler vectorizes.
#[inline(always)]
fn zip_into<T: Copy>(
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    dst: &mut [MaybeUninit<T>],
    f: impl Fn(T, T) -> T,
) {
    match (a, b) {
        (Operand::Slice(x), Operand::Slice(y)) => {
            for ((d, &x), &y) in dst.iter_mut().zip(x).zip(y) {
                d.write(f(x, y));
            }
        }
        (Operand::Slice(x), Operand::Scalar(y)) => {
            for (d, &x) in dst.iter_mut().zip(x) {
                d.write(f(x, y));
            }
        }
        (Operand::Scalar(x), Operand::Slice(y)) => {
            for (d, &y) in dst.iter_mut().zip(y) {
                d.write(f(x, y));
            }
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => {
            let v = f(x, y);
            for d in dst.iter_mut() {
                d.write(v);
            }
        }
    }
}

/// `f(a[i], b[i])` over `len` elements.
#[inline(always)]
fn zip_collect<T: Element>(
    len: usize,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    f: impl Fn(T, T) -> T + Copy + Sync,
) -> Vec<T> {
    // SAFETY: `zip_into` writes every element of the chunk: each loop runs over the whole of
    // `dst`, and the operands it zips with (`sub` of the same range) have at least its length.
    unsafe {
        collect_chunks(len, |start, dst| {
            simd(|| zip_into(a.sub(start, dst.len()), b.sub(start, dst.len()), dst, f))
        })
    }
}

/// The transcendental behind a unary op, if it has one.
#[inline]
fn math_fn(op: UnaryOp) -> Option<MathFn> {
    Some(match op {
        UnaryOp::Exp => MathFn::Exp,
        UnaryOp::Log => MathFn::Log,
        UnaryOp::Sin => MathFn::Sin,
        UnaryOp::Cos => MathFn::Cos,
        UnaryOp::Tanh => MathFn::Tanh,
        UnaryOp::Sigmoid => MathFn::Sigmoid,
        _ => return None,
    })
}

/// `op(x)` for every element of `src`.
pub(crate) fn unary<T: Element + VMath>(op: UnaryOp, src: &[T]) -> Vec<T> {
    if let Some(f) = math_fn(op) {
        // SAFETY: `map_into` writes every element of `dst` (its contract), and `src` is cut to
        // the same range.
        return unsafe {
            collect_chunks(src.len(), |start, dst| {
                let src = &src[start..start + dst.len()];
                vmath::map_into(f, src, dst)
            })
        };
    }
    with_unary_fn!(op, T, |f| map(src, f))
}

/// `x^e` for every element of `src` on SIMD lanes.
fn powf<T: Element + VMath>(src: &[T], e: T) -> Vec<T> {
    // SAFETY: `powf_into` writes every element of `dst` (its contract).
    unsafe {
        collect_chunks(src.len(), |start, dst| {
            let src = &src[start..start + dst.len()];
            vmath::powf_into(src, e, dst)
        })
    }
}

/// `a (op) b` over `len` elements.
pub(crate) fn binary<T: Element>(
    op: BinaryOp,
    len: usize,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
) -> Vec<T> {
    with_binary_fn!(op, T, |f| zip_collect(len, a, b, f))
}

/// `a (op)= b` in place over `a`'s elements.
pub(crate) fn binary_inplace<T: Element>(op: BinaryOp, a: &mut [T], b: Operand<'_, T>) {
    with_binary_fn!(op, T, |f| for_chunks_mut(a, |start, c| {
        simd(|| match b.sub(start, c.len()) {
            Operand::Slice(y) => c.iter_mut().zip(y).for_each(|(x, &y)| *x = f(*x, y)),
            Operand::Scalar(y) => c.iter_mut().for_each(|x| *x = f(*x, y)),
        })
    }))
}

/// A closed-form backward formula written over the gradient: `a[i] = op(a[i], b[i])`.
///
/// # Panics
///
/// If `op` is not [`GradFormula::is_closed_form`] (the caller checks).
pub(crate) fn grad_formula_inplace<T: Element>(op: GradFormula, a: &mut [T], b: Operand<'_, T>) {
    assert!(
        op.is_closed_form(),
        "grad_formula_inplace: {op:?} is not closed-form"
    );
    with_grad_formula_fn!(op, T, |f| for_chunks_mut(a, |start, c| {
        simd(|| match b.sub(start, c.len()) {
            Operand::Slice(y) => c.iter_mut().zip(y).for_each(|(x, &y)| *x = f(*x, y)),
            Operand::Scalar(y) => c.iter_mut().for_each(|x| *x = f(*x, y)),
        })
    }))
}

/// A backward formula in one pass over `len` elements (`a` the gradient, `b` the saved tensor).
pub(crate) fn grad_formula<T: Element + VMath>(
    op: GradFormula,
    len: usize,
    a: Operand<'_, T>,
    b: Operand<'_, T>,
) -> Vec<T> {
    if op.is_closed_form() {
        return with_grad_formula_fn!(op, T, |f| zip_collect(len, a, b, f));
    }
    // Two passes over each chunk while it is in cache: the transcendental of `b` into the
    // output, then the product with `a` in place.
    let (math, scale): (Option<MathFn>, T) = match op {
        GradFormula::Sin => (Some(MathFn::Cos), T::one()),
        GradFormula::Cos => (Some(MathFn::Sin), -T::one()),
        GradFormula::Pow { exponent } => (None, T::from_f64(exponent)),
        _ => unreachable!("invariant: the other ops returned above"),
    };
    let e1 = match op {
        GradFormula::Pow { exponent } => T::from_f64(exponent - 1.0),
        _ => T::zero(),
    };
    let fill = |start: usize, dst: &mut [MaybeUninit<T>]| {
        let n = dst.len();
        match (b.sub(start, n), math) {
            (Operand::Slice(x), Some(m)) => vmath::map_into(m, x, dst),
            (Operand::Slice(x), None) => vmath::powf_into(x, e1, dst),
            (Operand::Scalar(x), m) => {
                let v = match m {
                    Some(m) => vmath::eval(m, x),
                    None => vmath::powf(x, e1),
                };
                dst.iter_mut().for_each(|d| {
                    d.write(v);
                });
            }
        }
        // SAFETY: every element of `dst` was written just above (`map_into`/`powf_into` write
        // all of `dst`; the scalar branch writes each one), and `MaybeUninit<T>` has `T`'s
        // layout.
        let out = unsafe { &mut *(dst as *mut [MaybeUninit<T>] as *mut [T]) };
        match a.sub(start, n) {
            Operand::Slice(g) => out
                .iter_mut()
                .zip(g)
                .for_each(|(o, &g)| *o = g * (*o * scale)),
            Operand::Scalar(g) => out.iter_mut().for_each(|o| *o = g * (*o * scale)),
        }
    };
    // SAFETY: `fill` writes every element of each chunk (see the comment inside it).
    unsafe { collect_chunks(len, fill) }
}

/// `f(x)` for every element of `src`.
#[inline(always)]
fn map<T: Element>(src: &[T], f: impl Fn(T) -> T + Sync) -> Vec<T> {
    // SAFETY: the loop writes every element of `dst`; `src` is cut to the same range.
    unsafe {
        collect_chunks(src.len(), |start, dst| {
            let src = &src[start..start + dst.len()];
            simd(|| {
                for (d, &x) in dst.iter_mut().zip(src) {
                    d.write(f(x));
                }
            })
        })
    }
}

/// A copy of `src`.
pub(crate) fn copy<T: Element>(src: &[T]) -> Vec<T> {
    // SAFETY: the loop writes every element of `dst`; `src` is cut to the same range.
    unsafe {
        collect_chunks(src.len(), |start, dst| {
            let src = &src[start..start + dst.len()];
            for (d, &x) in dst.iter_mut().zip(src) {
                d.write(x);
            }
        })
    }
}

/// Sets every element of `buf` to `v`.
pub(crate) fn fill<T: Element>(buf: &mut [T], v: T) {
    for_chunks_mut(buf, |_, c| c.fill(v));
}

/// `x^exponent` for every element; the exponents PyTorch special-cases are computed with
/// multiplications or `sqrt`, so they stay exact (`0^0 = NaN^0 = 1`).
pub(crate) fn pow_scalar<T: Element + VMath>(src: &[T], exponent: f64) -> Vec<T> {
    let one = T::one();
    match exponent {
        0.0 => map(src, |_| one),
        1.0 => copy(src),
        2.0 => map(src, |x| x * x),
        3.0 => map(src, |x| x * x * x),
        0.5 => map(src, T::sqrt),
        -0.5 => map(src, |x| one / x.sqrt()),
        -1.0 => map(src, |x| one / x),
        -2.0 => map(src, |x| one / (x * x)),
        _ => powf(src, T::from_f64(exponent)),
    }
}

/// `f(big[i], small[(i / inner) % mid])` for every `i`: a broadcast where `small` repeats as
/// one contiguous block (`[N, M] + [M]`: `inner == 1`; `[N, M] * [N, 1]`: `mid == N`,
/// `inner == M`). `swap` puts `small` on the left of `f`.
pub(crate) fn block_binary<T: Element>(
    op: BinaryOp,
    big: &[T],
    small: &[T],
    (mid, inner): (usize, usize),
    swap: bool,
) -> Vec<T> {
    with_binary_fn!(op, T, |f| {
        let g = move |x: T, s: T| if swap { f(s, x) } else { f(x, s) };
        let fill = |start: usize, dst: &mut [MaybeUninit<T>]| {
            let end = start + dst.len();
            let mut i = start;
            while i < end {
                let (row, at) = (i / inner, i % inner);
                let m = row % mid;
                if inner == 1 {
                    // A run of `small` from `m` to the end of the block (or of the chunk).
                    let run = (mid - m).min(end - i);
                    zip_into(
                        Operand::Slice(&big[i..i + run]),
                        Operand::Slice(&small[m..m + run]),
                        &mut dst[i - start..i - start + run],
                        g,
                    );
                    i += run;
                } else {
                    // A run of `big` paired with the one value `small[m]`.
                    let run = (inner - at).min(end - i);
                    zip_into(
                        Operand::Slice(&big[i..i + run]),
                        Operand::Scalar(small[m]),
                        &mut dst[i - start..i - start + run],
                        g,
                    );
                    i += run;
                }
            }
        };
        // SAFETY: the runs of `fill` tile `start..end` exactly (each advances `i` by the length
        // it wrote), and `zip_into` writes every element of the run it is given.
        unsafe { collect_chunks(big.len(), fill) }
    })
}

#[cfg(test)]
mod tests;
