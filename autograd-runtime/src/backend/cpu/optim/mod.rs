//! Fused optimizer steps on host memory (PyTorch's `fused=True`): one pass over every
//! (parameter, gradient, state) set of a parameter group, cut into chunks of
//! [`GRAIN`](super::parallel::GRAIN) elements that the intra-op threads run in any order. Each
//! element is read and written once; the loops are plain slice loops the compiler vectorises.
//!
//! Every kernel repeats, element by element and in the same order, the arithmetic of PyTorch's
//! single-tensor implementation (`torch/optim/adam.py`'s `_single_tensor_adam`, ...), scalars
//! rounded to the element type as PyTorch's kernels round a Python scalar: so the fused step
//! and the op-by-op step (`optim`'s tensor path) give the same numbers. PyTorch's
//! `add(other, alpha=a)` is a fused multiply-add on its CPU kernels (`vec::fmadd`, and GCC's
//! contraction of the scalar tail): so it is `mul_add` here, which matters for SGD, where
//! momentum amplifies every rounding difference.

mod adagrad;
mod adam;
mod rmsprop;
mod sgd;

use super::parallel::{GRAIN, run_chunks};
use crate::Element;
use crate::sync::Mutex;

use crate::backend::step::{StepSet, Update};
use crate::{DType, Error, Result};

/// One parameter's slices: written in place (`param`, `state`) or read (`grad`), all of one
/// length.
#[derive(Debug)]
pub(crate) struct Set<'a, T> {
    /// The parameter's elements.
    pub(crate) param: &'a mut [T],
    /// Its gradient's elements.
    pub(crate) grad: &'a [T],
    /// The state buffers, in the order the parameter's [`Update`] names.
    pub(crate) state: Vec<&'a mut [T]>,
    /// The coefficients.
    pub(crate) update: Update,
}

/// Runs one fused step over `sets` (host buffers of one dtype): [`step`] on their elements.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the buffers are not host buffers of one dtype, or a tensor's
/// elements run past its buffer (nothing is updated then).
pub(crate) fn fused_step(sets: Vec<StepSet<'_>>) -> Result<()> {
    match sets.first().map(|s| s.param.0.dtype()) {
        None => {}
        Some(DType::F32) => step(typed::<f32>(sets)?),
        Some(DType::F64) => step(typed::<f64>(sets)?),
        Some(_) => {
            return Err(Error::InvalidArgument(
                "fused optimizer step: the fused kernels take f32 or f64 parameters".into(),
            ));
        }
    }
    Ok(())
}

/// The elements of `sets`' buffers as slices of `T`.
fn typed<'a, T: Element>(sets: Vec<StepSet<'a>>) -> Result<Vec<Set<'a, T>>> {
    let refuse = |why: &str| Error::InvalidArgument(format!("fused optimizer step: {why}"));
    let wrong = || refuse("every tensor must be a host tensor of one dtype");
    let past = || refuse("a tensor's elements run past its buffer");
    sets.into_iter()
        .map(|set| {
            let n = set.numel;
            let mut_part = |(b, offset): (&'a mut crate::backend::Buffer, usize)| {
                b.as_mut_slice::<T>()
                    .ok_or_else(wrong)?
                    .get_mut(offset..offset + n)
                    .ok_or_else(past)
            };
            let (gb, go) = set.grad;
            Ok(Set {
                param: mut_part(set.param)?,
                grad: gb
                    .as_slice::<T>()
                    .ok_or_else(wrong)?
                    .get(go..go + n)
                    .ok_or_else(past)?,
                state: set.state.into_iter().map(mut_part).collect::<Result<_>>()?,
                update: set.update,
            })
        })
        .collect()
}

/// Runs every set's update, all chunks of all sets on the intra-op threads together.
pub(crate) fn step<T: Element>(sets: Vec<Set<'_, T>>) {
    let mut pieces: Vec<Mutex<Option<Set<'_, T>>>> = Vec::new();
    for set in sets {
        let Set {
            param,
            grad,
            mut state,
            update,
        } = set;
        debug_assert!(state.iter().all(|s| s.len() == param.len()));
        let n = param.len();
        let mut param = param;
        let mut grad = grad;
        let mut start = 0;
        while start < n {
            let len = GRAIN.min(n - start);
            let (p_head, p_tail) = std::mem::take(&mut param).split_at_mut(len);
            let (g_head, g_tail) = grad.split_at(len);
            let mut s_heads = Vec::with_capacity(state.len());
            for s in state.iter_mut() {
                let (h, t) = std::mem::take(s).split_at_mut(len);
                s_heads.push(h);
                *s = t;
            }
            pieces.push(Mutex::new(Some(Set {
                param: p_head,
                grad: g_head,
                state: s_heads,
                update,
            })));
            param = p_tail;
            grad = g_tail;
            start += len;
        }
    }
    let run = |i: usize| {
        let piece = pieces[i].lock().take();
        if let Some(set) = piece {
            run_piece(set);
        }
    };
    if pieces.len() == 1 {
        run(0);
    } else {
        run_chunks(pieces.len(), &run);
    }
}

/// One chunk of one set, compiled for FMA and AVX2 where the CPU has them (the loops then
/// vectorise with fused multiply-adds), else for the baseline target.
fn run_piece<T: Element>(set: Set<'_, T>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        unsafe { run_piece_fma(set) };
        return;
    }
    run_piece_inline(set);
}

/// [`run_piece_inline`] compiled with AVX2 and FMA.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_piece_fma<T: Element>(set: Set<'_, T>) {
    run_piece_inline(set);
}

/// One chunk of one set.
#[inline(always)]
fn run_piece_inline<T: Element>(set: Set<'_, T>) {
    let Set {
        param,
        grad,
        mut state,
        update,
    } = set;
    match update {
        Update::Sgd(c) => sgd::step(param, grad, &mut state, &c),
        Update::Adam(c) => adam::step(param, grad, &mut state, &c),
        Update::RmsProp(c) => rmsprop::step(param, grad, &mut state, &c),
        Update::Adagrad(c) => adagrad::step(param, grad, &mut state, &c),
    }
}

/// `f64` to `T`, as PyTorch rounds a Python scalar passed to a kernel.
#[inline(always)]
fn s<T: Element>(v: f64) -> T {
    T::from_f64(v)
}

/// `m.lerp(g, w)` as PyTorch's CPU kernel computes it.
#[inline(always)]
fn lerp<T: Element>(m: T, g: T, w: T, one_minus_w: T, small: bool) -> T {
    if small {
        m + w * (g - m)
    } else {
        g - (g - m) * one_minus_w
    }
}
