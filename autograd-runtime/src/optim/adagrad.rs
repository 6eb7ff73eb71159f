//! Adagrad: PyTorch's `torch.optim.Adagrad`.

use serde_json::{Map, Value};

use super::GroupOptions;
use super::base::{Algorithm, Core, impl_optimizer};
use super::checkpoint::{read_like, read_step, step_tensor};
use super::fused_step::{AdagradCoeffs, Update};
use super::ops::add_scaled;
use super::options::{
    fixed_keys, json_f64, json_opt_bool, non_negative, read_bool, read_f64, read_opt_bool,
};
use crate::{Result, Tensor};

/// The options of [`Adagrad`], with PyTorch's defaults (`lr` 1e-2, no `lr_decay`, no weight
/// decay, `initial_accumulator_value` 0, `eps` 1e-10).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::AdagradOptions;
/// let o = AdagradOptions::default().lr_decay(1e-3);
/// assert_eq!((o.lr, o.lr_decay, o.eps), (1e-2, 1e-3, 1e-10));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AdagradOptions {
    /// Learning rate.
    pub lr: f64,
    /// Learning-rate decay: step `t` uses `lr / (1 + (t − 1) lr_decay)`.
    pub lr_decay: f64,
    /// Weight decay (L2 penalty).
    pub weight_decay: f64,
    /// The starting value of the sum of squared gradients.
    pub initial_accumulator_value: f64,
    /// Added to the denominator for numerical stability.
    pub eps: f64,
    /// Maximize the objective instead of minimizing it.
    pub maximize: bool,
    /// The fused kernel: `None` uses it where it applies (contiguous parameters of one dtype on
    /// the CPU or on one CUDA device); `Some(true)` insists on it (an error where it cannot
    /// apply); `Some(false)` asks for the op-by-op path (see the [module docs](super)).
    pub fused: Option<bool>,
}

impl Default for AdagradOptions {
    fn default() -> AdagradOptions {
        AdagradOptions {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
            fused: None,
        }
    }
}

impl AdagradOptions {
    /// Sets the learning rate.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets the learning-rate decay.
    pub fn lr_decay(mut self, lr_decay: f64) -> Self {
        self.lr_decay = lr_decay;
        self
    }
    /// Sets the weight decay.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
    /// Sets the initial accumulator value.
    pub fn initial_accumulator_value(mut self, value: f64) -> Self {
        self.initial_accumulator_value = value;
        self
    }
    /// Sets eps.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
    /// Maximizes instead of minimizing.
    pub fn maximize(mut self, maximize: bool) -> Self {
        self.maximize = maximize;
        self
    }
    /// Asks for (`Some(true)`) or against (`Some(false)`) the fused kernel, on the CPU or on
    /// CUDA (`None`, the default, takes it where it applies).
    pub fn fused(mut self, fused: Option<bool>) -> Self {
        self.fused = fused;
        self
    }
}

impl GroupOptions for AdagradOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn validate(&self) -> Result<()> {
        non_negative("learning rate", self.lr)?;
        non_negative("lr_decay value", self.lr_decay)?;
        non_negative("weight_decay value", self.weight_decay)?;
        non_negative(
            "initial_accumulator_value value",
            self.initial_accumulator_value,
        )?;
        non_negative("epsilon value", self.eps)
    }
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("lr".into(), json_f64(self.lr));
        m.insert("lr_decay".into(), json_f64(self.lr_decay));
        m.insert("eps".into(), json_f64(self.eps));
        m.insert("weight_decay".into(), json_f64(self.weight_decay));
        m.insert(
            "initial_accumulator_value".into(),
            json_f64(self.initial_accumulator_value),
        );
        fixed_keys(&mut m, false);
        m.insert("maximize".into(), Value::Bool(self.maximize));
        m.insert("fused".into(), json_opt_bool(self.fused));
        m
    }
    fn with_json(&self, map: &Map<String, Value>) -> std::result::Result<Self, String> {
        let mut o = self.clone();
        read_f64(map, "lr", &mut o.lr)?;
        read_f64(map, "lr_decay", &mut o.lr_decay)?;
        read_f64(map, "eps", &mut o.eps)?;
        read_f64(map, "weight_decay", &mut o.weight_decay)?;
        read_f64(
            map,
            "initial_accumulator_value",
            &mut o.initial_accumulator_value,
        )?;
        read_bool(map, "maximize", &mut o.maximize)?;
        read_opt_bool(map, "fused", &mut o.fused)?;
        Ok(o)
    }
}

/// Adagrad, PyTorch's `torch.optim.Adagrad`: `s ← s + g²`,
/// `θ ← θ − γ/(1 + (t − 1)η) · g / (√s + ε)`. Its state is made when it is built, as in
/// PyTorch (`sum` starts at `initial_accumulator_value`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{Adagrad, AdagradOptions, Optimizer};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32], &[1])?.requires_grad_(true)?;
/// let mut opt = Adagrad::new(vec![w.clone()], AdagradOptions::default().lr(0.5))?;
/// w.mul_scalar(3.0)?.sum()?.backward()?;            // g = 3: step 0.5 · 3 / 3
/// opt.step()?;
/// assert!((w.to_vec::<f32>()?[0] - 0.5).abs() < 1e-6);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Adagrad {
    core: Core<AdagradAlgorithm>,
}

impl_optimizer!(
    Adagrad,
    AdagradOptions,
    "Adagrad",
    "PyTorch's `ValueError`s as [`Error::InvalidArgument`](crate::Error::InvalidArgument) \
     (`\"Invalid lr_decay value: -1.0\"`, ...)."
);

/// Adagrad's step.
#[derive(Debug)]
pub(crate) struct AdagradAlgorithm;

/// One parameter's Adagrad state.
#[derive(Debug)]
pub(crate) struct AdagradState {
    /// Steps taken.
    step: f64,
    /// The sum of squared gradients (`sum`).
    sum: Tensor,
}

impl Algorithm for AdagradAlgorithm {
    type Options = AdagradOptions;
    type State = AdagradState;

    const EAGER_STATE: bool = true;

    fn init_state(p: &Tensor, o: &AdagradOptions) -> Result<AdagradState> {
        Ok(AdagradState {
            step: 0.0,
            sum: p.full_like(o.initial_accumulator_value)?,
        })
    }

    fn step_ops(p: &Tensor, g: &Tensor, s: &mut AdagradState, o: &AdagradOptions) -> Result<()> {
        s.step += 1.0;
        let mut g = if o.maximize { g.neg()? } else { g.clone() };
        if o.weight_decay != 0.0 {
            g = add_scaled(&g, p, o.weight_decay)?;
        }
        let clr = o.lr / (1.0 + (s.step - 1.0) * o.lr_decay);
        s.sum.add_(&g.mul_scalar(1.0)?.mul(&g)?)?;
        let std = s.sum.sqrt()?.add_scalar(o.eps)?;
        p.add_(&g.mul_scalar(-clr)?.div(&std)?)?;
        Ok(())
    }

    fn fused_update<'s>(
        _p: &Tensor,
        s: &'s mut AdagradState,
        o: &AdagradOptions,
    ) -> Result<(Update, Vec<&'s Tensor>)> {
        s.step += 1.0;
        let c = AdagradCoeffs {
            clr: o.lr / (1.0 + (s.step - 1.0) * o.lr_decay),
            eps: o.eps,
            weight_decay: o.weight_decay,
            maximize: o.maximize,
        };
        Ok((Update::Adagrad(c), vec![&s.sum]))
    }

    fn fused(o: &AdagradOptions) -> Option<bool> {
        o.fused
    }

    fn save_state(s: &AdagradState) -> Vec<(&'static str, Tensor)> {
        vec![("step", step_tensor(s.step)), ("sum", s.sum.clone())]
    }

    fn load_state(
        get: &dyn Fn(&str) -> Option<Tensor>,
        p: &Tensor,
        _o: &AdagradOptions,
    ) -> std::result::Result<Option<AdagradState>, String> {
        Ok(Some(AdagradState {
            step: read_step(get)?,
            sum: read_like(get, "sum", p)?,
        }))
    }
}
