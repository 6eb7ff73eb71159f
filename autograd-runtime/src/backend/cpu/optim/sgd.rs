//! SGD with momentum, dampening, Nesterov and weight decay (`_single_tensor_sgd`).

use super::s;
use crate::Element;
use crate::backend::step::SgdCoeffs;

/// One SGD step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &SgdCoeffs) {
    let wd: T = s(c.weight_decay);
    let use_wd = c.weight_decay != 0.0;
    let neg_lr: T = s(-c.lr);
    let sign = if c.maximize { -T::one() } else { T::one() };
    let grad = |g: T, p: T| {
        let gi = g * sign;
        if use_wd { p.mul_add(wd, gi) } else { gi }
    };
    if c.momentum == 0.0 {
        for (p, &g) in p.iter_mut().zip(g) {
            *p = grad(g, *p).mul_add(neg_lr, *p);
        }
        return;
    }
    let buf = &mut *state[0];
    let m: T = s(c.momentum);
    let damp: T = s(1.0 - c.dampening);
    let (first, nesterov) = (c.first, c.nesterov);
    for ((p, &g), buf) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
        let gi = grad(g, *p);
        let b = if first {
            gi
        } else {
            gi.mul_add(damp, *buf * m)
        };
        *buf = b;
        let d = if nesterov { b.mul_add(m, gi) } else { b };
        *p = d.mul_add(neg_lr, *p);
    }
}
