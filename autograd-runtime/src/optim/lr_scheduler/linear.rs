//! `LinearLR`: a linear ramp of the learning rate's factor (warm-up).

use serde_json::{Map, Value};

use super::state::{Reader, f64_json};
use super::{Base, Rule, current, impl_scheduler};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Multiplies each group's learning rate by a factor that goes linearly from `start_factor` to
/// `end_factor` over `total_iters` steps: PyTorch's `LinearLR` (defaults 1/3, 1.0, 5), the
/// usual warm-up.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LinearLR, LrScheduler};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let mut warmup = LinearLR::new(&mut opt, 0.25, 1.0, 3)?;
/// assert_eq!(warmup.get_last_lr(), &[0.25]);
/// for want in [0.5, 0.75, 1.0, 1.0] {
///     warmup.step(&mut opt)?;
///     assert!((opt.lrs()[0] - want).abs() < 1e-15);
/// }
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct LinearLR {
    base: Base,
    start_factor: f64,
    end_factor: f64,
    total_iters: i64,
}

impl LinearLR {
    /// A `LinearLR` on `optimizer`.
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError`s as [`Error::InvalidArgument`] for factors out of range.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        start_factor: f64,
        end_factor: f64,
        total_iters: usize,
    ) -> Result<LinearLR> {
        if start_factor > 1.0 || start_factor <= 0.0 {
            return Err(Error::InvalidArgument(
                "Starting multiplicative factor expected to be greater than 0 and less or equal \
                 to 1."
                    .into(),
            ));
        }
        if !(0.0..=1.0).contains(&end_factor) {
            return Err(Error::InvalidArgument(
                "Ending multiplicative factor expected to be between 0 and 1.".into(),
            ));
        }
        let mut s = LinearLR {
            base: Base::attach(optimizer),
            start_factor,
            end_factor,
            total_iters: total_iters as i64,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for LinearLR {
    const NAME: &'static str = "LinearLR";
    type Hyper = (f64, f64, i64);
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        map.insert("start_factor".into(), f64_json(self.start_factor));
        map.insert("end_factor".into(), f64_json(self.end_factor));
        map.insert("total_iters".into(), Value::from(self.total_iters));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<(f64, f64, i64)> {
        Ok((
            r.f64("start_factor", self.start_factor)?,
            r.f64("end_factor", self.end_factor)?,
            r.i64("total_iters", self.total_iters)?,
        ))
    }
    fn set_hyper(&mut self, (s, e, t): (f64, f64, i64)) {
        self.start_factor = s;
        self.end_factor = e;
        self.total_iters = t;
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
        if e == 0 {
            return Ok(lrs.into_iter().map(|lr| lr * self.start_factor).collect());
        }
        if self.base.is_initial || e > self.total_iters {
            return Ok(lrs);
        }
        let (s, f) = (self.start_factor, self.end_factor);
        let factor = 1.0 + (f - s) / (self.total_iters as f64 * s + (e - 1) as f64 * (f - s));
        Ok(lrs.into_iter().map(|lr| lr * factor).collect())
    }
    fn closed_form(&self) -> Option<Vec<f64>> {
        let (s, f) = (self.start_factor, self.end_factor);
        let t = self.total_iters;
        let k = t.min(self.base.last_epoch) as f64;
        Some(
            self.base
                .base_lrs
                .iter()
                .map(|b| b * (s + (f - s) * k / t as f64))
                .collect(),
        )
    }
}

impl_scheduler!(LinearLR);
