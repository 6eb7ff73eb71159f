//! `ReduceLROnPlateau`: cut the learning rate when a metric stops improving.

use serde_json::{Map, Value};

use super::state::{Reader, f64_json, f64s_json};
use crate::error::py_float;
use crate::optim::Optimizer;
use crate::{Error, Result};

/// Whether the monitored metric should go down (a loss) or up (an accuracy).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{PlateauMode, ReduceLROnPlateau, ReduceLROnPlateauOptions};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let mut opt = Sgd::new([w], SgdOptions::default().lr(1.0))?;
/// let o = ReduceLROnPlateauOptions { mode: PlateauMode::Max, patience: 0, factor: 0.5, ..Default::default() };
/// let mut sched = ReduceLROnPlateau::new(&mut opt, o)?;
/// for accuracy in [0.5, 0.6, 0.55] {
///     sched.step(accuracy, &mut opt)?;
/// }
/// assert_eq!(sched.best(), 0.6);
/// assert_eq!(opt.lrs(), [0.5]);           // 0.55 is no improvement on 0.6
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlateauMode {
    /// PyTorch's `"min"` (the default).
    Min,
    /// `"max"`.
    Max,
}

/// How [`ReduceLROnPlateau`] decides that a value improves on the best one.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{ReduceLROnPlateau, ReduceLROnPlateauOptions, ThresholdMode};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let mut opt = Sgd::new([w], SgdOptions::default().lr(1.0))?;
/// // Only a drop of more than 0.1 counts as an improvement.
/// let o = ReduceLROnPlateauOptions { threshold_mode: ThresholdMode::Abs, threshold: 0.1, patience: 0, ..Default::default() };
/// let mut sched = ReduceLROnPlateau::new(&mut opt, o)?;
/// sched.step(1.0, &mut opt)?;
/// sched.step(0.95, &mut opt)?;
/// assert_eq!((sched.best(), sched.num_bad_epochs()), (1.0, 0));
/// assert!((opt.lrs()[0] - 0.1).abs() < 1e-15);   // cut: 0.95 is not below 1.0 - 0.1
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdMode {
    /// PyTorch's `"rel"` (the default): better than `best · (1 ∓ threshold)`.
    Rel,
    /// `"abs"`: better than `best ∓ threshold`.
    Abs,
}

impl PlateauMode {
    fn name(self) -> &'static str {
        match self {
            PlateauMode::Min => "min",
            PlateauMode::Max => "max",
        }
    }
}

impl ThresholdMode {
    fn name(self) -> &'static str {
        match self {
            ThresholdMode::Rel => "rel",
            ThresholdMode::Abs => "abs",
        }
    }
}

/// The options of [`ReduceLROnPlateau`], with PyTorch's defaults: mode `min`, `factor` 0.1,
/// `patience` 10, `threshold` 1e-4 relative, no `cooldown`, `min_lr` 0, `eps` 1e-8.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{PlateauMode, ReduceLROnPlateauOptions, ThresholdMode};
/// let o = ReduceLROnPlateauOptions { mode: PlateauMode::Max, patience: 2, ..Default::default() };
/// assert_eq!((o.factor, o.threshold, o.threshold_mode, o.eps), (0.1, 1e-4, ThresholdMode::Rel, 1e-8));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceLROnPlateauOptions {
    /// Whether the metric should decrease or increase.
    pub mode: PlateauMode,
    /// `new_lr = lr · factor`; must be below 1.
    pub factor: f64,
    /// The number of epochs without improvement tolerated before the learning rate is cut.
    pub patience: u64,
    /// How much better than the best a value must be to count as an improvement.
    pub threshold: f64,
    /// Whether `threshold` is relative or absolute.
    pub threshold_mode: ThresholdMode,
    /// Epochs to wait after a cut before counting bad epochs again.
    pub cooldown: u64,
    /// The lowest learning rate of every group (see [`ReduceLROnPlateau::with_min_lrs`] for one
    /// per group).
    pub min_lr: f64,
    /// A cut smaller than `eps` is not made.
    pub eps: f64,
}

impl Default for ReduceLROnPlateauOptions {
    fn default() -> ReduceLROnPlateauOptions {
        ReduceLROnPlateauOptions {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: 0.0,
            eps: 1e-8,
        }
    }
}

/// Multiplies every group's learning rate by `factor` when the metric given to
/// [`step`](ReduceLROnPlateau::step) has not improved for more than `patience` epochs:
/// PyTorch's `ReduceLROnPlateau`. It steps with the metric, so it is not an
/// [`LrScheduler`](super::LrScheduler) (and, as in PyTorch, cannot go into a
/// [`SequentialLR`](super::SequentialLR) or [`ChainedScheduler`](super::ChainedScheduler)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{ReduceLROnPlateau, ReduceLROnPlateauOptions};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let options = ReduceLROnPlateauOptions { patience: 1, factor: 0.5, ..Default::default() };
/// let mut sched = ReduceLROnPlateau::new(&mut opt, options)?;
/// let mut lrs = vec![];
/// for val_loss in [1.0, 0.9, 0.95, 0.95, 0.8, 0.85, 0.85] {
///     sched.step(val_loss, &mut opt)?;
///     lrs.push(opt.lrs()[0]);
/// }
/// // Two epochs without improvement (patience 1) halve the learning rate.
/// assert_eq!(lrs, [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReduceLROnPlateau {
    mode: PlateauMode,
    threshold_mode: ThresholdMode,
    factor: f64,
    patience: i64,
    threshold: f64,
    cooldown: i64,
    /// `min_lr` when one value was given for all groups (PyTorch's `default_min_lr`).
    default_min_lr: Option<f64>,
    min_lrs: Vec<f64>,
    eps: f64,
    last_epoch: i64,
    last_lr: Vec<f64>,
    best: f64,
    cooldown_counter: i64,
    num_bad_epochs: i64,
}

impl ReduceLROnPlateau {
    /// A `ReduceLROnPlateau` on `optimizer` with `options.min_lr` for every group.
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError` as [`Error::InvalidArgument`]: `"Factor should be < 1.0."`.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        options: ReduceLROnPlateauOptions,
    ) -> Result<ReduceLROnPlateau> {
        let n = optimizer.param_groups().len();
        let min_lr = options.min_lr;
        let mut s = ReduceLROnPlateau::build(optimizer, options, vec![min_lr; n])?;
        s.default_min_lr = Some(min_lr);
        Ok(s)
    }

    /// As [`new`](ReduceLROnPlateau::new) with one lowest learning rate per group
    /// (`options.min_lr` is not used).
    ///
    /// # Errors
    ///
    /// As [`new`](ReduceLROnPlateau::new), and PyTorch's `"expected 2 min_lrs, got 1"` when
    /// `min_lrs` is not as long as the optimizer's groups.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::optim::lr_scheduler::{ReduceLROnPlateau, ReduceLROnPlateauOptions};
    /// use autograd_runtime::optim::{Optimizer, ParamGroup, Sgd, SgdOptions};
    /// use autograd_runtime::{DType, Tensor};
    ///
    /// let p = || Tensor::zeros(&[1], DType::F32)?.requires_grad_(true);
    /// let o = SgdOptions::default().lr(1.0);
    /// let mut opt = Sgd::with_groups(vec![ParamGroup::new([p()?], o.clone()), ParamGroup::new([p()?], o)])?;
    /// let options = ReduceLROnPlateauOptions { patience: 0, ..Default::default() };
    /// let mut sched = ReduceLROnPlateau::with_min_lrs(&mut opt, &[0.5, 0.0], options)?;
    /// for loss in [1.0, 2.0, 2.0] {
    ///     sched.step(loss, &mut opt)?;
    /// }
    /// assert_eq!(opt.lrs()[0], 0.5);          // held at its min_lr
    /// assert!((opt.lrs()[1] - 0.01).abs() < 1e-15);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_min_lrs(
        optimizer: &mut dyn Optimizer,
        min_lrs: &[f64],
        options: ReduceLROnPlateauOptions,
    ) -> Result<ReduceLROnPlateau> {
        let n = optimizer.param_groups().len();
        if min_lrs.len() != n {
            return Err(Error::InvalidArgument(format!(
                "expected {n} min_lrs, got {}",
                min_lrs.len()
            )));
        }
        ReduceLROnPlateau::build(optimizer, options, min_lrs.to_vec())
    }

    fn build(
        optimizer: &mut dyn Optimizer,
        o: ReduceLROnPlateauOptions,
        min_lrs: Vec<f64>,
    ) -> Result<ReduceLROnPlateau> {
        if o.factor >= 1.0 {
            return Err(Error::InvalidArgument("Factor should be < 1.0.".into()));
        }
        let mut s = ReduceLROnPlateau {
            mode: o.mode,
            threshold_mode: o.threshold_mode,
            factor: o.factor,
            patience: o.patience as i64,
            threshold: o.threshold,
            cooldown: o.cooldown as i64,
            default_min_lr: None,
            min_lrs,
            eps: o.eps,
            last_epoch: 0,
            last_lr: optimizer.lrs(),
            best: 0.0,
            cooldown_counter: 0,
            num_bad_epochs: 0,
        };
        s.reset();
        Ok(s)
    }

    /// The worst value of the metric for the mode (PyTorch's `mode_worse`).
    fn mode_worse(&self) -> f64 {
        match self.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        }
    }

    /// PyTorch's `_reset()`.
    fn reset(&mut self) {
        self.best = self.mode_worse();
        self.cooldown_counter = 0;
        self.num_bad_epochs = 0;
    }

    /// PyTorch's `_is_better(a, best)`.
    fn is_better(&self, a: f64, best: f64) -> bool {
        match (self.mode, self.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - self.threshold),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - self.threshold,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (self.threshold + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + self.threshold,
        }
    }

    /// One epoch with the value of the monitored metric (a validation loss, an accuracy):
    /// PyTorch's `step(metrics)`. Cuts the learning rates of `optimizer` (the one the scheduler
    /// was made on) when the patience runs out.
    ///
    /// # Errors
    ///
    /// PyTorch's `RuntimeError` text when a cut is due, the optimizer now has another number of
    /// groups, and `min_lr` was given per group; nothing is changed then.
    ///
    /// # Examples
    ///
    /// See [`ReduceLROnPlateau`].
    pub fn step(&mut self, metric: f64, optimizer: &mut dyn Optimizer) -> Result<()> {
        let mut next = self.clone();
        next.last_epoch += 1;
        if next.is_better(metric, next.best) {
            next.best = metric;
            next.num_bad_epochs = 0;
        } else {
            next.num_bad_epochs += 1;
        }
        if next.cooldown_counter > 0 {
            next.cooldown_counter -= 1;
            next.num_bad_epochs = 0;
        }
        if next.num_bad_epochs > next.patience {
            next.reduce_lr(optimizer)?;
            next.cooldown_counter = next.cooldown;
            next.num_bad_epochs = 0;
        }
        next.last_lr = optimizer.lrs();
        *self = next;
        Ok(())
    }

    /// PyTorch's `_reduce_lr`.
    fn reduce_lr(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        let groups = optimizer.param_groups().len();
        if groups != self.min_lrs.len() {
            match self.default_min_lr {
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "The number of param groups in the `optimizer` ({groups}) differs from \
                         when `ReduceLROnPlateau` was initialized ({}), usually due to a new \
                         param group being added to the optimizer. Please modify the `min_lrs` \
                         field to match the length of the `optimizer` param groups.",
                        self.min_lrs.len()
                    )));
                }
                Some(m) => self.min_lrs = vec![m; groups],
            }
        }
        for (g, &min_lr) in optimizer.param_groups_mut().into_iter().zip(&self.min_lrs) {
            let old_lr = g.lr();
            let new_lr = (old_lr * self.factor).max(min_lr);
            if old_lr - new_lr > self.eps {
                g.set_lr(new_lr);
            }
        }
        Ok(())
    }

    /// The learning rates after the last step (before the first, the optimizer's).
    pub fn get_last_lr(&self) -> &[f64] {
        &self.last_lr
    }

    /// The number of steps taken (PyTorch's `last_epoch`, 0 after construction).
    pub fn last_epoch(&self) -> i64 {
        self.last_epoch
    }

    /// The best metric so far (`inf` in `min` mode before the first step).
    pub fn best(&self) -> f64 {
        self.best
    }

    /// The epochs since the last improvement that count against the patience.
    pub fn num_bad_epochs(&self) -> i64 {
        self.num_bad_epochs
    }

    /// The state under PyTorch's keys (`factor`, `default_min_lr`, `min_lrs`, `patience`,
    /// `cooldown`, `eps`, `last_epoch`, `_last_lr`, `mode_worse`, `mode`, `threshold`,
    /// `threshold_mode`, `best`, `cooldown_counter`, `num_bad_epochs`); infinities as `"inf"`
    /// and `"-inf"`. See [`LrScheduler::state_dict`](super::LrScheduler::state_dict).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::optim::lr_scheduler::{ReduceLROnPlateau, ReduceLROnPlateauOptions};
    /// use autograd_runtime::optim::{Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    ///
    /// let w = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// let mut opt = Sgd::new([w], SgdOptions::default().lr(0.1))?;
    /// let mut sched = ReduceLROnPlateau::new(&mut opt, ReduceLROnPlateauOptions::default())?;
    /// assert_eq!(sched.state_dict()["best"], "inf");
    /// sched.step(0.5, &mut opt)?;
    /// let saved = sched.state_dict();
    /// assert_eq!((saved["best"].as_f64(), saved["mode"].as_str()), (Some(0.5), Some("min")));
    ///
    /// let mut resumed = ReduceLROnPlateau::new(&mut opt, ReduceLROnPlateauOptions::default())?;
    /// resumed.load_state_dict(&saved)?;
    /// assert_eq!((resumed.best(), resumed.last_epoch()), (0.5, 1));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn state_dict(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("factor".into(), f64_json(self.factor));
        m.insert(
            "default_min_lr".into(),
            self.default_min_lr.map_or(Value::Null, f64_json),
        );
        m.insert("min_lrs".into(), f64s_json(&self.min_lrs));
        m.insert("patience".into(), Value::from(self.patience));
        m.insert("cooldown".into(), Value::from(self.cooldown));
        m.insert("eps".into(), f64_json(self.eps));
        m.insert("last_epoch".into(), Value::from(self.last_epoch));
        m.insert("_last_lr".into(), f64s_json(&self.last_lr));
        m.insert("mode_worse".into(), f64_json(self.mode_worse()));
        m.insert("mode".into(), self.mode.name().into());
        m.insert("threshold".into(), f64_json(self.threshold));
        m.insert("threshold_mode".into(), self.threshold_mode.name().into());
        m.insert("best".into(), f64_json(self.best));
        m.insert(
            "cooldown_counter".into(),
            Value::from(self.cooldown_counter),
        );
        m.insert("num_bad_epochs".into(), Value::from(self.num_bad_epochs));
        m
    }

    /// Loads a state written by [`state_dict`](ReduceLROnPlateau::state_dict) (or by PyTorch,
    /// through `python/autograd_convert.py`): the keys present replace the scheduler's values.
    ///
    /// # Errors
    ///
    /// [`Error::StateDict`] for an unknown key, a value of the wrong type, a list that is not
    /// one value per group, or PyTorch's `"mode foo is unknown!"` and
    /// `"threshold mode foo is unknown!"`; nothing is changed then.
    ///
    /// # Examples
    ///
    /// See [`state_dict`](ReduceLROnPlateau::state_dict).
    pub fn load_state_dict(&mut self, state: &Map<String, Value>) -> Result<()> {
        let mut r = Reader::new(state, "ReduceLROnPlateau");
        let mut s = self.clone();
        s.factor = r.f64("factor", s.factor)?;
        s.default_min_lr = match r.get("default_min_lr") {
            None => s.default_min_lr,
            Some(Value::Null) => None,
            Some(v) => Some(super::state::as_f64(v).ok_or_else(|| {
                r.error(format!("\"default_min_lr\" is not a number or null: {v}"))
            })?),
        };
        let n = s.min_lrs.len();
        s.min_lrs = r.f64s("min_lrs", n, &s.min_lrs)?;
        s.patience = r.i64("patience", s.patience)?;
        s.cooldown = r.i64("cooldown", s.cooldown)?;
        s.eps = r.f64("eps", s.eps)?;
        s.last_epoch = r.i64("last_epoch", s.last_epoch)?;
        let n = s.last_lr.len();
        s.last_lr = r.f64s("_last_lr", n, &s.last_lr)?;
        // Recomputed from `mode`, as PyTorch's `_init_is_better` does after loading.
        r.f64("mode_worse", 0.0)?;
        if let Some(mode) = r.str("mode")? {
            s.mode = match mode {
                "min" => PlateauMode::Min,
                "max" => PlateauMode::Max,
                other => return Err(r.error(format!("mode {other} is unknown!"))),
            };
        }
        s.threshold = r.f64("threshold", s.threshold)?;
        if let Some(mode) = r.str("threshold_mode")? {
            s.threshold_mode = match mode {
                "rel" => ThresholdMode::Rel,
                "abs" => ThresholdMode::Abs,
                other => return Err(r.error(format!("threshold mode {other} is unknown!"))),
            };
        }
        s.best = r.f64("best", s.best)?;
        s.cooldown_counter = r.i64("cooldown_counter", s.cooldown_counter)?;
        s.num_bad_epochs = r.i64("num_bad_epochs", s.num_bad_epochs)?;
        r.finish()?;
        if s.factor >= 1.0 {
            return Err(Error::StateDict {
                module: "ReduceLROnPlateau".into(),
                message: format!("Factor should be < 1.0. (got {})", py_float(s.factor)),
            });
        }
        *self = s;
        Ok(())
    }
}
