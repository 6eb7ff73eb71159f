//! Learning-rate schedulers: PyTorch's `torch.optim.lr_scheduler`.
//!
//! A scheduler is built on an optimizer (which it changes at once: the learning rate of step
//! 0) and stepped after each [`Optimizer::step`] with the same optimizer; it computes each
//! learning rate as PyTorch's `step()` does (the recursive "chainable" form, or the closed form
//! where PyTorch uses it), so [`get_last_lr`](LrScheduler::get_last_lr) prints PyTorch's
//! numbers. Warm-up is [`LinearLR`] followed by another scheduler in a [`SequentialLR`].
//!
//! # Examples
//!
//! ```
//! use autograd_runtime::optim::lr_scheduler::{LrScheduler, StepLR};
//! use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
//! use autograd_runtime::{DType, Tensor};
//!
//! let w = Tensor::zeros(&[2], DType::F32)?.requires_grad_(true)?;
//! let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
//! let mut sched = StepLR::new(&mut opt, 2, 0.5)?;
//! let mut lrs = vec![];
//! for _ in 0..5 {
//!     opt.step()?;
//!     sched.step(&mut opt)?;
//!     lrs.push(sched.get_last_lr()[0]);
//! }
//! assert_eq!(lrs, vec![1.0, 0.5, 0.5, 0.25, 0.25]);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

use std::fmt;

use super::Optimizer;
use crate::{Error, Result};

mod cosine;
mod linear;
mod one_cycle;
mod sequential;
mod step_lr;

pub use cosine::CosineAnnealingLR;
pub use linear::LinearLR;
pub use one_cycle::{Anneal, OneCycleLR, OneCycleOptions};
pub use sequential::SequentialLR;
pub use step_lr::StepLR;

/// A learning-rate scheduler: PyTorch's `LRScheduler`. `step` moves the learning rates of the
/// optimizer it is given (the one it was made on).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LrScheduler, StepLR};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let mut opt = Sgd::new([w], SgdOptions::default().lr(1.0))?;
/// let mut sched = StepLR::new(&mut opt, 2, 0.5)?;  // halve every 2 epochs
/// let mut lrs = vec![];
/// for _ in 0..5 {
///     lrs.push(sched.get_last_lr()[0]);
///     opt.step()?;
///     sched.step(&mut opt)?;
/// }
/// assert_eq!(lrs, [1.0, 1.0, 0.5, 0.5, 0.25]);
/// assert_eq!(opt.lrs(), [0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait LrScheduler: fmt::Debug + Send {
    /// Advances one epoch (or iteration) and sets the optimizer's learning rates.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `optimizer` has another number of groups than the one the
    /// scheduler was built on, or the schedule is over ([`OneCycleLR`]).
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()>;

    /// The learning rates the last step set, one per group.
    fn get_last_lr(&self) -> &[f64];

    /// The epoch the last step reached (0 after construction).
    fn last_epoch(&self) -> i64;

    /// Sets the epoch to `epoch` and its learning rates from the closed form where there is
    /// one (PyTorch's deprecated `step(epoch)`; what [`SequentialLR`] does at a milestone).
    ///
    /// # Errors
    ///
    /// As [`step`](LrScheduler::step).
    fn step_to(&mut self, optimizer: &mut dyn Optimizer, epoch: i64) -> Result<()>;

    /// Steps back one epoch without touching the optimizer (PyTorch's `last_epoch -= 1`,
    /// which [`SequentialLR`] does to the schedulers it is given).
    fn undo_step(&mut self);

    /// The step a scheduler takes when it is built (PyTorch's `_initial_step`).
    ///
    /// # Errors
    ///
    /// As [`step`](LrScheduler::step).
    fn initial_step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()>;
}

/// What every scheduler keeps (PyTorch's `LRScheduler` attributes).
#[derive(Clone, Debug)]
pub(crate) struct Base {
    /// Each group's `initial_lr`.
    pub(crate) base_lrs: Vec<f64>,
    /// The current epoch (-1 before the initial step).
    pub(crate) last_epoch: i64,
    /// Steps taken since the initial step began (PyTorch's `_step_count`).
    pub(crate) step_count: u64,
    /// The learning rates the last step set.
    pub(crate) last_lr: Vec<f64>,
    /// Inside the initial step (PyTorch's `_is_initial`).
    pub(crate) is_initial: bool,
}

impl Base {
    /// Records each group's `initial_lr` (setting it to the current learning rate where no
    /// scheduler did before), as PyTorch's constructor with `last_epoch = -1`.
    pub(crate) fn attach(optimizer: &mut dyn Optimizer) -> Base {
        let mut base_lrs = Vec::new();
        for g in optimizer.param_groups_mut() {
            let lr0 = match g.initial_lr() {
                Some(lr0) => lr0,
                None => {
                    g.set_initial_lr(g.lr());
                    g.lr()
                }
            };
            base_lrs.push(lr0);
        }
        Base {
            base_lrs,
            last_epoch: -1,
            step_count: 0,
            last_lr: Vec::new(),
            is_initial: false,
        }
    }
}

/// A scheduler's formulas: the recursive one `step` uses and the closed form.
pub(crate) trait Rule {
    /// The shared state.
    fn base(&self) -> &Base;
    /// The shared state, mutably.
    fn base_mut(&mut self) -> &mut Base;
    /// PyTorch's `get_lr()` at `base().last_epoch` (may also set momentum, as OneCycleLR's).
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>>;
    /// PyTorch's `_get_closed_form_lr()`, where the scheduler has one.
    fn closed_form(&self) -> Option<Vec<f64>> {
        None
    }
}

/// PyTorch's `_update_lr(epoch)`.
pub(crate) fn update_lr<R: Rule>(
    r: &mut R,
    optimizer: &mut dyn Optimizer,
    epoch: Option<i64>,
) -> Result<()> {
    let n = optimizer.param_groups().len();
    if n != r.base().base_lrs.len() {
        return Err(Error::InvalidArgument(format!(
            "the scheduler was built on an optimizer with {} parameter groups, not {n}",
            r.base().base_lrs.len()
        )));
    }
    let values = match epoch {
        None => {
            r.base_mut().last_epoch += 1;
            r.get_lr(optimizer)?
        }
        Some(e) => {
            r.base_mut().last_epoch = e;
            match r.closed_form() {
                Some(v) => v,
                None => r.get_lr(optimizer)?,
            }
        }
    };
    for (g, lr) in optimizer.param_groups_mut().into_iter().zip(values) {
        g.set_lr(lr);
    }
    r.base_mut().last_lr = optimizer.lrs();
    Ok(())
}

/// PyTorch's `step()`.
pub(crate) fn step<R: Rule>(r: &mut R, optimizer: &mut dyn Optimizer) -> Result<()> {
    r.base_mut().step_count += 1;
    update_lr(r, optimizer, None)
}

/// PyTorch's `_initial_step()`.
pub(crate) fn initial_step<R: Rule>(r: &mut R, optimizer: &mut dyn Optimizer) -> Result<()> {
    r.base_mut().step_count = 0;
    r.base_mut().is_initial = true;
    let out = step(r, optimizer);
    r.base_mut().is_initial = false;
    out
}

/// Each group's current learning rate.
pub(crate) fn current(optimizer: &dyn Optimizer) -> Vec<f64> {
    optimizer.lrs()
}

/// Implements [`LrScheduler`] for a type that implements [`Rule`].
macro_rules! impl_scheduler {
    ($ty:ty) => {
        impl $crate::optim::lr_scheduler::LrScheduler for $ty {
            fn step(&mut self, optimizer: &mut dyn $crate::optim::Optimizer) -> $crate::Result<()> {
                $crate::optim::lr_scheduler::step(self, optimizer)
            }
            fn get_last_lr(&self) -> &[f64] {
                &self.base.last_lr
            }
            fn last_epoch(&self) -> i64 {
                self.base.last_epoch
            }
            fn step_to(
                &mut self,
                optimizer: &mut dyn $crate::optim::Optimizer,
                epoch: i64,
            ) -> $crate::Result<()> {
                $crate::optim::lr_scheduler::update_lr(self, optimizer, Some(epoch))
            }
            fn undo_step(&mut self) {
                self.base.last_epoch -= 1;
            }
            fn initial_step(
                &mut self,
                optimizer: &mut dyn $crate::optim::Optimizer,
            ) -> $crate::Result<()> {
                $crate::optim::lr_scheduler::initial_step(self, optimizer)
            }
        }
    };
}
pub(crate) use impl_scheduler;
