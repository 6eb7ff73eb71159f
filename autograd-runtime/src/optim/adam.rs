//! Adam and AdamW (decoupled weight decay), with amsgrad: PyTorch's `torch.optim.Adam` and
//! `torch.optim.AdamW`.

use serde_json::{Map, Value};

use super::GroupOptions;
use super::base::{Algorithm, Core, impl_optimizer};
use super::checkpoint::{read_like, read_step, step_tensor};
use super::fused_step::{AdamCoeffs, Update};
use super::ops::{add_scaled, lerp_, maximum, scalar_like};
use super::options::{
    fixed_keys, json_f64, json_opt_bool, non_negative, read_bool, read_f64, read_opt_bool,
};
use crate::error::py_float;
use crate::{Error, Result, Tensor};

/// The options of [`Adam`] and [`AdamW`], with PyTorch's defaults (`lr` 1e-3, `betas` (0.9,
/// 0.999), `eps` 1e-8, `weight_decay` 0 for Adam and 1e-2 for AdamW, no amsgrad).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::AdamOptions;
/// let o = AdamOptions::default().lr(3e-4).betas(0.9, 0.95);
/// assert_eq!((o.lr, o.betas, o.eps), (3e-4, (0.9, 0.95), 1e-8));
/// assert_eq!(AdamOptions::adamw().weight_decay, 1e-2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first and second moment estimates.
    pub betas: (f64, f64),
    /// Added to the denominator for numerical stability.
    pub eps: f64,
    /// Weight decay: an L2 term for Adam, a decay of the weights for AdamW.
    pub weight_decay: f64,
    /// The AMSGrad variant (keeps the maximum of the second moment).
    pub amsgrad: bool,
    /// Maximize the objective instead of minimizing it.
    pub maximize: bool,
    /// AdamW's decoupled weight decay (set by [`AdamW`]).
    pub decoupled_weight_decay: bool,
    /// The fused kernel: `None` uses it where it applies (contiguous parameters of one dtype on
    /// the CPU or on one CUDA device); `Some(true)` insists on it (an error where it cannot
    /// apply); `Some(false)` asks for the op-by-op path (see the [module docs](super)).
    pub fused: Option<bool>,
}

impl Default for AdamOptions {
    fn default() -> AdamOptions {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled_weight_decay: false,
            fused: None,
        }
    }
}

impl AdamOptions {
    /// AdamW's defaults: weight decay 1e-2, decoupled.
    pub fn adamw() -> AdamOptions {
        AdamOptions {
            weight_decay: 1e-2,
            decoupled_weight_decay: true,
            ..AdamOptions::default()
        }
    }
    /// Sets the learning rate.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets the betas.
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.betas = (beta1, beta2);
        self
    }
    /// Sets eps.
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
    /// Sets the weight decay.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
    /// Turns AMSGrad on or off.
    pub fn amsgrad(mut self, amsgrad: bool) -> Self {
        self.amsgrad = amsgrad;
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

impl GroupOptions for AdamOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.betas.0)
    }
    fn set_momentum(&mut self, momentum: f64) {
        self.betas.0 = momentum;
    }
    fn validate(&self) -> Result<()> {
        non_negative("learning rate", self.lr)?;
        non_negative("epsilon value", self.eps)?;
        for (i, b) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&b) {
                return Err(Error::InvalidArgument(format!(
                    "Invalid beta parameter at index {i}: {}",
                    py_float(b)
                )));
            }
        }
        non_negative("weight_decay value", self.weight_decay)
    }
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("lr".into(), json_f64(self.lr));
        m.insert(
            "betas".into(),
            Value::Array(vec![json_f64(self.betas.0), json_f64(self.betas.1)]),
        );
        m.insert("eps".into(), json_f64(self.eps));
        m.insert("weight_decay".into(), json_f64(self.weight_decay));
        m.insert("amsgrad".into(), Value::Bool(self.amsgrad));
        m.insert("maximize".into(), Value::Bool(self.maximize));
        fixed_keys(&mut m, true);
        m.insert("fused".into(), json_opt_bool(self.fused));
        m.insert(
            "decoupled_weight_decay".into(),
            Value::Bool(self.decoupled_weight_decay),
        );
        m
    }
    fn with_json(&self, map: &Map<String, Value>) -> std::result::Result<Self, String> {
        let mut o = self.clone();
        read_f64(map, "lr", &mut o.lr)?;
        if let Some(v) = map.get("betas") {
            let pair = v
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((a[0].as_f64()?, a[1].as_f64()?)))
                .ok_or_else(|| format!("param_groups: \"betas\" is not a pair of numbers: {v}"))?;
            o.betas = pair;
        }
        read_f64(map, "eps", &mut o.eps)?;
        read_f64(map, "weight_decay", &mut o.weight_decay)?;
        read_bool(map, "amsgrad", &mut o.amsgrad)?;
        read_bool(map, "maximize", &mut o.maximize)?;
        read_bool(map, "decoupled_weight_decay", &mut o.decoupled_weight_decay)?;
        read_opt_bool(map, "fused", &mut o.fused)?;
        Ok(o)
    }
}

/// Adam, PyTorch's `torch.optim.Adam`: `m ← β₁m + (1 − β₁)g`, `v ← β₂v + (1 − β₂)g²`,
/// `θ ← θ − γ/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε)`, with weight decay as an L2 term in `g`
/// (or decoupled, see [`AdamW`]) and `v` replaced by its running maximum with amsgrad.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{Adam, AdamOptions, Optimizer};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?.requires_grad_(true)?;
/// let mut opt = Adam::new(vec![w.clone()], AdamOptions::default().lr(0.1))?;
/// w.mul(&w)?.sum()?.backward()?;
/// opt.step()?;                                      // the first step moves each weight by ~lr
/// let v = w.to_vec::<f32>()?;
/// assert!((v[0] - 0.9).abs() < 1e-6 && (v[1] + 1.9).abs() < 1e-6);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Adam {
    core: Core<AdamAlgorithm>,
}

impl_optimizer!(
    Adam,
    AdamOptions,
    "Adam",
    "PyTorch's `ValueError`s as [`Error::InvalidArgument`] (`\"Invalid learning rate: -0.1\"`, \
     `\"Invalid beta parameter at index 0: 1.0\"`, ...)."
);

/// AdamW, PyTorch's `torch.optim.AdamW`: Adam with decoupled weight decay, `θ ← θ(1 − γλ)`
/// before the Adam update (default `weight_decay` 1e-2). Its groups decay decoupled whatever
/// their options' `decoupled_weight_decay` says; start from [`AdamOptions::adamw`] for
/// PyTorch's defaults.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{AdamOptions, AdamW, Optimizer};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32], &[1])?.requires_grad_(true)?;
/// let mut opt = AdamW::new(vec![w.clone()], AdamOptions::adamw().lr(0.1).weight_decay(0.5))?;
/// w.sum()?.backward()?;
/// opt.step()?;                                      // 1 · (1 − 0.05) − 0.1
/// assert!((w.to_vec::<f32>()?[0] - 0.85).abs() < 1e-6);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct AdamW {
    core: Core<AdamAlgorithm>,
}

impl_optimizer!(
    AdamW,
    AdamOptions,
    "AdamW",
    "As [`Adam::new`].",
    prepare = |groups| {
        for g in groups {
            g.options.decoupled_weight_decay = true;
        }
    }
);

/// Adam's step.
#[derive(Debug)]
pub(crate) struct AdamAlgorithm;

/// One parameter's Adam state.
#[derive(Debug)]
pub(crate) struct AdamState {
    /// Steps taken (PyTorch's `step`).
    step: f64,
    /// First moment (`exp_avg`).
    exp_avg: Tensor,
    /// Second moment (`exp_avg_sq`).
    exp_avg_sq: Tensor,
    /// Its running maximum, with amsgrad (`max_exp_avg_sq`).
    max_exp_avg_sq: Option<Tensor>,
}

/// `(lr / (1 − β₁ᵗ), √(1 − β₂ᵗ))` for step `t`, in Python's float arithmetic.
fn bias_corrections(o: &AdamOptions, step: f64) -> (f64, f64) {
    let bc1 = 1.0 - o.betas.0.powf(step);
    let bc2 = 1.0 - o.betas.1.powf(step);
    (o.lr / bc1, bc2.powf(0.5))
}

impl Algorithm for AdamAlgorithm {
    type Options = AdamOptions;
    type State = AdamState;

    fn init_state(p: &Tensor, o: &AdamOptions) -> Result<AdamState> {
        Ok(AdamState {
            step: 0.0,
            exp_avg: p.zeros_like()?,
            exp_avg_sq: p.zeros_like()?,
            max_exp_avg_sq: if o.amsgrad {
                Some(p.zeros_like()?)
            } else {
                None
            },
        })
    }

    fn step_ops(p: &Tensor, g: &Tensor, s: &mut AdamState, o: &AdamOptions) -> Result<()> {
        let mut g = if o.maximize { g.neg()? } else { g.clone() };
        s.step += 1.0;
        if o.weight_decay != 0.0 {
            if o.decoupled_weight_decay {
                p.mul_(&scalar_like(p, 1.0 - o.lr * o.weight_decay)?)?;
            } else {
                g = add_scaled(&g, p, o.weight_decay)?;
            }
        }
        lerp_(&s.exp_avg, &g, 1.0 - o.betas.0)?;
        s.exp_avg_sq.mul_(&scalar_like(p, o.betas.1)?)?;
        s.exp_avg_sq
            .add_(&g.mul_scalar(1.0 - o.betas.1)?.mul(&g)?)?;
        let (step_size, bc2_sqrt) = bias_corrections(o, s.step);
        let v = match &s.max_exp_avg_sq {
            Some(vmax) => {
                vmax.copy_(&maximum(vmax, &s.exp_avg_sq)?)?;
                vmax.clone()
            }
            None => s.exp_avg_sq.clone(),
        };
        let denom = v.sqrt()?.div_scalar(bc2_sqrt)?.add_scalar(o.eps)?;
        p.add_(&s.exp_avg.mul_scalar(-step_size)?.div(&denom)?)?;
        Ok(())
    }

    fn fused_update<'s>(
        p: &Tensor,
        s: &'s mut AdamState,
        o: &AdamOptions,
    ) -> Result<(Update, Vec<&'s Tensor>)> {
        if o.amsgrad && s.max_exp_avg_sq.is_none() {
            s.max_exp_avg_sq = Some(p.zeros_like()?);
        }
        s.step += 1.0;
        let (step_size, bc2_sqrt) = bias_corrections(o, s.step);
        let c = AdamCoeffs {
            lr: o.lr,
            beta1: o.betas.0,
            beta2: o.betas.1,
            eps: o.eps,
            weight_decay: o.weight_decay,
            decoupled: o.decoupled_weight_decay,
            amsgrad: o.amsgrad,
            maximize: o.maximize,
            step_size,
            bias_correction2_sqrt: bc2_sqrt,
        };
        let mut state = vec![&s.exp_avg, &s.exp_avg_sq];
        if o.amsgrad {
            state.extend(s.max_exp_avg_sq.iter());
        }
        Ok((Update::Adam(c), state))
    }

    fn fused(o: &AdamOptions) -> Option<bool> {
        o.fused
    }

    fn save_state(s: &AdamState) -> Vec<(&'static str, Tensor)> {
        let mut v = vec![
            ("step", step_tensor(s.step)),
            ("exp_avg", s.exp_avg.clone()),
            ("exp_avg_sq", s.exp_avg_sq.clone()),
        ];
        if let Some(m) = &s.max_exp_avg_sq {
            v.push(("max_exp_avg_sq", m.clone()));
        }
        v
    }

    fn load_state(
        get: &dyn Fn(&str) -> Option<Tensor>,
        p: &Tensor,
        o: &AdamOptions,
    ) -> std::result::Result<Option<AdamState>, String> {
        if get("step").is_none() && get("exp_avg").is_none() {
            return Ok(None);
        }
        Ok(Some(AdamState {
            step: read_step(get)?,
            exp_avg: read_like(get, "exp_avg", p)?,
            exp_avg_sq: read_like(get, "exp_avg_sq", p)?,
            max_exp_avg_sq: if o.amsgrad {
                Some(read_like(get, "max_exp_avg_sq", p)?)
            } else {
                None
            },
        }))
    }
}
