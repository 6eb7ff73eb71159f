//! Adam and AdamW, with amsgrad (`_single_tensor_adam`).

use super::{lerp, s};
use crate::Element;
use crate::backend::step::AdamCoeffs;

/// The coefficients of [`AdamCoeffs`] rounded to `T`, as the loop uses them.
#[derive(Clone, Copy)]
struct Scalars<T> {
    sign: T,
    wd: T,
    decay: T,
    w: T,
    one_minus_w: T,
    beta2: T,
    c2: T,
    bc2: T,
    eps: T,
    neg_step: T,
}

/// One Adam step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &AdamCoeffs) {
    let (m, rest) = state.split_at_mut(1);
    let m = &mut *m[0];
    let (v, rest) = rest.split_at_mut(1);
    let v = &mut *v[0];
    let w: T = s(1.0 - c.beta1);
    let k = Scalars {
        sign: if c.maximize { -T::one() } else { T::one() },
        wd: s(c.weight_decay),
        decay: s(1.0 - c.lr * c.weight_decay),
        w,
        one_minus_w: T::one() - w,
        beta2: s(c.beta2),
        c2: s(1.0 - c.beta2),
        bc2: s(c.bias_correction2_sqrt),
        eps: s(c.eps),
        neg_step: s(-c.step_size),
    };
    let use_wd = c.weight_decay != 0.0;
    let small = w.abs() < s(0.5);
    // One monomorphised loop per combination of the loop-invariant choices, so that each loop
    // body is straight-line code the compiler vectorises.
    match (use_wd && !c.decoupled, use_wd && c.decoupled, small) {
        (true, _, true) => run::<T, true, false, true>(p, g, m, v, rest, c.amsgrad, k),
        (true, _, false) => run::<T, true, false, false>(p, g, m, v, rest, c.amsgrad, k),
        (false, true, true) => run::<T, false, true, true>(p, g, m, v, rest, c.amsgrad, k),
        (false, true, false) => run::<T, false, true, false>(p, g, m, v, rest, c.amsgrad, k),
        (false, false, true) => run::<T, false, false, true>(p, g, m, v, rest, c.amsgrad, k),
        (false, false, false) => run::<T, false, false, false>(p, g, m, v, rest, c.amsgrad, k),
    }
}

/// The loop, with amsgrad's maximum or without.
#[inline(always)]
fn run<T: Element, const L2: bool, const DECAY: bool, const SMALL: bool>(
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
    rest: &mut [&mut [T]],
    amsgrad: bool,
    k: Scalars<T>,
) {
    let elems = p.iter_mut().zip(g).zip(m.iter_mut().zip(v.iter_mut()));
    match rest.first_mut() {
        Some(vmax) if amsgrad => {
            for (((p, &g), (m, v)), vmax) in elems.zip(vmax.iter_mut()) {
                let (pi, mi, vi) = moments::<T, L2, DECAY, SMALL>(*p, g, m, v, k);
                let x = if *vmax >= vi || vmax.is_nan() {
                    *vmax
                } else {
                    vi
                };
                *vmax = x;
                *p = pi + k.neg_step * mi / (x.sqrt() / k.bc2 + k.eps);
            }
        }
        _ => {
            for ((p, &g), (m, v)) in elems {
                let (pi, mi, vi) = moments::<T, L2, DECAY, SMALL>(*p, g, m, v, k);
                *p = pi + k.neg_step * mi / (vi.sqrt() / k.bc2 + k.eps);
            }
        }
    }
}

/// Weight decay and the moment updates of one element: the parameter after decay and the new
/// moments (written back to `m`, `v`).
#[inline(always)]
fn moments<T: Element, const L2: bool, const DECAY: bool, const SMALL: bool>(
    p: T,
    g: T,
    m: &mut T,
    v: &mut T,
    k: Scalars<T>,
) -> (T, T, T) {
    let mut pi = p;
    let mut gi = g * k.sign;
    if L2 {
        gi = pi.mul_add(k.wd, gi);
    }
    if DECAY {
        pi *= k.decay;
    }
    let mi = lerp(*m, gi, k.w, k.one_minus_w, SMALL);
    *m = mi;
    let vi = *v * k.beta2 + k.c2 * gi * gi;
    *v = vi;
    (pi, mi, vi)
}
