//! Optimizers, learning-rate schedulers and gradient clipping: PyTorch's `torch.optim`.
//!
//! Each optimizer ([`Sgd`], [`Adam`], [`AdamW`], [`RmsProp`], [`Adagrad`]) owns handles to the
//! parameters it updates (leaf tensors that require grad: a [`Module`](crate::nn::Module)'s
//! [`parameters`](crate::nn::Module::parameters)), split into [`ParamGroup`]s that carry their
//! own options. [`step`](Optimizer::step) updates every parameter that has a gradient, under
//! [`no_grad`](crate::no_grad), with the arithmetic of PyTorch's single-tensor implementation,
//! and [`zero_grad`](Optimizer::zero_grad) drops the gradients (PyTorch 2's `set_to_none=True`).
//!
//! # Fused steps
//!
//! On the CPU, a group whose parameters are contiguous `f32`/`f64` tensors is updated in one
//! pass (PyTorch's `fused=True`): one parallel loop over every (parameter, gradient, state) set
//! of the group, each element read and written once, instead of a tensor op per arithmetic step.
//! That is the default (`fused: None`); `fused: Some(false)` asks for the op-by-op path, which
//! gives the same numbers.
//!
//! On CUDA the fused step is one kernel launch per group (`adam_step`, `sgd_step`,
//! `rmsprop_step`, `adagrad_step`, for `f32` and `f64`: PyTorch's `multi_tensor_apply`, a table
//! of pointers and 4,096-element chunks), with the CPU kernel's arithmetic operation for
//! operation, so a CUDA step gives the CPU's bits (checked on an H100 over 100 steps). It is the
//! default there too. With `Some(true)`, parameters that are not contiguous tensors of one dtype
//! on one CUDA device (or on the CPU) make [`step`](Optimizer::step) an error.
//!
//! # Checkpoints
//!
//! [`state_dict`](Optimizer::state_dict) names each parameter's state as PyTorch does,
//! `state.{index}.{name}` (`step` a 0-dim `f32` tensor, `exp_avg`, `exp_avg_sq`, ...), and keeps
//! the groups' options as the JSON of PyTorch's `param_groups` in the metadata key
//! `"param_groups"`; `python/autograd_convert.py` converts such a file to and from a
//! `torch.optim` state dict (with a scheduler's state beside it: see
//! [`lr_scheduler`](lr_scheduler#checkpoints)).
//!
//! # Examples
//!
//! A training loop: a linear model, Adam, a warm-up followed by cosine annealing, clipping.
//!
//! ```
//! use autograd_runtime::nn::{Forward, Linear, Module};
//! use autograd_runtime::optim::lr_scheduler::{CosineAnnealingLR, LinearLR, LrScheduler, SequentialLR};
//! use autograd_runtime::optim::{Adam, AdamOptions, Optimizer, clip_grad_norm_};
//! use autograd_runtime::{DType, Tensor};
//!
//! let model = Linear::new(3, 1)?;
//! let mut opt = Adam::new(model.parameters(), AdamOptions::default().lr(0.1))?;
//! let warmup = LinearLR::new(&mut opt, 0.1, 1.0, 5)?;
//! let cosine = CosineAnnealingLR::new(&mut opt, 195, 0.0)?;
//! let mut sched = SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(cosine)], vec![5])?;
//!
//! let x = Tensor::randn_seeded(&[16, 3], DType::F32, 1)?;
//! let target = x.matmul(&Tensor::from_vec(vec![1.0f32, -2.0, 0.5], &[3, 1])?)?.add_scalar(0.3)?;
//! let mut first = None;
//! let mut loss_value = 0.0;
//! for _ in 0..200 {
//!     opt.zero_grad();
//!     let diff = model.forward(&x)?.sub(&target)?;
//!     let loss = diff.mul(&diff)?.mean()?;
//!     loss.backward()?;
//!     clip_grad_norm_(&model.parameters(), 10.0, 2.0)?;
//!     opt.step()?;
//!     sched.step(&mut opt)?;
//!     loss_value = loss.item::<f32>()?;
//!     first.get_or_insert(loss_value);
//! }
//! assert!(loss_value < first.unwrap() / 100.0, "{loss_value} {first:?}");
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

use std::fmt;

use serde_json::{Map, Value};

use crate::{Result, StateDict, Tensor};

mod adagrad;
mod adam;
mod base;
mod checkpoint;
mod clip;

mod fused_step;
pub mod lr_scheduler;
mod ops;
mod options;
mod rmsprop;
mod sgd;
#[cfg(test)]
mod tests;

pub use adagrad::{Adagrad, AdagradOptions};
pub use adam::{Adam, AdamOptions, AdamW};
pub use clip::{clip_grad_norm_, clip_grad_value_};
pub use rmsprop::{RmsProp, RmsPropOptions};
pub use sgd::{Sgd, SgdOptions};

/// An optimizer: PyTorch's `torch.optim.Optimizer`. Object safe, so schedulers and training
/// loops can take a `&mut dyn Optimizer`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{Adam, AdamOptions, Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?.requires_grad_(true)?;
/// let mut opts: Vec<Box<dyn Optimizer>> = vec![
///     Box::new(Sgd::new([w.clone()], SgdOptions::default().lr(0.1))?),
///     Box::new(Adam::new([w.clone()], AdamOptions::default().lr(0.1))?),
/// ];
/// for opt in &mut opts {
///     w.mul(&w)?.sum()?.backward()?;        // d/dw Σ w² = 2w
///     opt.step()?;                         // under no_grad: w stays a leaf
///     opt.zero_grad();                     // gradients set to None, as PyTorch 2
///     assert!(w.grad().is_none() && w.is_leaf());
/// }
/// assert_eq!(opts[0].lrs(), [0.1]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Optimizer: fmt::Debug + Send {
    /// Updates every parameter that has a gradient (parameters whose gradient is `None` are
    /// skipped, as in PyTorch), under [`no_grad`](crate::no_grad). Bumps each updated
    /// parameter's version counter, as every in-place op does.
    ///
    /// # Errors
    ///
    /// A gradient whose shape, dtype or device differs from its parameter's, or a kernel error.
    fn step(&mut self) -> Result<()>;

    /// The parameter groups, in order (each: its parameters and its options).
    fn param_groups(&self) -> Vec<&dyn AnyParamGroup>;

    /// The parameter groups, mutably: how schedulers change a group's learning rate.
    fn param_groups_mut(&mut self) -> Vec<&mut dyn AnyParamGroup>;

    /// The optimizer's state under PyTorch's names (see the [module docs](self)).
    ///
    /// # Errors
    ///
    /// A state tensor that cannot be copied to the host.
    fn state_dict(&self) -> Result<StateDict>;

    /// Loads a state written by [`state_dict`](Optimizer::state_dict) (here or, through
    /// `python/autograd_convert.py`, by PyTorch): the groups' options and each parameter's
    /// state, converted to the parameter's dtype and device.
    ///
    /// # Errors
    ///
    /// [`Error::StateDict`](crate::Error::StateDict) when the metadata is missing or does not
    /// parse, the number of groups or parameters differs, or a state tensor is missing or has
    /// the wrong shape. Nothing is changed then.
    fn load_state_dict(&mut self, dict: &StateDict) -> Result<()>;

    /// Drops every parameter's gradient (PyTorch 2's `zero_grad()`, `set_to_none=True`).
    fn zero_grad(&self) {
        for group in self.param_groups() {
            for p in group.params() {
                p.clear_grad();
            }
        }
    }

    /// Every group's learning rate, in group order.
    fn lrs(&self) -> Vec<f64> {
        self.param_groups().iter().map(|g| g.lr()).collect()
    }
}

/// The options of one optimizer's parameter groups (`SgdOptions`, `AdamOptions`, ...): what
/// every optimizer's options share, so that schedulers work on any optimizer.
pub trait GroupOptions: Clone + fmt::Debug + Send + Sync + 'static {
    /// The learning rate.
    fn lr(&self) -> f64;

    /// Sets the learning rate.
    fn set_lr(&mut self, lr: f64);

    /// The momentum a scheduler cycles (`momentum` for SGD and RMSprop, `betas.0` for Adam),
    /// or `None` if the optimizer has none.
    fn momentum(&self) -> Option<f64> {
        None
    }

    /// Sets the momentum [`momentum`](GroupOptions::momentum) reads (ignored if there is none).
    fn set_momentum(&mut self, momentum: f64) {
        let _ = momentum;
    }

    /// Checks the options as PyTorch's constructor does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) with PyTorch's `ValueError`
    /// text, e.g. `"Invalid learning rate: -0.1"`.
    fn validate(&self) -> Result<()>;

    /// The options as the entries of PyTorch's `param_groups` dictionary (all keys but
    /// `"params"`).
    fn to_json(&self) -> Map<String, Value>;

    /// Options read from PyTorch's `param_groups` entries; a key that is absent keeps `self`'s
    /// value.
    ///
    /// # Errors
    ///
    /// A message saying which key has the wrong type.
    fn with_json(&self, map: &Map<String, Value>) -> std::result::Result<Self, String>;
}

/// The parameters of one group and their options: one entry of PyTorch's
/// `optimizer.param_groups`.
///
/// # Examples
///
/// Two groups, the second with its own learning rate:
///
/// ```
/// use autograd_runtime::optim::{Optimizer, ParamGroup, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let a = Tensor::ones(&[2], DType::F32)?.requires_grad_(true)?;
/// let b = Tensor::ones(&[3], DType::F32)?.requires_grad_(true)?;
/// let defaults = SgdOptions::default().lr(0.1).momentum(0.9);
/// let opt = Sgd::with_groups(vec![
///     ParamGroup::new(vec![a], defaults.clone()),
///     ParamGroup::new(vec![b], defaults.lr(0.01)),
/// ])?;
/// assert_eq!(opt.lrs(), vec![0.1, 0.01]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ParamGroup<O> {
    /// The parameters.
    params: Vec<Tensor>,
    /// The group's options, changed by schedulers and `load_state_dict`.
    options: O,
    /// The learning rate a scheduler started from (PyTorch's `group["initial_lr"]`), set by
    /// the first scheduler built on the optimizer.
    initial_lr: Option<f64>,
}

impl<O: GroupOptions> ParamGroup<O> {
    /// A group of `params` with `options`.
    pub fn new(params: impl IntoIterator<Item = Tensor>, options: O) -> ParamGroup<O> {
        ParamGroup {
            params: params.into_iter().collect(),
            options,
            initial_lr: None,
        }
    }

    /// The group's options.
    pub fn options(&self) -> &O {
        &self.options
    }

    /// The group's options, mutably.
    pub fn options_mut(&mut self) -> &mut O {
        &mut self.options
    }
}

/// One parameter group seen without its options' type: what [`Optimizer::param_groups`]
/// returns, and what schedulers read and change.
pub trait AnyParamGroup: fmt::Debug + Send + Sync {
    /// The group's parameters.
    fn params(&self) -> &[Tensor];
    /// The learning rate.
    fn lr(&self) -> f64;
    /// Sets the learning rate.
    fn set_lr(&mut self, lr: f64);
    /// The learning rate the first scheduler started from (PyTorch's `group["initial_lr"]`).
    fn initial_lr(&self) -> Option<f64>;
    /// Sets [`initial_lr`](AnyParamGroup::initial_lr).
    fn set_initial_lr(&mut self, lr: f64);
    /// The momentum a scheduler may cycle (see [`GroupOptions::momentum`]).
    fn momentum(&self) -> Option<f64>;
    /// Sets that momentum.
    fn set_momentum(&mut self, momentum: f64);
    /// The group as PyTorch's `param_groups` entry, without `"params"`.
    fn options_json(&self) -> Map<String, Value>;
}

impl<O: GroupOptions> AnyParamGroup for ParamGroup<O> {
    fn params(&self) -> &[Tensor] {
        &self.params
    }
    fn lr(&self) -> f64 {
        self.options.lr()
    }
    fn set_lr(&mut self, lr: f64) {
        self.options.set_lr(lr);
    }
    fn initial_lr(&self) -> Option<f64> {
        self.initial_lr
    }
    fn set_initial_lr(&mut self, lr: f64) {
        self.initial_lr = Some(lr);
    }
    fn momentum(&self) -> Option<f64> {
        self.options.momentum()
    }
    fn set_momentum(&mut self, momentum: f64) {
        self.options.set_momentum(momentum);
    }
    fn options_json(&self) -> Map<String, Value> {
        let mut map = self.options.to_json();
        if let Some(lr) = self.initial_lr {
            map.insert("initial_lr".into(), options::json_f64(lr));
        }
        map
    }
}
