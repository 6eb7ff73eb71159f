//! `LambdaLR`: the initial learning rate times a function of the epoch.

use std::fmt;

use serde_json::{Map, Value};

use super::state::Reader;
use super::{Base, Rule, impl_scheduler};
use crate::optim::Optimizer;
use crate::{Error, Result};

/// A learning-rate factor as a function of the epoch: what [`LambdaLR::with_lambdas`] takes,
/// one per group.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::LrLambda;
/// let halve: LrLambda = Box::new(|epoch| 0.5f64.powi(epoch as i32));
/// assert_eq!(halve(3), 0.125);
/// ```
pub type LrLambda = Box<dyn Fn(i64) -> f64 + Send>;

/// Sets each group's learning rate to its initial one times `lr_lambda(epoch)`: PyTorch's
/// `LambdaLR`, with one function for every group ([`new`](LambdaLR::new)) or one per group
/// ([`with_lambdas`](LambdaLR::with_lambdas)).
///
/// As in PyTorch, the functions are not part of the [state dict](super::LrScheduler::state_dict)
/// (`lr_lambdas` is a list of `null`s): a resumed scheduler is built with the same functions
/// before its state is loaded.
///
/// # Examples
///
/// A linear warm-up over 4 epochs, then a decay by 0.5 per epoch:
///
/// ```
/// use autograd_runtime::optim::lr_scheduler::{LambdaLR, LrScheduler};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::zeros(&[1], DType::F32)?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w], SgdOptions::default().lr(1.0))?;
/// let mut sched = LambdaLR::new(&mut opt, |epoch| {
///     if epoch < 4 { (epoch + 1) as f64 / 4.0 } else { 0.5f64.powi((epoch - 3) as i32) }
/// })?;
/// let mut lrs = vec![sched.get_last_lr()[0]];
/// for _ in 0..5 {
///     opt.step()?;
///     sched.step(&mut opt)?;
///     lrs.push(sched.get_last_lr()[0]);
/// }
/// assert_eq!(lrs, [0.25, 0.5, 0.75, 1.0, 0.5, 0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct LambdaLR {
    base: Base,
    lr_lambdas: Lambdas,
}

/// One function for all groups, or one per group.
enum Lambdas {
    One(LrLambda),
    PerGroup(Vec<LrLambda>),
}

impl fmt::Debug for LambdaLR {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = match &self.lr_lambdas {
            Lambdas::One(_) => 1,
            Lambdas::PerGroup(v) => v.len(),
        };
        f.debug_struct("LambdaLR")
            .field("base", &self.base)
            .field("lr_lambdas", &format_args!("[{n} function(s)]"))
            .finish()
    }
}

impl LambdaLR {
    /// A `LambdaLR` on `optimizer` with `lr_lambda` for every group.
    ///
    /// # Errors
    ///
    /// None today; a `Result` as every scheduler's constructor.
    pub fn new(
        optimizer: &mut dyn Optimizer,
        lr_lambda: impl Fn(i64) -> f64 + Send + 'static,
    ) -> Result<LambdaLR> {
        LambdaLR::build(optimizer, Lambdas::One(Box::new(lr_lambda)))
    }

    /// A `LambdaLR` on `optimizer` with one function per group, in group order.
    ///
    /// # Errors
    ///
    /// PyTorch's `ValueError` as [`Error::InvalidArgument`] when there are not as many functions
    /// as groups: `"Expected 2 lr_lambdas, but got 1"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::optim::lr_scheduler::{LambdaLR, LrScheduler};
    /// use autograd_runtime::optim::{Optimizer, ParamGroup, Sgd, SgdOptions};
    /// use autograd_runtime::{DType, Tensor};
    ///
    /// let p = || Tensor::zeros(&[1], DType::F32)?.requires_grad_(true);
    /// let o = SgdOptions::default().lr(1.0);
    /// let mut opt = Sgd::with_groups(vec![ParamGroup::new([p()?], o.clone()), ParamGroup::new([p()?], o)])?;
    /// let mut sched = LambdaLR::with_lambdas(
    ///     &mut opt,
    ///     vec![Box::new(|e| 0.5f64.powi(e as i32)), Box::new(|e| 1.0 / (e + 1) as f64)],
    /// )?;
    /// sched.step(&mut opt)?;
    /// assert_eq!(opt.lrs(), [0.5, 0.5]);
    /// sched.step(&mut opt)?;
    /// assert_eq!(opt.lrs(), [0.25, 1.0 / 3.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_lambdas(
        optimizer: &mut dyn Optimizer,
        lr_lambdas: Vec<LrLambda>,
    ) -> Result<LambdaLR> {
        let groups = optimizer.param_groups().len();
        if lr_lambdas.len() != groups {
            return Err(Error::InvalidArgument(format!(
                "Expected {groups} lr_lambdas, but got {}",
                lr_lambdas.len()
            )));
        }
        LambdaLR::build(optimizer, Lambdas::PerGroup(lr_lambdas))
    }

    fn build(optimizer: &mut dyn Optimizer, lr_lambdas: Lambdas) -> Result<LambdaLR> {
        let mut s = LambdaLR {
            base: Base::attach(optimizer),
            lr_lambdas,
        };
        super::initial_step(&mut s, optimizer)?;
        Ok(s)
    }
}

impl Rule for LambdaLR {
    const NAME: &'static str = "LambdaLR";
    type Hyper = ();
    fn hyper_json(&self, map: &mut Map<String, Value>) {
        let n = self.base.base_lrs.len();
        map.insert("lr_lambdas".into(), Value::Array(vec![Value::Null; n]));
    }
    fn read_hyper(&self, r: &mut Reader<'_>) -> Result<()> {
        let n = self.base.base_lrs.len();
        if let Some(v) = r.get("lr_lambdas") {
            let ok = v
                .as_array()
                .is_some_and(|a| a.len() == n && a.iter().all(Value::is_null));
            if !ok {
                return Err(r.error(format!(
                    "\"lr_lambdas\" must be a list of {n} nulls (a closure has no state to \
                     load), got {v}"
                )));
            }
        }
        Ok(())
    }
    fn set_hyper(&mut self, (): ()) {}
    fn base(&self) -> &Base {
        &self.base
    }
    fn base_mut(&mut self) -> &mut Base {
        &mut self.base
    }
    fn get_lr(&mut self, _optimizer: &mut dyn Optimizer) -> Result<Vec<f64>> {
        let e = self.base.last_epoch;
        Ok(match &self.lr_lambdas {
            Lambdas::One(f) => self.base.base_lrs.iter().map(|b| b * f(e)).collect(),
            Lambdas::PerGroup(fs) => self
                .base
                .base_lrs
                .iter()
                .zip(fs)
                .map(|(b, f)| b * f(e))
                .collect(),
        })
    }
}

impl_scheduler!(LambdaLR);
