//! Adam and AdamW, with amsgrad (`_single_tensor_adam`).

use super::{lerp, s};
use crate::Element;

/// The coefficients of one Adam step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdamCoeffs {
    /// Learning rate.
    pub(crate) lr: f64,
    /// `betas.0`.
    pub(crate) beta1: f64,
    /// `betas.1`.
    pub(crate) beta2: f64,
    /// Added to the denominator.
    pub(crate) eps: f64,
    /// Weight decay: an L2 term in the gradient (Adam) or a decay of the parameter (AdamW).
    pub(crate) weight_decay: f64,
    /// AdamW's decoupled weight decay.
    pub(crate) decoupled: bool,
    /// Keep the maximum of `exp_avg_sq` (state 2).
    pub(crate) amsgrad: bool,
    /// Maximize instead of minimize.
    pub(crate) maximize: bool,
    /// `lr / (1 - beta1^step)`.
    pub(crate) step_size: f64,
    /// `sqrt(1 - beta2^step)`.
    pub(crate) bias_correction2_sqrt: f64,
}

/// One Adam step over one chunk.
#[inline(always)]
pub(crate) fn step<T: Element>(p: &mut [T], g: &[T], state: &mut [&mut [T]], c: &AdamCoeffs) {
    let (m, rest) = state.split_at_mut(1);
    let m = &mut *m[0];
    let (v, rest) = rest.split_at_mut(1);
    let v = &mut *v[0];
    let mut vmax = if c.amsgrad {
        rest.first_mut().map(|x| &mut **x)
    } else {
        None
    };
    let use_wd = c.weight_decay != 0.0;
    let l2 = use_wd && !c.decoupled;
    let wd: T = s(c.weight_decay);
    let decay: T = s(1.0 - c.lr * c.weight_decay);
    let w: T = s(1.0 - c.beta1);
    let small = w.abs() < s(0.5);
    let one_minus_w = T::one() - w;
    let beta2: T = s(c.beta2);
    let c2: T = s(1.0 - c.beta2);
    let bc2: T = s(c.bias_correction2_sqrt);
    let eps: T = s(c.eps);
    let neg_step: T = s(-c.step_size);
    let maximize = c.maximize;
    for i in 0..p.len() {
        let mut pi = p[i];
        let mut gi = if maximize { -g[i] } else { g[i] };
        if use_wd {
            if l2 {
                gi = pi.mul_add(wd, gi);
            } else {
                pi = pi * decay;
            }
        }
        let mi = lerp(m[i], gi, w, one_minus_w, small);
        m[i] = mi;
        let vi = v[i] * beta2 + c2 * gi * gi;
        v[i] = vi;
        let vd = match vmax.as_deref_mut() {
            Some(vmax) => {
                let x = if vmax[i] >= vi || vmax[i].is_nan() {
                    vmax[i]
                } else {
                    vi
                };
                vmax[i] = x;
                x
            }
            None => vi,
        };
        let denom = vd.sqrt() / bc2 + eps;
        p[i] = pi + neg_step * mi / denom;
    }
}
