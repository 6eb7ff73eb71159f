//! Stochastic gradient descent with momentum, dampening, Nesterov and weight decay: PyTorch's
//! `torch.optim.SGD`.

use serde_json::{Map, Value};

use super::GroupOptions;
use super::base::{Algorithm, Core, impl_optimizer};
use super::checkpoint::read_like;
use super::fused_step::{SgdCoeffs, Update};
use super::ops::{add_scaled, add_scaled_, scalar_like};
use super::options::{
    fixed_keys, json_f64, json_opt_bool, non_negative, read_bool, read_f64, read_opt_bool,
};
use crate::{Error, Result, Tensor};

/// The options of [`Sgd`], with PyTorch's defaults (`lr` 1e-3, no momentum, no dampening, no
/// weight decay, no Nesterov).
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::SgdOptions;
/// let o = SgdOptions::default().lr(0.1).momentum(0.9).nesterov(true);
/// assert_eq!((o.lr, o.momentum, o.dampening), (0.1, 0.9, 0.0));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor.
    pub momentum: f64,
    /// Dampening for momentum.
    pub dampening: f64,
    /// Weight decay (L2 penalty).
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Maximize the objective instead of minimizing it.
    pub maximize: bool,
    /// The fused kernel: `None` uses it where it applies (contiguous parameters of one dtype on
    /// the CPU or on one CUDA device); `Some(true)` insists on it (an error where it cannot
    /// apply); `Some(false)` asks for the op-by-op path (see the [module docs](super)).
    pub fused: Option<bool>,
}

impl Default for SgdOptions {
    fn default() -> SgdOptions {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
            fused: None,
        }
    }
}

impl SgdOptions {
    /// Sets the learning rate.
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    /// Sets the momentum factor.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.momentum = momentum;
        self
    }
    /// Sets the dampening.
    pub fn dampening(mut self, dampening: f64) -> Self {
        self.dampening = dampening;
        self
    }
    /// Sets the weight decay.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }
    /// Turns Nesterov momentum on or off.
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.nesterov = nesterov;
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

impl GroupOptions for SgdOptions {
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
        non_negative("momentum value", self.momentum)?;
        non_negative("weight_decay value", self.weight_decay)?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::InvalidArgument(
                "Nesterov momentum requires a momentum and zero dampening".into(),
            ));
        }
        Ok(())
    }
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("lr".into(), json_f64(self.lr));
        m.insert("momentum".into(), json_f64(self.momentum));
        m.insert("dampening".into(), json_f64(self.dampening));
        m.insert("weight_decay".into(), json_f64(self.weight_decay));
        m.insert("nesterov".into(), Value::Bool(self.nesterov));
        m.insert("maximize".into(), Value::Bool(self.maximize));
        fixed_keys(&mut m, false);
        m.insert("fused".into(), json_opt_bool(self.fused));
        m
    }
    fn with_json(&self, map: &Map<String, Value>) -> std::result::Result<Self, String> {
        let mut o = self.clone();
        read_f64(map, "lr", &mut o.lr)?;
        read_f64(map, "momentum", &mut o.momentum)?;
        read_f64(map, "dampening", &mut o.dampening)?;
        read_f64(map, "weight_decay", &mut o.weight_decay)?;
        read_bool(map, "nesterov", &mut o.nesterov)?;
        read_bool(map, "maximize", &mut o.maximize)?;
        read_opt_bool(map, "fused", &mut o.fused)?;
        Ok(o)
    }
}

/// SGD, PyTorch's `torch.optim.SGD`: with momentum `μ`, dampening `τ` and weight decay `λ`,
/// `g ← g + λθ`, `b ← μb + (1 − τ)g` (`b ← g` at the first step), `g ← g + μb` (Nesterov) or
/// `g ← b`, then `θ ← θ − γg`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::Tensor;
///
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?.requires_grad_(true)?;
/// let mut opt = Sgd::new(vec![w.clone()], SgdOptions::default().lr(0.5))?;
/// w.mul(&w)?.sum()?.backward()?;                   // gradient 2w
/// opt.step()?;
/// assert_eq!(w.to_vec::<f32>()?, vec![0.0, 0.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct Sgd {
    core: Core<SgdAlgorithm>,
}

impl_optimizer!(
    Sgd,
    SgdOptions,
    "SGD",
    "PyTorch's `ValueError`s as [`Error::InvalidArgument`] (`\"Invalid learning rate: -0.1\"`, \
     `\"optimizer got an empty parameter list\"`, `\"can't optimize a non-leaf Tensor\"`)."
);

/// SGD's step.
#[derive(Debug)]
pub(crate) struct SgdAlgorithm;

/// One parameter's SGD state.
#[derive(Debug)]
pub(crate) struct SgdState {
    /// The momentum buffer (PyTorch's `momentum_buffer`), once momentum is used.
    buf: Option<Tensor>,
}

impl Algorithm for SgdAlgorithm {
    type Options = SgdOptions;
    type State = SgdState;

    fn init_state(_p: &Tensor, _o: &SgdOptions) -> Result<SgdState> {
        Ok(SgdState { buf: None })
    }

    fn step_ops(p: &Tensor, g: &Tensor, s: &mut SgdState, o: &SgdOptions) -> Result<()> {
        let mut d = if o.maximize { g.neg()? } else { g.clone() };
        if o.weight_decay != 0.0 {
            d = add_scaled(&d, p, o.weight_decay)?;
        }
        if o.momentum != 0.0 {
            let buf = match &s.buf {
                None => {
                    let b = d.copy()?;
                    s.buf = Some(b.clone());
                    b
                }
                Some(b) => {
                    b.mul_(&scalar_like(b, o.momentum)?)?;
                    add_scaled_(b, &d, 1.0 - o.dampening)?;
                    b.clone()
                }
            };
            d = if o.nesterov {
                add_scaled(&d, &buf, o.momentum)?
            } else {
                buf
            };
        }
        add_scaled_(p, &d, -o.lr)?;
        Ok(())
    }

    fn fused_update<'s>(
        p: &Tensor,
        s: &'s mut SgdState,
        o: &SgdOptions,
    ) -> Result<(Update, Vec<&'s Tensor>)> {
        let mut first = false;
        if o.momentum != 0.0 && s.buf.is_none() {
            s.buf = Some(p.zeros_like()?);
            first = true;
        }
        let c = SgdCoeffs {
            lr: o.lr,
            momentum: o.momentum,
            dampening: o.dampening,
            weight_decay: o.weight_decay,
            nesterov: o.nesterov,
            maximize: o.maximize,
            first,
        };
        let state = if o.momentum != 0.0 {
            s.buf.iter().collect()
        } else {
            Vec::new()
        };
        Ok((Update::Sgd(c), state))
    }

    fn fused(o: &SgdOptions) -> Option<bool> {
        o.fused
    }

    fn save_state(s: &SgdState) -> Vec<(&'static str, Tensor)> {
        s.buf
            .iter()
            .map(|b| ("momentum_buffer", b.clone()))
            .collect()
    }

    fn load_state(
        get: &dyn Fn(&str) -> Option<Tensor>,
        p: &Tensor,
        _o: &SgdOptions,
    ) -> std::result::Result<Option<SgdState>, String> {
        if get("momentum_buffer").is_none() {
            return Ok(None);
        }
        Ok(Some(SgdState {
            buf: Some(read_like(get, "momentum_buffer", p)?),
        }))
    }
}
