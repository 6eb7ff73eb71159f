//! `CosineAnnealingLR`: half a cosine from the base learning rate down to `eta_min`.

use std::f64::consts::PI;

use serde_json::{Map, Value};

use super::state::{Reader, f64_json};
use super::{Base, Rule, current, impl_scheduler};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Anneals each group's learning rate from its initial value to `eta_min` along a cosine over
/// `t_max` steps (and back up after, periodically): PyTorch's `CosineAnnealingLR`, in its
/// recursive form.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{CosineAnnealingLR, LrScheduler};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let mut sched = CosineAnnealingLR::new(&mut opt, 2, 0.0)?;
/// sched.step(&mut opt)?;
/// assert!((sched.get_last_lr()[0] - 0.5).abs() < 1e-15);
/// sched.step(&mut opt)?;
/// assert!(sched.get_last_lr()[0].abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct CosineAnnealingLR {
    base: Base,
    t_max: i64,
    eta_min: f64,
}

impl CosineAnnealingLR {
    /// A `CosineAnnealingLR` on `optimizer` (PyTorch's default `eta_min` is 0).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `t_max` of 0.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        t_max: usize,
        eta_min: f64,
    ) -> Result<CosineAnnealingLR> {
        if t_max == 0 {
            return Err(Error::InvalidArgument(
                "CosineAnnealingLR: T_max must be positive".into(),
            ));
        }
        let mut s = CosineAnnealingLR {
            base: Base::attach(optimizer),
            t_max: t_max as i64,
            eta_min,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for CosineAnnealingLR {
    const NAME: &'static str = "CosineAnnealingLR";
    type Hyper = (i64, f64);
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        map.insert("T_max".into(), Value::from(self.t_max));
        map.insert("eta_min".into(), f64_json(self.eta_min));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<(i64, f64)> {
        let t_max = r.i64("T_max", self.t_max)?;
        if t_max <= 0 {
            return Err(r.error(format!("\"T_max\" must be positive, got {t_max}")));
        }
        Ok((t_max, r.f64("eta_min", self.eta_min)?))
    }
    fn set_hyper(&mut self, (t_max, eta_min): (i64, f64)) {
        self.t_max = t_max;
        self.eta_min = eta_min;
    }
    fn base(&self) -> &Base {
        &self.base
    }
    fn base_mut(&mut self) -> &mut Base {
        &mut self.base
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let lrs = current(optimizer);
        let (e, t, eta) = (self.base.last_epoch, self.t_max, self.eta_min);
        let tf = t as f64;
        if self.base.is_initial {
            return Ok(lrs);
        }
        if self.base.step_count == 1 && e > 0 {
            return Ok(self
                .base
                .base_lrs
                .iter()
                .map(|b| eta + (b - eta) * (1.0 + (e as f64 * PI / tf).cos()) / 2.0)
                .collect());
        }
        if (e - 1 - t).rem_euclid(2 * t) == 0 {
            return Ok(lrs
                .iter()
                .zip(&self.base.base_lrs)
                .map(|(lr, b)| lr + (b - eta) * (1.0 - (PI / tf).cos()) / 2.0)
                .collect());
        }
        let ratio = (1.0 + (PI * e as f64 / tf).cos()) / (1.0 + (PI * (e - 1) as f64 / tf).cos());
        Ok(lrs.iter().map(|lr| ratio * (lr - eta) + eta).collect())
    }
    fn closed_form(&self) -> Option<Vec<f64>> {
        let (e, tf, eta) = (self.base.last_epoch as f64, self.t_max as f64, self.eta_min);
        Some(
            self.base
                .base_lrs
                .iter()
                .map(|b| eta + (b - eta) * (1.0 + (PI * e / tf).cos()) / 2.0)
                .collect(),
        )
    }
}

impl_scheduler!(CosineAnnealingLR);
