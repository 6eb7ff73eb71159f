//! RMSprop, centered or not, with momentum (`_single_tensor_rmsprop`).

use super::{lerp, s};
use crate::Element;
use crate::backend::step::RmsPropCoeffs;

/// One RMSprop step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &RmsPropCoeffs) {
    let (sq, rest) = state.split_at_mut(1);
    let sq = &mut *sq[0];
    let (mut buf, rest) = if c.momentum > 0.0 {
        let (b, rest) = rest.split_at_mut(1);
        (Some(&mut *b[0]), rest)
    } else {
        (None, rest)
    };
    let mut gavg = if c.centered {
        Some(&mut *rest[0])
    } else {
        None
    };
    let use_wd = c.weight_decay != 0.0;
    let wd: T = s(c.weight_decay);
    let alpha: T = s(c.alpha);
    let c1: T = s(1.0 - c.alpha);
    let small = c1.abs() < s(0.5);
    let one_minus_w = T::one() - c1;
    let eps: T = s(c.eps);
    let mom: T = s(c.momentum);
    let neg_lr: T = s(-c.lr);
    let sign = if c.maximize { -T::one() } else { T::one() };
    for i in 0..p.len().min(g.len()).min(sq.len()) {
        let mut gi = g[i] * sign;
        if use_wd {
            gi = p[i].mul_add(wd, gi);
        }
        let si = sq[i] * alpha + c1 * gi * gi;
        sq[i] = si;
        let avg = match gavg.as_deref_mut() {
            Some(ga) => {
                let a = lerp(ga[i], gi, c1, one_minus_w, small);
                ga[i] = a;
                (si + -T::one() * a * a).sqrt()
            }
            None => si.sqrt(),
        } + eps;
        match buf.as_deref_mut() {
            Some(b) => {
                let bi = b[i] * mom + T::one() * gi / avg;
                b[i] = bi;
                p[i] = bi.mul_add(neg_lr, p[i]);
            }
            None => p[i] += neg_lr * gi / avg,
        }
    }
}
