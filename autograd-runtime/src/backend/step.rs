//! The fused optimizer steps' vocabulary (PyTorch's `fused=True`): what one step of SGD, Adam,
//! RMSprop or Adagrad computes for one parameter ([`Update`] and its coefficients), and the
//! buffers one step updates ([`StepSet`]). Backend-neutral, like `op.rs`: the optimizers fill
//! them in, every backend runs them ([`Backend::fused_step`](super::Backend::fused_step)).

use super::Buffer;

/// One step's coefficients for one parameter (they differ between parameters only through
/// the step count).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Update {
    /// SGD; state: `[momentum_buffer]` when momentum is not 0.
    Sgd(SgdCoeffs),
    /// Adam and AdamW; state: `[exp_avg, exp_avg_sq]`, then `max_exp_avg_sq` with amsgrad.
    Adam(AdamCoeffs),
    /// RMSprop; state: `[square_avg]`, then `momentum_buffer` if momentum > 0, then `grad_avg`
    /// if centered.
    RmsProp(RmsPropCoeffs),
    /// Adagrad; state: `[sum]`.
    Adagrad(AdagradCoeffs),
}

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

/// The coefficients of one RMSprop step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RmsPropCoeffs {
    /// Learning rate.
    pub(crate) lr: f64,
    /// Smoothing constant.
    pub(crate) alpha: f64,
    /// Added to the denominator.
    pub(crate) eps: f64,
    /// L2 penalty.
    pub(crate) weight_decay: f64,
    /// Momentum factor (0: no buffer).
    pub(crate) momentum: f64,
    /// Normalise by the variance estimate (keeps `grad_avg`).
    pub(crate) centered: bool,
    /// Maximize instead of minimize.
    pub(crate) maximize: bool,
}

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

/// One parameter's buffers for a fused step, each with the element offset of its tensor: written
/// in place (`param`, `state`) or read (`grad`), each `numel` contiguous elements from its
/// offset, all of one dtype on the backend's device.
#[derive(Debug)]
pub(crate) struct StepSet<'a> {
    /// The parameter's buffer.
    pub(crate) param: (&'a mut Buffer, usize),
    /// Its gradient's.
    pub(crate) grad: (&'a Buffer, usize),
    /// The state buffers, in the order the [`Update`] names.
    pub(crate) state: Vec<(&'a mut Buffer, usize)>,
    /// The number of elements.
    pub(crate) numel: usize,
    /// This step's coefficients.
    pub(crate) update: Update,
}
