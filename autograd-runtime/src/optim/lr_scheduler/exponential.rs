//! `ExponentialLR`: decay by `gamma` every epoch.

use serde_json::{Map, Value};

use super::state::{Reader, f64_json};
use super::{Base, Rule, current, impl_scheduler};
use crate::Result;
use crate::optim::Optimizer;

/// Multiplies each group's learning rate by `gamma` every epoch: PyTorch's `ExponentialLR`
/// (`lr = base_lr · gamma^epoch`, computed recursively as PyTorch's `step()` does).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{ExponentialLR, LrScheduler};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let mut sched = ExponentialLR::new(&mut opt, 0.5)?;
/// let mut lrs = vec![sched.get_last_lr()[0]];
/// for _ in 0..3 {
///     opt.step()?;
///     sched.step(&mut opt)?;
///     lrs.push(sched.get_last_lr()[0]);
/// }
/// assert_eq!(lrs, [1.0, 0.5, 0.25, 0.125]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct ExponentialLR {
    base: Base,
    gamma: f64,
}

impl ExponentialLR {
    /// An `ExponentialLR` on `optimizer` (`gamma` has no default in PyTorch either).
    ///
    /// # Errors
    ///
    /// None today; a `Result` as every scheduler's constructor.
    pub fn new(optimizer: &mut dyn Optimizer, gamma: f64) -> Result<ExponentialLR> {
        let mut s = ExponentialLR {
            base: Base::attach(optimizer),
            gamma,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for ExponentialLR {
    const NAME: &'static str = "ExponentialLR";
    type Hyper = f64;
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        map.insert("gamma".into(), f64_json(self.gamma));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<f64> {
        r.f64("gamma", self.gamma)
    }
    fn set_hyper(&mut self, gamma: f64) {
        self.gamma = gamma;
    }
    fn base(&self) -> &Base {
        &self.base
    }
    fn base_mut(&mut self) -> &mut Base {
        &mut self.base
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let lrs = current(optimizer);
        if self.base.is_initial {
            return Ok(lrs);
        }
        Ok(lrs.into_iter().map(|lr| lr * self.gamma).collect())
    }
    fn closed_form(&self) -> Option<Vec<f64>> {
        let e = self.base.last_epoch as f64;
        Some(
            self.base
                .base_lrs
                .iter()
                .map(|b| b * self.gamma.powf(e))
                .collect(),
        )
    }
}

impl_scheduler!(ExponentialLR);
