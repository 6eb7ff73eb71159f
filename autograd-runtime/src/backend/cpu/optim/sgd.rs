//! SGD with momentum, dampening, Nesterov and weight decay (`_single_tensor_sgd`).

use super::s;
use crate::Element;

/// The coefficients of one SGD step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SgdCoeffs {
    /// Learning rate.
    pub(crate) lr: f64,
    /// Momentum factor (0: no momentum buffer).
    pub(crate) momentum: f64,
    /// Dampening of the gradient added to the buffer.
    pub(crate) dampening: f64,
    /// L2 penalty.
    pub(crate) weight_decay: f64,
    /// Nesterov momentum.
    pub(crate) nesterov: bool,
    /// Maximize instead of minimize.
    pub(crate) maximize: bool,
    /// The buffer's first step: it becomes the gradient.
    pub(crate) first: bool,
}

/// One SGD step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &SgdCoeffs) {
    let wd: T = s(c.weight_decay);
    let use_wd = c.weight_decay != 0.0;
    let neg_lr: T = s(-c.lr);
    let maximize = c.maximize;
    let grad = |i: usize, p: T| {
        let mut gi = if maximize { -g[i] } else { g[i] };
        if use_wd {
            gi = p.mul_add(wd, gi);
        }
        gi
    };
    if c.momentum == 0.0 {
        for i in 0..p.len() {
            let gi = grad(i, p[i]);
            p[i] = gi.mul_add(neg_lr, p[i]);
        }
        return;
    }
    let buf = &mut *state[0];
    let m: T = s(c.momentum);
    let damp: T = s(1.0 - c.dampening);
    let (first, nesterov) = (c.first, c.nesterov);
    for i in 0..p.len() {
        let gi = grad(i, p[i]);
        let b = if first {
            gi
        } else {
            gi.mul_add(damp, buf[i] * m)
        };
        buf[i] = b;
        let d = if nesterov { b.mul_add(m, gi) } else { b };
        p[i] = d.mul_add(neg_lr, p[i]);
    }
}
