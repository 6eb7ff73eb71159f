//! Adagrad (`_single_tensor_adagrad`).

use super::s;
use crate::Element;
use crate::backend::step::AdagradCoeffs;

/// One Adagrad step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &AdagradCoeffs) {
    let sum = &mut *state[0];
    let use_wd = c.weight_decay != 0.0;
    let wd: T = s(c.weight_decay);
    let eps: T = s(c.eps);
    let neg_clr: T = s(-c.clr);
    let sign = if c.maximize { -T::one() } else { T::one() };
    for ((p, &g), sum) in p.iter_mut().zip(g).zip(sum.iter_mut()) {
        let mut gi = g * sign;
        if use_wd {
            gi = p.mul_add(wd, gi);
        }
        let si = *sum + T::one() * gi * gi;
        *sum = si;
        *p += neg_clr * gi / (si.sqrt() + eps);
    }
}
