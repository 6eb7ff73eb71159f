//! Learning-rate schedulers: PyTorch's `torch.optim.lr_scheduler`.
//!
//! A scheduler is built on an optimizer (which it changes at once: the learning rate of step
//! 0) and stepped after each [`Optimizer::step`] with the same optimizer; it computes each
//! learning rate as PyTorch's `step()` does (the recursive "chainable" form, or the closed form
//! where PyTorch uses it), so [`get_last_lr`](LrScheduler::get_last_lr) prints PyTorch's
//! numbers.
//!
//! | PyTorch | here |
//! |---|---|
//! | `StepLR(opt, step_size, gamma=0.1)` | [`StepLR::new`]`(&mut opt, step_size, gamma)` |
//! | `MultiStepLR(opt, milestones, gamma=0.1)` | [`MultiStepLR::new`]`(&mut opt, &milestones, gamma)` |
//! | `ExponentialLR(opt, gamma)` | [`ExponentialLR::new`]`(&mut opt, gamma)` |
//! | `LambdaLR(opt, lr_lambda)` | [`LambdaLR::new`]`(&mut opt, \|epoch\| ...)`, [`LambdaLR::with_lambdas`] |
//! | `LinearLR(opt, start_factor, end_factor, total_iters)` | [`LinearLR::new`] |
//! | `CosineAnnealingLR(opt, T_max, eta_min=0)` | [`CosineAnnealingLR::new`] |
//! | `OneCycleLR(opt, max_lr, total_steps, ...)` | [`OneCycleLR::new`] with [`OneCycleOptions`] |
//! | `SequentialLR(opt, schedulers, milestones)` | [`SequentialLR::new`] |
//! | `ChainedScheduler(schedulers)` | [`ChainedScheduler::new`]`(&mut opt, schedulers)` |
//! | `ReduceLROnPlateau(opt, mode, factor, ...)`, `step(metric)` | [`ReduceLROnPlateau::new`] with [`ReduceLROnPlateauOptions`], [`step`](ReduceLROnPlateau::step)`(metric, &mut opt)` |
//!
//! Warm-up is [`LinearLR`] followed by another scheduler in a [`SequentialLR`] (or multiplied
//! into it with a [`ChainedScheduler`]), or one [`LambdaLR`].
//!
//! # Checkpoints
//!
//! [`LrScheduler::state_dict`] (and [`ReduceLROnPlateau::state_dict`]) is PyTorch's
//! `scheduler.state_dict()` as a JSON object under its keys. Beside an optimizer checkpoint it
//! goes into the same safetensors file as the metadata key `"lr_scheduler"`, which
//! `python/autograd_convert.py` reads and writes for PyTorch. To resume, build the optimizer and
//! the scheduler as before, load the optimizer's state, then the scheduler's: the next step
//! continues the saved sequence.
//!
//! ```
//! use autograd_runtime::optim::lr_scheduler::{CosineAnnealingLR, LinearLR, LrScheduler, SequentialLR};
//! use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
//! use autograd_runtime::{StateDict, Tensor};
//!
//! fn setup(w: &Tensor) -> autograd_runtime::Result<(Sgd, SequentialLR)> {
//!     let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(0.1).momentum(0.9))?;
//!     let warmup = LinearLR::new(&mut opt, 0.1, 1.0, 5)?;
//!     let cosine = CosineAnnealingLR::new(&mut opt, 20, 0.0)?;
//!     let sched = SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(cosine)], vec![5])?;
//!     Ok((opt, sched))
//! }
//! let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
//! let (mut opt, mut sched) = setup(&w)?;
//! for _ in 0..8 {
//!     opt.step()?;
//!     sched.step(&mut opt)?;
//! }
//! let mut ckpt = opt.state_dict()?;
//! ckpt.set_metadata("lr_scheduler", serde_json::Value::Object(sched.state_dict()).to_string());
//! let bytes = ckpt.to_bytes()?;                    // or ckpt.save("ckpt.safetensors")
//!
//! let (mut opt2, mut sched2) = setup(&w)?;
//! let ckpt = StateDict::from_bytes(&bytes)?;
//! opt2.load_state_dict(&ckpt)?;
//! let state: serde_json::Map<_, _> = serde_json::from_str(ckpt.metadata("lr_scheduler").unwrap()).unwrap();
//! sched2.load_state_dict(&state)?;
//! for _ in 0..10 {
//!     sched.step(&mut opt)?;
//!     sched2.step(&mut opt2)?;
//!     assert_eq!(sched2.get_last_lr(), sched.get_last_lr());
//! }
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
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

use serde_json::{Map, Value};

use super::Optimizer;
use crate::{Error, Result};

mod chained;
mod cosine;
mod exponential;
mod lambda;
mod linear;
mod multi_step;
mod one_cycle;
mod plateau;
mod sequential;
pub(crate) mod state;
mod step_lr;

pub use chained::ChainedScheduler;
pub use cosine::CosineAnnealingLR;
pub use exponential::ExponentialLR;
pub use lambda::{LambdaLR, LrLambda};
pub use linear::LinearLR;
pub use multi_step::MultiStepLR;
pub use one_cycle::{Anneal, OneCycleLR, OneCycleOptions};
pub use plateau::{PlateauMode, ReduceLROnPlateau, ReduceLROnPlateauOptions, ThresholdMode};
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

    /// The scheduler's state: PyTorch's `scheduler.state_dict()` as a JSON object under its
    /// keys (`last_epoch`, `_step_count`, `base_lrs`, `_last_lr`, the scheduler's own
    /// hyper-parameters; the nested states of [`SequentialLR`] and [`ChainedScheduler`] under
    /// `_schedulers`; [`LambdaLR`]'s closures are not saved, as PyTorch does not save lambdas).
    /// Infinities and NaN are the strings `"inf"`, `"-inf"`, `"nan"`. See the
    /// [module docs](self) for writing it next to an optimizer checkpoint.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::optim::lr_scheduler::{LrScheduler, StepLR};
    /// use autograd_runtime::optim::{Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    ///
    /// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// let mut opt = Sgd::new([w], SgdOptions::default().lr(1.0))?;
    /// let mut sched = StepLR::new(&mut opt, 2, 0.5)?;
    /// sched.step(&mut opt)?;
    /// let state = sched.state_dict();
    /// assert_eq!(state["last_epoch"], 1);
    /// assert_eq!(state["_step_count"], 2);
    /// assert_eq!(state["step_size"], 2);
    /// assert_eq!(state["gamma"], 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn state_dict(&self) -> Map<String, Value>;

    /// Loads a state written by [`state_dict`](LrScheduler::state_dict) (here, or by PyTorch
    /// through `python/autograd_convert.py`) into a scheduler built the same way: as PyTorch's
    /// `load_state_dict`, the keys present replace the scheduler's values, and the next
    /// [`step`](LrScheduler::step) continues the saved sequence. The optimizer's learning rates
    /// are not touched: they come back with [`Optimizer::load_state_dict`], which (as in
    /// PyTorch) is called after the scheduler is built.
    ///
    /// # Errors
    ///
    /// [`Error::StateDict`] for a key the scheduler does not have, a value of the wrong type,
    /// or lists whose length is not the number of parameter groups; nothing is changed then.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::optim::lr_scheduler::{ExponentialLR, LrScheduler};
    /// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    ///
    /// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(1.0))?;
    /// let mut sched = ExponentialLR::new(&mut opt, 0.5)?;
    /// sched.step(&mut opt)?;
    /// let (saved_opt, saved) = (opt.state_dict()?, sched.state_dict());
    ///
    /// // Resume: build the same optimizer and scheduler, then load both.
    /// let mut opt2 = Sgd::new([w], SgdOptions::default().lr(1.0))?;
    /// let mut sched2 = ExponentialLR::new(&mut opt2, 0.5)?;
    /// opt2.load_state_dict(&saved_opt)?;
    /// sched2.load_state_dict(&saved)?;
    /// sched.step(&mut opt)?;
    /// sched2.step(&mut opt2)?;
    /// assert_eq!(sched2.get_last_lr(), [0.25]);
    /// assert_eq!(sched2.get_last_lr(), sched.get_last_lr());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn load_state_dict(&mut self, state: &Map<String, Value>) -> Result<()>;
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

/// A scheduler's formulas: the recursive one `step` uses and the closed form; and its own
/// hyper-parameters in its state dict.
pub(crate) trait Rule {
    /// PyTorch's class name (for errors).
    const NAME: &'static str;
    /// The hyper-parameters [`read_hyper`](Rule::read_hyper) reads.
    type Hyper;
    /// Writes the hyper-parameters under PyTorch's attribute names.
    fn hyper_json(&self, map: &mut Map<String, Value>);
    /// Reads the hyper-parameters back (absent keys keep their values), changing nothing.
    fn read_hyper(&self, r: &mut state::Reader<'_>) -> Result<Self::Hyper>;
    /// Sets what [`read_hyper`](Rule::read_hyper) read.
    fn set_hyper(&mut self, hyper: Self::Hyper);
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
            fn state_dict(&self) -> serde_json::Map<String, serde_json::Value> {
                let mut map = serde_json::Map::new();
                $crate::optim::lr_scheduler::Rule::hyper_json(self, &mut map);
                self.base.to_json(&mut map);
                map
            }
            fn load_state_dict(
                &mut self,
                state: &serde_json::Map<String, serde_json::Value>,
            ) -> $crate::Result<()> {
                let mut r = $crate::optim::lr_scheduler::state::Reader::new(
                    state,
                    <Self as $crate::optim::lr_scheduler::Rule>::NAME,
                );
                let base = r.base(&self.base)?;
                let hyper = $crate::optim::lr_scheduler::Rule::read_hyper(self, &mut r)?;
                r.finish()?;
                self.base = base;
                $crate::optim::lr_scheduler::Rule::set_hyper(self, hyper);
                Ok(())
            }
        }
    };
}
pub(crate) use impl_scheduler;
