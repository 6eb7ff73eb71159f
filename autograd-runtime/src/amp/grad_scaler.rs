//! [`GradScaler`]: PyTorch's `torch.amp.GradScaler`.

use serde_json::{Map, Value};

use super::unscale::{FoundInf, any_found, non_finite_check_and_unscale_, update_scale};
use crate::optim::Optimizer;
use crate::sync::statics::AtomicBool;
use crate::{DType, Device, Error, Result, Tensor};

/// The options of a [`GradScaler`], with PyTorch's defaults: `device` `"cuda"`, `init_scale`
/// 2¹⁶, `growth_factor` 2, `backoff_factor` 0.5, `growth_interval` 2000, enabled.
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::GradScalerOptions;
/// let o = GradScalerOptions::default().device("cpu").growth_interval(100);
/// assert_eq!((o.init_scale, o.growth_factor, o.backoff_factor), (65536.0, 2.0, 0.5));
/// assert_eq!((o.device.as_str(), o.growth_interval, o.enabled), ("cpu", 100, true));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GradScalerOptions {
    /// The device type the scaler is for, `"cuda"` or `"cpu"` (PyTorch's `device`): a `"cuda"`
    /// scaler on a machine without CUDA is disabled, with a warning. The scale itself lives on
    /// the device of the first tensor [`GradScaler::scale`] sees.
    pub device: String,
    /// The scale before the first [`update`](GradScaler::update).
    pub init_scale: f64,
    /// What the scale is multiplied by after `growth_interval` steps in a row without an
    /// infinity or NaN; must be > 1.
    pub growth_factor: f64,
    /// What the scale is multiplied by after a step with an infinity or NaN; must be < 1.
    pub backoff_factor: f64,
    /// The number of steps in a row without an infinity or NaN after which the scale grows.
    pub growth_interval: i64,
    /// `false` makes the scaler a pass-through: [`scale`](GradScaler::scale) returns its input,
    /// [`step`](GradScaler::step) calls the optimizer's step, the rest does nothing.
    pub enabled: bool,
}

impl Default for GradScalerOptions {
    fn default() -> GradScalerOptions {
        GradScalerOptions {
            device: "cuda".into(),
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

impl GradScalerOptions {
    /// Sets the device type (`"cuda"` or `"cpu"`).
    pub fn device(mut self, device: impl Into<String>) -> Self {
        self.device = device.into();
        self
    }
    /// Sets the initial scale.
    pub fn init_scale(mut self, init_scale: f64) -> Self {
        self.init_scale = init_scale;
        self
    }
    /// Sets the growth factor.
    pub fn growth_factor(mut self, growth_factor: f64) -> Self {
        self.growth_factor = growth_factor;
        self
    }
    /// Sets the backoff factor.
    pub fn backoff_factor(mut self, backoff_factor: f64) -> Self {
        self.backoff_factor = backoff_factor;
        self
    }
    /// Sets the growth interval.
    pub fn growth_interval(mut self, growth_interval: i64) -> Self {
        self.growth_interval = growth_interval;
        self
    }
    /// Enables or disables the scaler.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }
}

/// Where an optimizer is in the current iteration (PyTorch's `OptState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Nothing done since the last update.
    Ready,
    /// Its gradients were unscaled.
    Unscaled,
    /// Its step ran (or was skipped).
    Stepped,
}

/// One optimizer's state in the current iteration (PyTorch's `_per_optimizer_states[id(opt)]`).
#[derive(Debug)]
struct OptimizerState {
    /// The optimizer's first parameter: how it is recognised (PyTorch uses `id(optimizer)`;
    /// a Rust value may move between `unscale_` and `step`, its parameters do not).
    key: Option<Tensor>,
    /// What was done to it since the last update.
    stage: Stage,
    /// What its `unscale_` found, per device.
    found_inf_per_device: FoundInf,
}

/// The scale and growth tracker, made by the first [`GradScaler::scale`] (PyTorch's lazily
/// initialised `_scale` and `_growth_tracker`).
#[derive(Debug)]
struct Live {
    /// The scale (PyTorch's 0-dim `float32` `_scale`).
    scale: f32,
    /// Steps in a row without an infinity or NaN (PyTorch's `int32` `_growth_tracker`).
    growth_tracker: i32,
    /// The device of the first scaled tensor.
    device: Device,
    /// `scale` as a 0-dim `f32` tensor on `device`, made when first needed after each change.
    tensor: Option<Tensor>,
}

impl Live {
    /// Sets the scale (a new tensor: a graph recorded with the old one keeps it).
    fn set_scale(&mut self, scale: f32) {
        if scale.to_bits() != self.scale.to_bits() {
            self.scale = scale;
            self.tensor = None;
        }
    }

    /// The scale as a 0-dim tensor on `device`.
    fn tensor_on(&mut self, device: Device) -> Result<Tensor> {
        let t = match &self.tensor {
            Some(t) => t.clone(),
            None => {
                let t = Tensor::scalar(self.scale).to(self.device)?;
                self.tensor = Some(t.clone());
                t
            }
        };
        t.to(device)
    }
}

/// Dynamic loss scaling for mixed-precision training: PyTorch's `torch.amp.GradScaler`, with its
/// semantics, defaults and error texts.
///
/// * [`scale`](GradScaler::scale) multiplies the loss by the scale factor, so that small
///   gradients survive in low precision;
/// * [`unscale_`](GradScaler::unscale_) (optional, e.g. before clipping) divides the optimizer's
///   gradients by the scale in place and records whether any is infinite or NaN;
/// * [`step`](GradScaler::step) unscales if that was not done, then runs the optimizer's step
///   unless an infinity or NaN was found;
/// * [`update`](GradScaler::update) backs the scale off after a skipped step, or grows it after
///   `growth_interval` good steps in a row.
///
/// The bookkeeping (scale, growth tracker, each optimizer's stage) is kept on the host, and the
/// infinity checks stay on the gradients' devices until [`step`](GradScaler::step) reads them
/// (one read per device, as PyTorch's `.item()`). An optimizer is recognised by its first
/// parameter, where PyTorch uses `id(optimizer)`.
///
/// # Examples
///
/// PyTorch's training loop (`device("cpu")` here: the default `"cuda"` scaler disables itself
/// where CUDA is missing, as PyTorch's does):
///
/// ```
/// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
/// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
/// use autograd_runtime::{DType, Tensor};
///
/// let w = Tensor::from_vec(vec![3.0f32, -1.0], &[2, 1])?.requires_grad_(true)?;
/// let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(0.1))?;
/// // A scale so large that the first scaled gradients overflow f32.
/// let options = GradScalerOptions::default().device("cpu").init_scale(2f64.powi(127));
/// let mut scaler = GradScaler::new(options)?;
/// let x = Tensor::ones(&[4, 2], DType::F32)?;
/// let mut skipped = 0;
/// for _ in 0..10 {
///     opt.zero_grad();
///     let loss = x.matmul(&w)?.pow(2.0)?.mean()?;
///     scaler.scale(&loss)?.backward()?;   // scaled gradients
///     if !scaler.step(&mut opt)? {        // unscales, then steps unless inf/NaN
///         skipped += 1;
///     }
///     scaler.update(None)?;               // backs off after a skip
/// }
/// assert!(skipped > 0 && scaler.get_scale() < 2f64.powi(127));
/// assert_eq!(scaler.state_dict()["growth_interval"], 2000);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct GradScaler {
    /// Whether scaling is on.
    enabled: bool,
    /// The scale the first `scale` call starts from (`load_state_dict` changes it).
    init_scale: f64,
    /// The growth factor.
    growth_factor: f64,
    /// The backoff factor.
    backoff_factor: f64,
    /// The growth interval.
    growth_interval: i64,
    /// The growth tracker the first `scale` call starts from.
    init_growth_tracker: i64,
    /// The scale and tracker, once a tensor was scaled.
    live: Option<Live>,
    /// The optimizers seen since the last update.
    per_optimizer: Vec<OptimizerState>,
}

/// Whether the "CUDA is not available" warning was given.
static WARNED_NO_CUDA: AtomicBool = AtomicBool::new(false);

impl GradScaler {
    /// A scaler with `options` (PyTorch's `GradScaler(device, init_scale, ..)`). A `"cuda"`
    /// scaler on a machine without CUDA is disabled, with PyTorch's warning "torch.cuda.amp.
    /// GradScaler is enabled, but CUDA is not available.  Disabling.".
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an enabled scaler whose `growth_factor` is not > 1 ("The
    /// growth factor must be > 1.0.") or whose `backoff_factor` is not < 1 ("The backoff factor
    /// must be < 1.0.").
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// let s = GradScaler::new(GradScalerOptions::default().device("cpu"))?;
    /// assert!(s.is_enabled() && s.get_scale() == 65536.0);
    /// let bad = GradScaler::new(GradScalerOptions::default().device("cpu").growth_factor(1.0));
    /// assert_eq!(bad.unwrap_err().to_string(), "The growth factor must be > 1.0.");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(options: GradScalerOptions) -> Result<GradScaler> {
        let mut enabled = options.enabled;
        if options.device == "cuda" && enabled && !crate::cuda::is_available() {
            crate::warning::warn_once(
                &WARNED_NO_CUDA,
                "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
            );
            enabled = false;
        }
        if enabled {
            if options.growth_factor.is_nan() || options.growth_factor <= 1.0 {
                return Err(Error::InvalidArgument(
                    "The growth factor must be > 1.0.".into(),
                ));
            }
            if options.backoff_factor.is_nan() || options.backoff_factor >= 1.0 {
                return Err(Error::InvalidArgument(
                    "The backoff factor must be < 1.0.".into(),
                ));
            }
        }
        Ok(GradScaler {
            enabled,
            init_scale: options.init_scale,
            growth_factor: options.growth_factor,
            backoff_factor: options.backoff_factor,
            growth_interval: options.growth_interval,
            init_growth_tracker: 0,
            live: None,
            per_optimizer: Vec::new(),
        })
    }

    /// `outputs` times the scale (PyTorch's `scaler.scale(loss)`), recorded like any product so
    /// that the backward pass gives scaled gradients. The first call makes the scale, on
    /// `outputs`' device. A disabled scaler returns `outputs` itself.
    ///
    /// # Errors
    ///
    /// A device error from the product.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// use autograd_runtime::Tensor;
    /// let mut scaler = GradScaler::new(GradScalerOptions::default().device("cpu").init_scale(8.0))?;
    /// let x = Tensor::scalar(1.5f32).requires_grad_(true)?;
    /// let scaled = scaler.scale(&x.mul(&x)?)?;
    /// assert_eq!(scaled.item::<f32>()?, 18.0);
    /// scaled.backward()?;
    /// assert_eq!(x.grad().unwrap().item::<f32>()?, 24.0); // 8 × 2x
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scale(&mut self, outputs: &Tensor) -> Result<Tensor> {
        if !self.enabled {
            return Ok(outputs.clone());
        }
        let (init_scale, init_tracker) = (self.init_scale, self.init_growth_tracker);
        let live = self.live.get_or_insert_with(|| Live {
            scale: init_scale as f32,
            growth_tracker: init_tracker as i32,
            device: outputs.device(),
            tensor: None,
        });
        outputs.mul(&live.tensor_on(outputs.device())?)
    }

    /// Divides the gradients of `optimizer`'s parameters by the scale, in place, and records
    /// whether any is infinite or NaN (PyTorch's `scaler.unscale_(optimizer)`): call it before
    /// reading or clipping the gradients; [`step`](GradScaler::step) then does not unscale again.
    /// Does nothing on a disabled scaler.
    ///
    /// # Errors
    ///
    /// PyTorch's texts, as [`Error::Message`]: "unscale_() has already been called on this
    /// optimizer since the last update().", "unscale_() is being called after step().", or
    /// "Attempted unscale_ but _scale is None.  This may indicate your script did not use
    /// scaler.scale(loss or outputs) earlier in the iteration."; [`Error::InvalidArgument`]
    /// "Attempting to unscale FP16 gradients." for an `f16` gradient (nothing is changed then).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// use autograd_runtime::optim::{clip_grad_norm_, Optimizer, Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    /// let w = Tensor::from_vec(vec![3.0f32, 4.0], &[2])?.requires_grad_(true)?;
    /// let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(1.0))?;
    /// let mut scaler = GradScaler::new(GradScalerOptions::default().device("cpu").init_scale(1024.0))?;
    /// scaler.scale(&w.mul(&w)?.sum()?.mul_scalar(0.5)?)?.backward()?;
    /// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, [3072.0, 4096.0]);
    /// scaler.unscale_(&mut opt)?;
    /// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, [3.0, 4.0]);
    /// clip_grad_norm_(&[w.clone()], 1.0, 2.0)?;   // on the true gradients
    /// assert!(scaler.step(&mut opt)?);
    /// scaler.update(None)?;
    /// scaler.unscale_(&mut opt)?; // a new iteration: allowed again
    /// assert!(scaler.unscale_(&mut opt).is_err()); // but once only
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn unscale_<O: Optimizer + ?Sized>(&mut self, optimizer: &mut O) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let scale = self.live("unscale_")?.scale;
        let index = self.state_index(&*optimizer);
        match self.per_optimizer[index].stage {
            Stage::Unscaled => {
                return Err(Error::msg(
                    "unscale_() has already been called on this optimizer since the last \
                     update().",
                ));
            }
            Stage::Stepped => return Err(Error::msg("unscale_() is being called after step().")),
            Stage::Ready => {}
        }
        // As PyTorch: the reciprocal in f64, rounded to f32.
        let inv_scale = (1.0 / f64::from(scale)) as f32;
        let mut grads = Vec::new();
        for group in optimizer.param_groups() {
            for p in group.params() {
                let Some(g) = p.grad() else { continue };
                if g.dtype() == DType::F16 {
                    return Err(Error::InvalidArgument(
                        "Attempting to unscale FP16 gradients.".into(),
                    ));
                }
                grads.push(g);
            }
        }
        let found = non_finite_check_and_unscale_(&grads, inv_scale)?;
        let state = &mut self.per_optimizer[index];
        state.found_inf_per_device = found;
        state.stage = Stage::Unscaled;
        Ok(())
    }

    /// Unscales `optimizer`'s gradients unless [`unscale_`](GradScaler::unscale_) did, then runs
    /// its step if none of them is infinite or NaN (PyTorch's `scaler.step(optimizer)`). Returns
    /// whether the step ran (PyTorch returns the step's value, or `None` when it skipped it). A
    /// disabled scaler just runs the step.
    ///
    /// # Errors
    ///
    /// The optimizer's own errors; PyTorch's texts, as [`Error::Message`]: "step() has already
    /// been called since the last update().", "No inf checks were recorded for this optimizer."
    /// (none of its parameters has a gradient), and those of [`unscale_`](GradScaler::unscale_).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    /// let w = Tensor::scalar(1.0f32).requires_grad_(true)?;
    /// let mut opt = Sgd::new([w.clone()], SgdOptions::default().lr(0.5))?;
    /// let mut scaler = GradScaler::new(GradScalerOptions::default().device("cpu"))?;
    /// scaler.scale(&w.mul_scalar(f32::MAX)?)?.backward()?; // the scaled gradient overflows
    /// assert!(!scaler.step(&mut opt)?);                    // skipped: w unchanged
    /// assert_eq!(w.item::<f32>()?, 1.0);
    /// let err = scaler.step(&mut opt).unwrap_err();
    /// assert_eq!(err.to_string(), "step() has already been called since the last update().");
    /// scaler.update(None)?;
    /// assert_eq!(scaler.get_scale(), 32768.0);             // backed off
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn step<O: Optimizer + ?Sized>(&mut self, optimizer: &mut O) -> Result<bool> {
        if !self.enabled {
            optimizer.step()?;
            return Ok(true);
        }
        self.live("step")?;
        let index = self.state_index(&*optimizer);
        match self.per_optimizer[index].stage {
            Stage::Stepped => {
                return Err(Error::msg(
                    "step() has already been called since the last update().",
                ));
            }
            Stage::Ready => self.unscale_(optimizer)?,
            Stage::Unscaled => {}
        }
        let found = &self.per_optimizer[index].found_inf_per_device;
        if found.is_empty() {
            return Err(Error::msg(
                "No inf checks were recorded for this optimizer.",
            ));
        }
        let ran = if any_found(found.iter().map(|(_, t)| t))? {
            false
        } else {
            optimizer.step()?;
            true
        };
        self.per_optimizer[index].stage = Stage::Stepped;
        Ok(ran)
    }

    /// Updates the scale at the end of an iteration (PyTorch's `scaler.update(new_scale)`):
    /// with `None`, backs off (× `backoff_factor`) if any optimizer's gradients had an infinity
    /// or NaN, otherwise counts a good step and grows the scale (× `growth_factor`) after
    /// `growth_interval` of them in a row; with `Some(s)`, sets the scale to `s` (rounded to
    /// `f32`; the growth tracker is kept). Then forgets this iteration's optimizers. Does nothing
    /// on a disabled scaler.
    ///
    /// # Errors
    ///
    /// PyTorch's texts, as [`Error::Message`]: "No inf checks were recorded prior to update."
    /// (no `unscale_` or `step` since the last update), "Attempted update but _scale is None.
    /// ..." (no [`scale`](GradScaler::scale) yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// use autograd_runtime::optim::{Optimizer, Sgd, SgdOptions};
    /// use autograd_runtime::Tensor;
    /// let w = Tensor::scalar(1.0f32).requires_grad_(true)?;
    /// let mut opt = Sgd::new([w.clone()], SgdOptions::default())?;
    /// let options = GradScalerOptions::default().device("cpu").init_scale(4.0).growth_interval(2);
    /// let mut scaler = GradScaler::new(options)?;
    /// let mut scales = Vec::new();
    /// for _ in 0..4 {
    ///     opt.zero_grad();
    ///     scaler.scale(&w.mul_scalar(3.0)?)?.backward()?;
    ///     scaler.step(&mut opt)?;
    ///     scaler.update(None)?;
    ///     scales.push(scaler.get_scale());
    /// }
    /// assert_eq!(scales, [4.0, 8.0, 8.0, 16.0]); // grows every second good step
    /// scaler.update(Some(0.1))?;
    /// assert_eq!(scaler.get_scale(), 0.1f32 as f64);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn update(&mut self, new_scale: Option<f64>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.live("update")?;
        let found = match new_scale {
            Some(_) => false,
            None => {
                let mut tensors = self
                    .per_optimizer
                    .iter()
                    .flat_map(|s| s.found_inf_per_device.iter().map(|(_, t)| t))
                    .peekable();
                if tensors.peek().is_none() {
                    return Err(Error::msg("No inf checks were recorded prior to update."));
                }
                any_found(tensors)?
            }
        };
        let (growth, backoff, interval) = (
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        );
        let live = self
            .live
            .as_mut()
            .expect("invariant: checked by `live` above");
        match new_scale {
            Some(s) => live.set_scale(s as f32),
            None => {
                let (scale, tracker) = update_scale(
                    live.scale,
                    live.growth_tracker,
                    found,
                    growth,
                    backoff,
                    interval,
                );
                live.set_scale(scale);
                live.growth_tracker = tracker;
            }
        }
        self.per_optimizer.clear();
        Ok(())
    }

    /// The current scale (PyTorch's `get_scale()`): the initial scale before the first
    /// [`scale`](GradScaler::scale), 1 on a disabled scaler.
    pub fn get_scale(&self) -> f64 {
        match (&self.live, self.enabled) {
            (_, false) => 1.0,
            (Some(live), true) => f64::from(live.scale),
            (None, true) => self.init_scale,
        }
    }

    /// The growth factor.
    pub fn get_growth_factor(&self) -> f64 {
        self.growth_factor
    }

    /// Sets the growth factor (unchecked, as PyTorch's setter).
    pub fn set_growth_factor(&mut self, new_factor: f64) {
        self.growth_factor = new_factor;
    }

    /// The backoff factor.
    pub fn get_backoff_factor(&self) -> f64 {
        self.backoff_factor
    }

    /// Sets the backoff factor (unchecked, as PyTorch's setter).
    pub fn set_backoff_factor(&mut self, new_factor: f64) {
        self.backoff_factor = new_factor;
    }

    /// The growth interval.
    pub fn get_growth_interval(&self) -> i64 {
        self.growth_interval
    }

    /// Sets the growth interval.
    pub fn set_growth_interval(&mut self, new_interval: i64) {
        self.growth_interval = new_interval;
    }

    /// Whether the scaler is enabled (`false` when asked for, or for a `"cuda"` scaler without
    /// CUDA).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The growth tracker: good steps in a row since the scale last changed (PyTorch's
    /// `_get_growth_tracker()`), 0 on a disabled scaler.
    fn growth_tracker(&self) -> i64 {
        match (&self.live, self.enabled) {
            (_, false) => 0,
            (Some(live), true) => i64::from(live.growth_tracker),
            (None, true) => self.init_growth_tracker,
        }
    }

    /// The scaler's state under PyTorch's keys: `scale`, `growth_factor`, `backoff_factor`,
    /// `growth_interval`, `_growth_tracker`; empty for a disabled scaler. Call it after
    /// [`update`](GradScaler::update).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::amp::{GradScaler, GradScalerOptions};
    /// let a = GradScaler::new(GradScalerOptions::default().device("cpu").init_scale(1024.0))?;
    /// let state = a.state_dict();
    /// assert_eq!(state["scale"], 1024.0);
    /// assert_eq!(state["_growth_tracker"], 0);
    /// let mut b = GradScaler::new(GradScalerOptions::default().device("cpu"))?;
    /// b.load_state_dict(&state)?;
    /// assert_eq!(b.get_scale(), 1024.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn state_dict(&self) -> Map<String, Value> {
        let mut map = Map::new();
        if self.enabled {
            map.insert("scale".into(), f64_json(self.get_scale()));
            map.insert("growth_factor".into(), f64_json(self.growth_factor));
            map.insert("backoff_factor".into(), f64_json(self.backoff_factor));
            map.insert("growth_interval".into(), self.growth_interval.into());
            map.insert("_growth_tracker".into(), self.growth_tracker().into());
        }
        map
    }

    /// Loads a state written by [`state_dict`](GradScaler::state_dict) (here or by PyTorch, as
    /// JSON): every key is read, nothing is changed unless all are valid. Does nothing on a
    /// disabled scaler.
    ///
    /// # Errors
    ///
    /// [`Error::Message`] "The source state dict is empty, possibly because it was saved from a
    /// disabled instance of GradScaler." for an empty state; [`Error::StateDict`] for a missing
    /// key or a value of the wrong type.
    pub fn load_state_dict(&mut self, state: &Map<String, Value>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        if state.is_empty() {
            return Err(Error::msg(
                "The source state dict is empty, possibly because it was saved from a disabled \
                 instance of GradScaler.",
            ));
        }
        let scale = read_f64(state, "scale")?;
        let growth_factor = read_f64(state, "growth_factor")?;
        let backoff_factor = read_f64(state, "backoff_factor")?;
        let growth_interval = read_i64(state, "growth_interval")?;
        let growth_tracker = read_i64(state, "_growth_tracker")?;
        self.init_scale = scale;
        self.growth_factor = growth_factor;
        self.backoff_factor = backoff_factor;
        self.growth_interval = growth_interval;
        self.init_growth_tracker = growth_tracker;
        if let Some(live) = &mut self.live {
            live.set_scale(scale as f32);
            live.growth_tracker = growth_tracker as i32;
        }
        Ok(())
    }

    /// The scale and tracker, or PyTorch's error naming `funcname` before the first `scale`.
    fn live(&self, funcname: &str) -> Result<&Live> {
        self.live.as_ref().ok_or_else(|| {
            Error::msg(format!(
                "Attempted {funcname} but _scale is None.  This may indicate your script did not \
                 use scaler.scale(loss or outputs) earlier in the iteration."
            ))
        })
    }

    /// The index of `optimizer`'s state in this iteration, made `Ready` if it is new.
    fn state_index<O: Optimizer + ?Sized>(&mut self, optimizer: &O) -> usize {
        let key = optimizer
            .param_groups()
            .iter()
            .find_map(|g| g.params().first().cloned());
        let same = |k: &Option<Tensor>| match (k, &key) {
            (Some(a), Some(b)) => a.is_same(b),
            (None, None) => true,
            _ => false,
        };
        if let Some(i) = self.per_optimizer.iter().position(|s| same(&s.key)) {
            return i;
        }
        self.per_optimizer.push(OptimizerState {
            key,
            stage: Stage::Ready,
            found_inf_per_device: Vec::new(),
        });
        self.per_optimizer.len() - 1
    }
}

/// A float as JSON (the optimizers' and schedulers' convention for infinities and NaN).
fn f64_json(x: f64) -> Value {
    crate::optim::lr_scheduler::state::f64_json(x)
}

/// An [`Error::StateDict`] for the scaler.
fn state_error(message: String) -> Error {
    Error::StateDict {
        module: "GradScaler".into(),
        message,
    }
}

/// The float under `key`.
fn read_f64(state: &Map<String, Value>, key: &str) -> Result<f64> {
    let v = state
        .get(key)
        .ok_or_else(|| state_error(format!("Missing key(s) in state_dict: \"{key}\".")))?;
    crate::optim::lr_scheduler::state::as_f64(v)
        .ok_or_else(|| state_error(format!("\"{key}\" is not a number: {v}")))
}

/// The integer under `key`.
fn read_i64(state: &Map<String, Value>, key: &str) -> Result<i64> {
    let v = state
        .get(key)
        .ok_or_else(|| state_error(format!("Missing key(s) in state_dict: \"{key}\".")))?;
    v.as_i64()
        .ok_or_else(|| state_error(format!("\"{key}\" is not an integer: {v}")))
}
