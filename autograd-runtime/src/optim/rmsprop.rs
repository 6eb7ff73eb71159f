//! RMSprop, centered or not, with momentum: PyTorch's `torch.optim.RMSprop`.

use serde_json::{Map, Value};

use super::GroupOptions;
use super::base::{Algorithm, Core, impl_optimizer};
use super::checkpoint::{read_like, read_step, step_tensor};
use super::fused_step::{RmsPropCoeffs, Update};
use super::ops::{add_scaled, add_scaled_, lerp_, scalar_like};
use super::options::{fixed_keys, json_f64, non_negative, read_bool, read_f64};
use crate::{Result, Tensor};

/// The options of [`RmsProp`], with PyTorch's defaults (`lr` 1e-2, `alpha` 0.99, `eps` 1e-8,
/// no weight decay, no momentum, not centered).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::RmsPropOptions;
/// let o = RmsPropOptions::default().momentum(0.9).centered(true);
/// assert_eq!((o.lr, o.alpha, o.momentum, o.centered), (1e-2, 0.99, 0.9, true));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RmsPropOptions {
    /// Learning rate.
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average.
    pub alpha: f64,
    /// Added to the denominator for numerical stability.
    pub eps: f64,
    /// Weight decay (L2 penalty).
    pub weight_decay: f64,
    /// Momentum factor.
    pub momentum: f64,
    /// Normalise by an estimate of the gradient's variance.
    pub centered: bool,
    /// Maximize the objective instead of minimizing it.
    pub maximize: bool,
    /// The fused kernel: `None` uses it where it applies (contiguous parameters of one dtype on
    /// the CPU or on one CUDA device); `Some(true)` insists on it (an error where it cannot
    /// apply); `Some(false)` asks for the op-by-op path (see the [module docs](super)).
    /// PyTorch's RMSprop has no `fused` option; this one is not written to `param_groups`.
    pub fused: Option<bool>,
}

impl Default for RmsPropOptions {
    fn default() -> RmsPropOptions {
        RmsPropOptions {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
            fused: None,
        }
    }
}

impl RmsPropOptions {
    /// Sets the learning rate.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets alpha.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
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
    /// Sets the momentum factor.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }
    /// Turns the centered variant on or off.
    pub fn centered(mut self, centered: bool) -> Self {
        self.centered = centered;
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

impl GroupOptions for RmsPropOptions {
    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn momentum(&self) -> Option<f64> {
        Some(self.momentum)
    }
    fn set_momentum(&mut self, momentum: f64) {
        self.momentum = momentum;
    }
    fn validate(&self) -> Result<()> {
        non_negative("learning rate", self.lr)?;
        non_negative("epsilon value", self.eps)?;
        non_negative("momentum value", self.momentum)?;
        non_negative("weight_decay value", self.weight_decay)?;
        non_negative("alpha value", self.alpha)
    }
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("lr".into(), json_f64(self.lr));
        m.insert("momentum".into(), json_f64(self.momentum));
        m.insert("alpha".into(), json_f64(self.alpha));
        m.insert("eps".into(), json_f64(self.eps));
        m.insert("centered".into(), Value::Bool(self.centered));
        m.insert("weight_decay".into(), json_f64(self.weight_decay));
        fixed_keys(&mut m, true);
        m.insert("maximize".into(), Value::Bool(self.maximize));
        m
    }
    fn with_json(&self, map: &Map<String, Value>) -> std::result::Result<Self, String> {
        let mut o = self.clone();
        read_f64(map, "lr", &mut o.lr)?;
        read_f64(map, "momentum", &mut o.momentum)?;
        read_f64(map, "alpha", &mut o.alpha)?;
        read_f64(map, "eps", &mut o.eps)?;
        read_bool(map, "centered", &mut o.centered)?;
        read_f64(map, "weight_decay", &mut o.weight_decay)?;
        read_bool(map, "maximize", &mut o.maximize)?;
        Ok(o)
    }
}

/// RMSprop, PyTorch's `torch.optim.RMSprop`: `v ← αv + (1 − α)g²`, with `centered`
/// `ḡ ← αḡ + (1 − α)g` and `v` replaced by `v − ḡ²`, then `θ ← θ − γ g / (√v + ε)` (or through a
/// momentum buffer `b ← μb + g / (√v + ε)`, `θ ← θ − γb`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{Optimizer, RmsProp, RmsPropOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32], &[1])?.requires_grad_(true)?;
/// let mut opt = RmsProp::new(vec![w.clone()], RmsPropOptions::default().lr(0.01))?;
/// w.sum()?.backward()?;                             // g = 1: v = 0.01, step 0.01 / 0.1
/// opt.step()?;
/// assert!((w.to_vec::<f32>()?[0] - 0.9).abs() < 1e-6);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct RmsProp {
    core: Core<RmsPropAlgorithm>,
}

impl_optimizer!(
    RmsProp,
    RmsPropOptions,
    "RMSprop",
    "PyTorch's `ValueError`s as [`Error::InvalidArgument`](crate::Error::InvalidArgument) \
     (`\"Invalid alpha value: -1.0\"`, ...)."
);

/// RMSprop's step.
#[derive(Debug)]
pub(crate) struct RmsPropAlgorithm;

/// One parameter's RMSprop state.
#[derive(Debug)]
pub(crate) struct RmsPropState {
    /// Steps taken.
    step: f64,
    /// `square_avg`.
    square_avg: Tensor,
    /// `momentum_buffer`, with momentum.
    momentum_buffer: Option<Tensor>,
    /// `grad_avg`, when centered.
    grad_avg: Option<Tensor>,
}

impl Algorithm for RmsPropAlgorithm {
    type Options = RmsPropOptions;
    type State = RmsPropState;

    fn init_state(p: &Tensor, o: &RmsPropOptions) -> Result<RmsPropState> {
        Ok(RmsPropState {
            step: 0.0,
            square_avg: p.zeros_like()?,
            momentum_buffer: if o.momentum > 0.0 {
                Some(p.zeros_like()?)
            } else {
                None
            },
            grad_avg: if o.centered {
                Some(p.zeros_like()?)
            } else {
                None
            },
        })
    }

    fn step_ops(p: &Tensor, g: &Tensor, s: &mut RmsPropState, o: &RmsPropOptions) -> Result<()> {
        let mut g = if o.maximize { g.neg()? } else { g.clone() };
        s.step += 1.0;
        if o.weight_decay != 0.0 {
            g = add_scaled(&g, p, o.weight_decay)?;
        }
        s.square_avg.mul_(&scalar_like(p, o.alpha)?)?;
        s.square_avg.add_(&g.mul_scalar(1.0 - o.alpha)?.mul(&g)?)?;
        let avg = match &s.grad_avg {
            Some(ga) => {
                lerp_(ga, &g, 1.0 - o.alpha)?;
                s.square_avg.add(&ga.mul_scalar(-1.0)?.mul(ga)?)?.sqrt()?
            }
            None => s.square_avg.sqrt()?,
        }
        .add_scalar(o.eps)?;
        if o.momentum > 0.0 {
            if s.momentum_buffer.is_none() {
                s.momentum_buffer = Some(p.zeros_like()?);
            }
            let buf = s.momentum_buffer.as_ref().expect("invariant: made above");
            buf.mul_(&scalar_like(p, o.momentum)?)?;
            buf.add_(&g.mul_scalar(1.0)?.div(&avg)?)?;
            add_scaled_(p, buf, -o.lr)?;
        } else {
            p.add_(&g.mul_scalar(-o.lr)?.div(&avg)?)?;
        }
        Ok(())
    }

    fn fused_update<'s>(
        p: &Tensor,
        s: &'s mut RmsPropState,
        o: &RmsPropOptions,
    ) -> Result<(Update, Vec<&'s Tensor>)> {
        if o.momentum > 0.0 && s.momentum_buffer.is_none() {
            s.momentum_buffer = Some(p.zeros_like()?);
        }
        if o.centered && s.grad_avg.is_none() {
            s.grad_avg = Some(p.zeros_like()?);
        }
        s.step += 1.0;
        let c = RmsPropCoeffs {
            lr: o.lr,
            alpha: o.alpha,
            eps: o.eps,
            weight_decay: o.weight_decay,
            momentum: o.momentum,
            centered: o.centered,
            maximize: o.maximize,
        };
        let mut state = vec![&s.square_avg];
        if o.momentum > 0.0 {
            state.extend(s.momentum_buffer.iter());
        }
        if o.centered {
            state.extend(s.grad_avg.iter());
        }
        Ok((Update::RmsProp(c), state))
    }

    fn fused(o: &RmsPropOptions) -> Option<bool> {
        o.fused
    }

    fn save_state(s: &RmsPropState) -> Vec<(&'static str, Tensor)> {
        let mut v = vec![
            ("step", step_tensor(s.step)),
            ("square_avg", s.square_avg.clone()),
        ];
        if let Some(b) = &s.momentum_buffer {
            v.push(("momentum_buffer", b.clone()));
        }
        if let Some(a) = &s.grad_avg {
            v.push(("grad_avg", a.clone()));
        }
        v
    }

    fn load_state(
        get: &dyn Fn(&str) -> Option<Tensor>,
        p: &Tensor,
        o: &RmsPropOptions,
    ) -> std::result::Result<Option<RmsPropState>, String> {
        if get("step").is_none() && get("square_avg").is_none() {
            return Ok(None);
        }
        Ok(Some(RmsPropState {
            step: read_step(get)?,
            square_avg: read_like(get, "square_avg", p)?,
            momentum_buffer: if o.momentum > 0.0 {
                Some(read_like(get, "momentum_buffer", p)?)
            } else {
                None
            },
            grad_avg: if o.centered {
                Some(read_like(get, "grad_avg", p)?)
            } else {
                None
            },
        }))
    }
}
