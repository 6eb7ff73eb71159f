//! `ChainedScheduler`: several schedulers stepped together (their factors multiply).

use serde_json::{Map, Value};

use super::LrScheduler;
use super::sequential::{load_nested, nested_states};
use super::state::{Reader, f64s_json};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Steps every scheduler it holds, in order, at each [`step`](LrScheduler::step): PyTorch's
/// `ChainedScheduler`. Schedulers that scale the current learning rate (the "chainable" ones:
/// [`StepLR`](super::StepLR), [`MultiStepLR`](super::MultiStepLR),
/// [`ExponentialLR`](super::ExponentialLR), [`LinearLR`](super::LinearLR),
/// [`CosineAnnealingLR`](super::CosineAnnealingLR)) compose: a warm-up and a decay at once.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{ChainedScheduler, ExponentialLR, LinearLR, LrScheduler};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let warmup = LinearLR::new(&mut opt, 0.5, 1.0, 2)?;     // × 0.5, 0.75, 1, 1, ...
/// let decay = ExponentialLR::new(&mut opt, 0.9)?;         // × 0.9 per epoch
/// let mut sched = ChainedScheduler::new(&mut opt, vec![Box::new(warmup), Box::new(decay)])?;
/// let mut lrs = vec![sched.get_last_lr()[0]];
/// for _ in 0..3 {
///     opt.step()?;
///     sched.step(&mut opt)?;
///     lrs.push(sched.get_last_lr()[0]);
/// }
/// let want = [0.5, 0.75 * 0.9, 0.81, 0.729];
/// assert!(lrs.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15), "{lrs:?}");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct ChainedScheduler {
    schedulers: Vec<Box<dyn LrScheduler>>,
    last_lr: Vec<f64>,
}

impl ChainedScheduler {
    /// Chains `schedulers` (all built on `optimizer`, which PyTorch's argument order puts
    /// second and makes optional).
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError` as [`Error::InvalidArgument`] when `schedulers` is empty. (A
    /// [`ReduceLROnPlateau`](super::ReduceLROnPlateau), which PyTorch refuses here, is not an
    /// [`LrScheduler`] and cannot be passed.)
    pub fn new(
        optimizer: &mut dyn Optimizer,
        schedulers: Vec<Box<dyn LrScheduler>>,
    ) -> Result<ChainedScheduler> {
        if schedulers.is_empty() {
            return Err(Error::InvalidArgument(
                "ChainedScheduler expects at least one scheduler to be chained, but got no \
                 scheduler."
                    .into(),
            ));
        }
        Ok(ChainedScheduler {
            schedulers,
            last_lr: optimizer.lrs(),
        })
    }
}

impl LrScheduler for ChainedScheduler {
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        for s in &mut self.schedulers {
            s.step(optimizer)?;
        }
        self.last_lr = optimizer.lrs();
        Ok(())
    }

    fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }

    /// The last scheduler's epoch (PyTorch's `ChainedScheduler` keeps none of its own).
    fn last_epoch(&self) -> i64 {
        self.schedulers.last().map_or(0, |s| s.last_epoch())
    }

    /// An error, as in PyTorch: a chain has no closed form to start from, so it cannot follow a
    /// milestone of a [`SequentialLR`](super::SequentialLR).
    fn step_to(&mut self, _optimizer: &mut dyn Optimizer, _epoch: i64) -> Result<()> {
        Err(Error::InvalidArgument(
            "ChainedScheduler has no closed form: it cannot be set to an epoch (PyTorch's \
             get_lr raises NotImplementedError there)"
                .into(),
        ))
    }

    fn undo_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_step();
        }
    }

    fn initial_step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.step(optimizer)
    }

    fn state_dict(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("_last_lr".into(), f64s_json(&self.last_lr));
        map.insert("_schedulers".into(), nested_states(&self.schedulers));
        map
    }

    fn load_state_dict(&mut self, state: &Map<String, Value>) -> Result<()> {
        let mut r = Reader::new(state, "ChainedScheduler");
        let last_lr = r.f64s("_last_lr", self.last_lr.len(), &self.last_lr)?;
        let nested = r.get("_schedulers");
        r.finish()?;
        if let Some(nested) = nested {
            load_nested(&mut self.schedulers, nested, "ChainedScheduler")?;
        }
        self.last_lr = last_lr;
        Ok(())
    }
}
