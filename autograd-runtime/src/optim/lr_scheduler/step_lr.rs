//! `StepLR`: decay by `gamma` every `step_size` epochs.

use serde_json::{Map, Value};

use super::state::{Reader, f64_json};
use super::{Base, Rule, current, impl_scheduler};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Multiplies each group's learning rate by `gamma` every `step_size` epochs: PyTorch's
/// `StepLR`.
///
/// # Examples
///
/// See the [module docs](super).
#[derive(Debug)]
pub struct StepLR {
    base: Base,
    step_size: i64,
    gamma: f64,
}

impl StepLR {
    /// A `StepLR` on `optimizer` (PyTorch's default `gamma` is 0.1).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `step_size` of 0.
    pub fn new(optimizer: &mut dyn Optimizer, step_size: usize, gamma: f64) -> Result<StepLR> {
        if step_size == 0 {
            return Err(Error::InvalidArgument(
                "StepLR: step_size must be positive".into(),
            ));
        }
        let mut s = StepLR {
            base: Base::attach(optimizer),
            step_size: step_size as i64,
            gamma,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for StepLR {
    const NAME: &'static str = "StepLR";
    type Hyper = (i64, f64);
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        map.insert("step_size".into(), Value::from(self.step_size));
        map.insert("gamma".into(), f64_json(self.gamma));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<(i64, f64)> {
        let step_size = r.i64("step_size", self.step_size)?;
        if step_size <= 0 {
            return Err(r.error(format!("\"step_size\" must be positive, got {step_size}")));
        }
        Ok((step_size, r.f64("gamma", self.gamma)?))
    }
    fn set_hyper(&mut self, (step_size, gamma): (i64, f64)) {
        self.step_size = step_size;
        self.gamma = gamma;
    }
    fn base(&self) -> &Base {
        &self.base
    }
    fn base_mut(&mut self) -> &mut Base {
        &mut self.base
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.base.last_epoch;
        let lrs = current(optimizer);
        if e == 0 || e % self.step_size != 0 {
            return Ok(lrs);
        }
        Ok(lrs.into_iter().map(|lr| lr * self.gamma).collect())
    }
    fn closed_form(&self) -> Option<Vec<f64>> {
        let k = self.base.last_epoch.div_euclid(self.step_size) as f64;
        Some(
            self.base
                .base_lrs
                .iter()
                .map(|b| b * self.gamma.powf(k))
                .collect(),
        )
    }
}

impl_scheduler!(StepLR);
