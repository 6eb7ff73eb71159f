//! `OneCycleLR`: the 1cycle policy (warm up to `max_lr`, anneal far below the start).

use std::f64::consts::PI;

use serde_json::{Map, Value};

use super::state::{Reader, as_f64, f64_json};
use super::{Base, Rule, impl_scheduler};
use crate::error::py_float;
use crate::optim::Optimizer;
use crate::{Error, Result};

/// How [`OneCycleLR`] interpolates within a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anneal {
    /// Half a cosine (PyTorch's `"cos"`, the default).
    Cos,
    /// A straight line (`"linear"`).
    Linear,
}

/// The options of [`OneCycleLR`], with PyTorch's defaults: `pct_start` 0.3, cosine annealing,
/// momentum cycled between 0.85 and 0.95, `div_factor` 25, `final_div_factor` 1e4, two phases.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{Anneal, OneCycleOptions};
/// let o = OneCycleOptions::default();
/// assert_eq!((o.pct_start, o.anneal, o.div_factor, o.final_div_factor), (0.3, Anneal::Cos, 25.0, 1e4));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OneCycleOptions {
    /// The share of the cycle spent increasing the learning rate.
    pub pct_start: f64,
    /// The interpolation.
    pub anneal: Anneal,
    /// Cycle the momentum (SGD's and RMSprop's `momentum`, Adam's `betas.0`) inversely.
    pub cycle_momentum: bool,
    /// The lowest momentum (reached at the peak learning rate).
    pub base_momentum: f64,
    /// The highest momentum.
    pub max_momentum: f64,
    /// `initial_lr = max_lr / div_factor`.
    pub div_factor: f64,
    /// `min_lr = initial_lr / final_div_factor`.
    pub final_div_factor: f64,
    /// Three phases (up, down to `initial_lr`, down to `min_lr`) instead of two.
    pub three_phase: bool,
}

impl Default for OneCycleOptions {
    fn default() -> OneCycleOptions {
        OneCycleOptions {
            pct_start: 0.3,
            anneal: Anneal::Cos,
            cycle_momentum: true,
            base_momentum: 0.85,
            max_momentum: 0.95,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }
}

/// One phase: where it ends and which values it goes between.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Phase {
    end_step: f64,
    /// Index into `[initial, max, min]` learning rates.
    start_lr: usize,
    end_lr: usize,
    /// `true`: the phase starts at `max_momentum`.
    start_momentum_max: bool,
    end_momentum_max: bool,
}

/// The 1cycle learning-rate policy: PyTorch's `OneCycleLR`, stepped once per batch for
/// `total_steps` steps.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LrScheduler, OneCycleLR, OneCycleOptions};
/// use autograd_runtime::optim::{Adam, AdamOptions, Optimizer};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Adam::new(vec![w], AdamOptions::default())?;
/// let mut sched = OneCycleLR::new(&mut opt, 0.1, 10, OneCycleOptions::default())?;
/// assert!((sched.get_last_lr()[0] - 0.004).abs() < 1e-15);     // max_lr / 25
/// for _ in 0..2 {
///     sched.step(&mut opt)?;
/// }
/// assert!((sched.get_last_lr()[0] - 0.1).abs() < 1e-15);       // the peak, at step 0.3·10 − 1
/// assert_eq!(opt.groups()[0].options().betas.0, 0.85);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct OneCycleLR {
    base: Base,
    total_steps: i64,
    phases: Vec<Phase>,
    anneal: Anneal,
    cycle_momentum: bool,
    /// Per group: `[initial_lr, max_lr, min_lr]`.
    lrs: Vec<[f64; 3]>,
    base_momentum: f64,
    max_momentum: f64,
    /// The optimizer's momentum is Adam's `betas.0` (PyTorch's `use_beta1`).
    use_beta1: bool,
}

/// The names PyTorch's `_schedule_phases` give the learning rates, in `lrs`' order.
const LR_NAMES: [&str; 3] = ["initial_lr", "max_lr", "min_lr"];

impl Phase {
    /// The phase as PyTorch's `_SchedulePhase` dictionary.
    fn to_json(self) -> Value {
        let momentum = |max: bool| if max { "max_momentum" } else { "base_momentum" };
        let mut m = Map::new();
        m.insert("end_step".into(), f64_json(self.end_step));
        m.insert("start_lr".into(), LR_NAMES[self.start_lr].into());
        m.insert("end_lr".into(), LR_NAMES[self.end_lr].into());
        m.insert(
            "start_momentum".into(),
            momentum(self.start_momentum_max).into(),
        );
        m.insert(
            "end_momentum".into(),
            momentum(self.end_momentum_max).into(),
        );
        Value::Object(m)
    }

    /// A phase read back from [`to_json`](Phase::to_json)'s form.
    fn from_json(v: &Value) -> std::result::Result<Phase, String> {
        let m = v.as_object().ok_or("a phase is not a dictionary")?;
        let text = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a phase has no string \"{k}\""))
        };
        let lr = |k: &str| {
            let name = text(k)?;
            LR_NAMES
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| format!("unknown learning rate {name:?} in a phase"))
        };
        let momentum = |k: &str| match text(k)? {
            "max_momentum" => Ok(true),
            "base_momentum" => Ok(false),
            other => Err(format!("unknown momentum {other:?} in a phase")),
        };
        Ok(Phase {
            end_step: m
                .get("end_step")
                .and_then(as_f64)
                .ok_or("a phase has no number \"end_step\"")?,
            start_lr: lr("start_lr")?,
            end_lr: lr("end_lr")?,
            start_momentum_max: momentum("start_momentum")?,
            end_momentum_max: momentum("end_momentum")?,
        })
    }
}

impl OneCycleLR {
    /// A `OneCycleLR` on `optimizer` peaking at `max_lr` in every group, over `total_steps`.
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError`s as [`Error::InvalidArgument`]: `total_steps` of 0,
    /// `pct_start` outside `[0, 1]`, `cycle_momentum` on an optimizer without momentum.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        max_lr: f64,
        total_steps: usize,
        options: OneCycleOptions,
    ) -> Result<OneCycleLR> {
        let n = optimizer.param_groups().len();
        OneCycleLR::with_max_lrs(optimizer, &vec![max_lr; n], total_steps, options)
    }

    /// As [`new`](OneCycleLR::new), with one `max_lr` per group.
    ///
    /// # Errors
    ///
    /// As [`new`](OneCycleLR::new), and a `max_lrs` of the wrong length.
    pub fn with_max_lrs(
        optimizer: &mut dyn Optimizer,
        max_lrs: &[f64],
        total_steps: usize,
        o: OneCycleOptions,
    ) -> Result<OneCycleLR> {
        if total_steps == 0 {
            return Err(Error::InvalidArgument(format!(
                "Expected positive integer total_steps, but got {total_steps}"
            )));
        }
        let total = total_steps as f64;
        let phases = if o.three_phase {
            vec![
                Phase {
                    end_step: o.pct_start * total - 1.0,
                    start_lr: 0,
                    end_lr: 1,
                    start_momentum_max: true,
                    end_momentum_max: false,
                },
                Phase {
                    end_step: 2.0 * o.pct_start * total - 2.0,
                    start_lr: 1,
                    end_lr: 0,
                    start_momentum_max: false,
                    end_momentum_max: true,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: 0,
                    end_lr: 2,
                    start_momentum_max: true,
                    end_momentum_max: true,
                },
            ]
        } else {
            vec![
                Phase {
                    end_step: o.pct_start * total - 1.0,
                    start_lr: 0,
                    end_lr: 1,
                    start_momentum_max: true,
                    end_momentum_max: false,
                },
                Phase {
                    end_step: total - 1.0,
                    start_lr: 1,
                    end_lr: 2,
                    start_momentum_max: false,
                    end_momentum_max: true,
                },
            ]
        };
        if !(0.0..=1.0).contains(&o.pct_start) {
            return Err(Error::InvalidArgument(format!(
                "Expected float between 0 and 1 pct_start, but got {}",
                py_float(o.pct_start)
            )));
        }
        let groups = optimizer.param_groups().len();
        if max_lrs.len() != groups {
            return Err(Error::InvalidArgument(format!(
                "expected {groups} values for max_lr, got {}",
                max_lrs.len()
            )));
        }
        let mut lrs = Vec::with_capacity(groups);
        for (g, &max_lr) in optimizer.param_groups_mut().into_iter().zip(max_lrs) {
            let initial = max_lr / o.div_factor;
            g.set_initial_lr(initial);
            lrs.push([initial, max_lr, initial / o.final_div_factor]);
        }
        if o.cycle_momentum {
            if optimizer
                .param_groups()
                .iter()
                .any(|g| g.momentum().is_none())
            {
                return Err(Error::InvalidArgument(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option \
                     enabled"
                        .into(),
                ));
            }
            for g in optimizer.param_groups_mut() {
                g.set_momentum(o.max_momentum);
            }
        }
        let use_beta1 = o.cycle_momentum
            && optimizer
                .param_groups()
                .first()
                .is_some_and(|g| g.options_json().contains_key("betas"));
        let mut s = OneCycleLR {
            base: Base::attach(optimizer),
            total_steps: total_steps as i64,
            phases,
            anneal: o.anneal,
            cycle_momentum: o.cycle_momentum,
            lrs,
            base_momentum: o.base_momentum,
            max_momentum: o.max_momentum,
            use_beta1,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }

    fn anneal(&self, start: f64, end: f64, pct: f64) -> f64 {
        match self.anneal {
            Anneal::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            Anneal::Linear => (end - start) * pct + start,
        }
    }
}

impl Rule for OneCycleLR {
    const NAME: &'static str = "OneCycleLR";
    type Hyper = (i64, Vec<Phase>, Anneal, bool, bool);
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        map.insert("total_steps".into(), Value::from(self.total_steps));
        let phases = self.phases.iter().map(|p| p.to_json()).collect();
        map.insert("_schedule_phases".into(), Value::Array(phases));
        let anneal = match self.anneal {
            Anneal::Cos => "cos",
            Anneal::Linear => "linear",
        };
        map.insert("_anneal_func_type".into(), anneal.into());
        map.insert("cycle_momentum".into(), self.cycle_momentum.into());
        map.insert("use_beta1".into(), self.use_beta1.into());
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<Self::Hyper> {
        let total_steps = r.i64("total_steps", self.total_steps)?;
        let phases = match r.get("_schedule_phases") {
            None => self.phases.clone(),
            Some(v) => v
                .as_array()
                .ok_or_else(|| "\"_schedule_phases\" is not a list".to_string())
                .and_then(|a| a.iter().map(Phase::from_json).collect())
                .map_err(|e| r.error(e))?,
        };
        if phases.is_empty() {
            return Err(r.error("\"_schedule_phases\" is empty".into()));
        }
        let anneal = match r.str("_anneal_func_type")? {
            None => self.anneal,
            Some("cos") => Anneal::Cos,
            Some("linear") => Anneal::Linear,
            Some(other) => {
                return Err(r.error(format!(
                    "anneal_strategy must be one of 'cos' or 'linear', instead got {other}"
                )));
            }
        };
        let cycle_momentum = r.bool("cycle_momentum", self.cycle_momentum)?;
        let use_beta1 = r.bool("use_beta1", self.use_beta1)?;
        Ok((total_steps, phases, anneal, cycle_momentum, use_beta1))
    }
    fn set_hyper(&mut self, h: Self::Hyper) {
        (
            self.total_steps,
            self.phases,
            self.anneal,
            self.cycle_momentum,
            self.use_beta1,
        ) = h;
    }
    fn base(&self) -> &Base {
        &self.base
    }
    fn base_mut(&mut self) -> &mut Base {
        &mut self.base
    }
    fn get_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let step = self.base.last_epoch;
        if step > self.total_steps {
            return Err(Error::InvalidArgument(format!(
                "Tried to step {step} times. The specified number of total steps is {}",
                self.total_steps
            )));
        }
        let step = step as f64;
        let mut out = Vec::with_capacity(self.lrs.len());
        let mut momenta = Vec::with_capacity(self.lrs.len());
        for lrs in &self.lrs {
            let mut start_step = 0.0;
            for (i, phase) in self.phases.iter().enumerate() {
                if step <= phase.end_step || i == self.phases.len() - 1 {
                    let pct = (step - start_step) / (phase.end_step - start_step);
                    out.push(self.anneal(lrs[phase.start_lr], lrs[phase.end_lr], pct));
                    let m = |max: bool| {
                        if max {
                            self.max_momentum
                        } else {
                            self.base_momentum
                        }
                    };
                    momenta.push(self.anneal(
                        m(phase.start_momentum_max),
                        m(phase.end_momentum_max),
                        pct,
                    ));
                    break;
                }
                start_step = phase.end_step;
            }
        }
        if self.cycle_momentum {
            for (g, m) in optimizer.param_groups_mut().into_iter().zip(momenta) {
                g.set_momentum(m);
            }
        }
        Ok(out)
    }
}

impl_scheduler!(OneCycleLR);
