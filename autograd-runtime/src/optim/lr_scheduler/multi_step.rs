//! `MultiStepLR`: decay by `gamma` at each milestone.

use serde_json::{Map, Value};

use super::state::{Reader, f64_json};
use super::{Base, Rule, current, impl_scheduler};
use crate::Result;
use crate::optim::Optimizer;

/// Multiplies each group's learning rate by `gamma` when the epoch reaches one of
/// `milestones` (by `gamma^n` at a milestone given `n` times): PyTorch's `MultiStepLR`
/// (default `gamma` 0.1).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LrScheduler, MultiStepLR};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let mut sched = MultiStepLR::new(&mut opt, &[2, 4], 0.5)?;
/// let mut lrs = vec![sched.get_last_lr()[0]];
/// for _ in 0..5 {
///     opt.step()?;
///     sched.step(&mut opt)?;
///     lrs.push(sched.get_last_lr()[0]);
/// }
/// assert_eq!(lrs, [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct MultiStepLR {
    base: Base,
    /// Sorted, repeated as often as given (PyTorch's `Counter`).
    milestones: Vec<i64>,
    gamma: f64,
}

impl MultiStepLR {
    /// A `MultiStepLR` on `optimizer` decaying at `milestones` (epoch indices; PyTorch's
    /// `Counter` of them, so their order does not matter and a repeated one decays twice).
    ///
    /// # Errors
    ///
    /// None today; a `Result` as every scheduler's constructor.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        milestones: &[usize],
        gamma: f64,
    ) -> Result<MultiStepLR> {
        let mut milestones: Vec<i64> = milestones.iter().map(|&m| m as i64).collect();
        milestones.sort_unstable();
        let mut s = MultiStepLR {
            base: Base::attach(optimizer),
            milestones,
            gamma,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for MultiStepLR {
    const NAME: &'static str = "MultiStepLR";
    type Hyper = (Vec<i64>, f64);
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        // PyTorch's `Counter({milestone: count})`, as JSON writes a dict with integer keys.
        let mut counter = Map::new();
        for &m in &self.milestones {
            let n = counter
                .get(&m.to_string())
                .and_then(Value::as_u64)
                .unwrap_or(0);
            counter.insert(m.to_string(), Value::from(n + 1));
        }
        map.insert("milestones".into(), Value::Object(counter));
        map.insert("gamma".into(), f64_json(self.gamma));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<Self::Hyper> {
        let milestones = match r.get("milestones") {
            None => self.milestones.clone(),
            Some(v) => {
                let parsed = v.as_object().and_then(|counter| {
                    let mut out = Vec::new();
                    for (k, n) in counter {
                        let m = k.parse::<i64>().ok()?;
                        out.extend(std::iter::repeat_n(m, n.as_u64()? as usize));
                    }
                    out.sort_unstable();
                    Some(out)
                });
                parsed.ok_or_else(|| {
                    r.error(format!(
                        "\"milestones\" is not a Counter of epochs (a dictionary from integers \
                         to counts): {v}"
                    ))
                })?
            }
        };
        Ok((milestones, r.f64("gamma", self.gamma)?))
    }
    fn set_hyper(&mut self, (milestones, gamma): Self::Hyper) {
        self.milestones = milestones;
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
        let n = self.milestones.iter().filter(|&&m| m == e).count();
        if n == 0 {
            return Ok(lrs);
        }
        let factor = self.gamma.powf(n as f64);
        Ok(lrs.into_iter().map(|lr| lr * factor).collect())
    }
    fn closed_form(&self) -> Option<Vec<f64>> {
        let e = self.base.last_epoch;
        let k = self.milestones.partition_point(|&m| m <= e) as f64;
        Some(
            self.base
                .base_lrs
                .iter()
                .map(|b| b * self.gamma.powf(k))
                .collect(),
        )
    }
}

impl_scheduler!(MultiStepLR);
