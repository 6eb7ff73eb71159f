//! Adagrad (`_single_tensor_adagrad`).

use super::s;
use crate::Element;

/// The coefficients of one Adagrad step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdagradCoeffs {
    /// `lr / (1 + (step - 1) lr_decay)`.
    pub(crate) clr: f64,
    /// Added to the denominator.
    pub(crate) eps: f64,
    /// L2 penalty.
    pub(crate) weight_decay: f64,
    /// Maximize instead of minimize.
    pub(crate) maximize: bool,
}

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
