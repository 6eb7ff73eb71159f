//! `SequentialLR`: schedulers one after the other (warm-up, then the main schedule).

use serde_json::{Map, Value};

use super::LrScheduler;
use super::state::{Reader, f64s_json};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Runs `schedulers[i]` from `milestones[i - 1]` on: PyTorch's `SequentialLR`, the usual way to
/// put a [`LinearLR`](super::LinearLR) warm-up before another schedule. At each milestone the
/// next scheduler starts from its closed form at epoch 0.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LinearLR, LrScheduler, SequentialLR, StepLR};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let warmup = LinearLR::new(&mut opt, 0.5, 1.0, 2)?;
/// let decay = StepLR::new(&mut opt, 1, 0.5)?;
/// let mut sched = SequentialLR::new(&mut opt, vec![Box::new(warmup), Box::new(decay)], vec![2])?;
/// let mut lrs = vec![sched.get_last_lr()[0]];
/// for _ in 0..4 {
///     sched.step(&mut opt)?;
///     lrs.push(sched.get_last_lr()[0]);
/// }
/// assert_eq!(lrs, vec![0.5, 0.75, 1.0, 0.5, 0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct SequentialLR {
    schedulers: Vec<Box<dyn LrScheduler>>,
    milestones: Vec<i64>,
    last_epoch: i64,
    last_lr: Vec<f64>,
}

impl SequentialLR {
    /// Chains `schedulers` (all built on `optimizer`), switching at `milestones`.
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError`s as [`Error::InvalidArgument`]: no scheduler, or not one
    /// milestone fewer than schedulers.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        mut schedulers: Vec<Box<dyn LrScheduler>>,
        milestones: Vec<usize>,
    ) -> Result<SequentialLR> {
        if schedulers.is_empty() {
            return Err(Error::InvalidArgument(
                "SequentialLR expects at least one scheduler, but got no scheduler.".into(),
            ));
        }
        if milestones.len() != schedulers.len() - 1 {
            return Err(Error::InvalidArgument(format!(
                "Sequential Schedulers expects number of schedulers provided to be one more than \
                 the number of milestone points, but got number of schedulers {} and the number \
                 of milestones to be equal to {}",
                schedulers.len(),
                milestones.len()
            )));
        }
        for g in optimizer.param_groups_mut() {
            if let Some(lr0) = g.initial_lr() {
                g.set_lr(lr0);
            }
        }
        for s in &mut schedulers {
            s.undo_step();
        }
        let milestones: Vec<i64> = milestones.into_iter().map(|m| m as i64).collect();
        let idx = milestones.partition_point(|&m| m <= 0);
        schedulers[idx].initial_step(optimizer)?;
        let last_lr = schedulers[idx].get_last_lr().to_vec();
        Ok(SequentialLR {
            schedulers,
            milestones,
            last_epoch: 0,
            last_lr,
        })
    }
}

impl LrScheduler for SequentialLR {
    fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.last_epoch += 1;
        let e = self.last_epoch;
        let idx = self.milestones.partition_point(|&m| m <= e);
        let s = &mut self.schedulers[idx];
        if idx > 0 && self.milestones[idx - 1] == e {
            s.step_to(optimizer, 0)?;
        } else {
            s.step(optimizer)?;
        }
        self.last_lr = s.get_last_lr().to_vec();
        Ok(())
    }

    fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }

    fn last_epoch(&self) -> i64 {
        self.last_epoch
    }

    fn step_to(&mut self, optimizer: &mut dyn Optimizer, epoch: i64) -> Result<()> {
        while self.last_epoch < epoch {
            self.step(optimizer)?;
        }
        Ok(())
    }

    fn undo_step(&mut self) {
        for s in &mut self.schedulers {
            s.undo_step();
        }
    }

    fn initial_step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        let idx = self.milestones.partition_point(|&m| m <= 0);
        self.schedulers[idx].initial_step(optimizer)?;
        self.last_lr = self.schedulers[idx].get_last_lr().to_vec();
        Ok(())
    }

    fn state_dict(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("_milestones".into(), Value::from(self.milestones.clone()));
        map.insert("last_epoch".into(), Value::from(self.last_epoch));
        map.insert("_last_lr".into(), f64s_json(&self.last_lr));
        map.insert("_schedulers".into(), nested_states(&self.schedulers));
        map
    }

    fn load_state_dict(&mut self, state: &Map<String, Value>) -> Result<()> {
        let mut r = Reader::new(state, "SequentialLR");
        let milestones = match r.get("_milestones") {
            None => self.milestones.clone(),
            Some(v) => v
                .as_array()
                .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>())
                .filter(|m| m.len() == self.milestones.len())
                .ok_or_else(|| {
                    r.error(format!(
                        "\"_milestones\" is not a list of {} integers: {v}",
                        self.milestones.len()
                    ))
                })?,
        };
        let last_epoch = r.i64("last_epoch", self.last_epoch)?;
        let last_lr = r.f64s("_last_lr", self.last_lr.len(), &self.last_lr)?;
        let nested = r.get("_schedulers");
        r.finish()?;
        if let Some(nested) = nested {
            load_nested(&mut self.schedulers, nested, "SequentialLR")?;
        }
        self.milestones = milestones;
        self.last_epoch = last_epoch;
        self.last_lr = last_lr;
        Ok(())
    }
}

/// The states of `schedulers`, as PyTorch's `_schedulers` list.
pub(crate) fn nested_states(schedulers: &[Box<dyn LrScheduler>]) -> Value {
    Value::Array(
        schedulers
            .iter()
            .map(|s| Value::Object(s.state_dict()))
            .collect(),
    )
}

/// Loads PyTorch's `_schedulers` list into `schedulers`, all or none: if one fails, those
/// loaded before it get their previous state back.
pub(crate) fn load_nested(
    schedulers: &mut [Box<dyn LrScheduler>],
    nested: &Value,
    name: &str,
) -> Result<()> {
    let error = |message: String| Error::StateDict {
        module: name.to_string(),
        message,
    };
    let list = nested
        .as_array()
        .ok_or_else(|| error("\"_schedulers\" is not a list".into()))?;
    if list.len() != schedulers.len() {
        return Err(error(format!(
            "\"_schedulers\" has {} states, the scheduler chains {}",
            list.len(),
            schedulers.len()
        )));
    }
    let before: Vec<Map<String, Value>> = schedulers.iter().map(|s| s.state_dict()).collect();
    for (i, (s, v)) in schedulers.iter_mut().zip(list).enumerate() {
        let result = match v.as_object() {
            Some(state) => s.load_state_dict(state),
            None => Err(error(format!("\"_schedulers\"[{i}] is not a dictionary"))),
        };
        if let Err(e) = result {
            for (s, old) in schedulers.iter_mut().zip(&before).take(i) {
                s.load_state_dict(old)
                    .expect("invariant: a state the scheduler just wrote loads back");
            }
            return Err(e);
        }
    }
    Ok(())
}
