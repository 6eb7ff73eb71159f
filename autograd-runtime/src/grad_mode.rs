//! Thread-local autograd modes, as PyTorch's `c10::AutogradState`: grad mode (whether ops record
//! the graph: `no_grad`, `enable_grad`, `set_grad_enabled`), inference mode (`inference_mode`)
//! and whether backward may use device threads (`set_multithreading_enabled`), plus autocast's
//! enabled flags and dtypes (`amp/autocast/`). They are bits of one thread-local `u16`, so an
//! op reads its mode with one load, and the engine installs a pass's whole state around each node
//! with one store.

use std::cell::Cell;
use std::marker::PhantomData;

/// The modes of one thread (PyTorch's `AutogradState`): a set of flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AutogradState(u16);

impl AutogradState {
    const GRAD: u16 = 1;
    const INFERENCE: u16 = 2;
    const MULTITHREADING: u16 = 4;
    /// Forward-mode AD is suspended on this thread: an op computing its tangents (or the
    /// backward it computes them through) runs its own ops without propagating tangents again
    /// (`forward_ad/`). Carried to the threads of a backward pass with the other modes.
    const FORWARD_AD_SUSPENDED: u16 = 8;
    /// Autocast's part (`amp/autocast/` encodes it): bit 4 CPU autocast on, bit 5 CUDA
    /// autocast on, bits 8-10 and 11-13 the CPU and CUDA autocast dtypes (indices into
    /// `DType::ALL`). PyTorch keeps these in its dispatch-key TLS and `autocast_dtypes_`, both
    /// in the `ThreadLocalState` a backward pass carries, as the engine carries this.
    pub(crate) const AUTOCAST_ENABLED: u16 = 0x30;
    pub(crate) const AUTOCAST: u16 = 0x3F30;
    /// A new thread's: grad mode on, inference mode off, multithreading on, autocast off with
    /// PyTorch's default dtypes (CPU bf16, index 5; CUDA f16, index 4).
    const DEFAULT: AutogradState =
        AutogradState(Self::GRAD | Self::MULTITHREADING | (5 << 8) | (4 << 11));

    #[inline]
    pub(crate) fn grad(self) -> bool {
        self.0 & Self::GRAD != 0
    }

    #[inline]
    pub(crate) fn inference(self) -> bool {
        self.0 & Self::INFERENCE != 0
    }

    #[inline]
    pub(crate) fn multithreading(self) -> bool {
        self.0 & Self::MULTITHREADING != 0
    }

    /// Autocast's bits ([`AutogradState::AUTOCAST`]).
    #[inline]
    pub(crate) fn autocast(self) -> u16 {
        self.0 & Self::AUTOCAST
    }

    /// This state with autocast's bits replaced by `bits`.
    #[inline]
    pub(crate) fn with_autocast(self, bits: u16) -> AutogradState {
        AutogradState((self.0 & !Self::AUTOCAST) | (bits & Self::AUTOCAST))
    }

    #[inline]
    fn with(self, flag: u16, on: bool) -> AutogradState {
        AutogradState(if on { self.0 | flag } else { self.0 & !flag })
    }

    #[inline]
    pub(crate) fn forward_ad_suspended(self) -> bool {
        self.0 & Self::FORWARD_AD_SUSPENDED != 0
    }

    /// This state with grad mode `enabled`.
    #[inline]
    pub(crate) fn with_grad(self, enabled: bool) -> AutogradState {
        self.with(Self::GRAD, enabled)
    }
}

thread_local! {
    static STATE: Cell<AutogradState> = const { Cell::new(AutogradState::DEFAULT) };
}

/// This thread's modes.
#[inline]
pub(crate) fn state() -> AutogradState {
    STATE.with(Cell::get)
}

/// Sets this thread's modes, returning the previous ones (for guards that restore them
/// themselves, such as the engine's `ThreadLocalStateGuard`).
#[inline]
pub(crate) fn replace_state(state: AutogradState) -> AutogradState {
    STATE.with(|s| s.replace(state))
}

/// Sets this thread's modes (for the engine's `ThreadLocalStateGuard`, which restores them).
#[inline]
pub(crate) fn set_state(state: AutogradState) {
    STATE.with(|s| s.set(state));
}

/// Changes one flag of this thread's modes, returning its previous value.
#[inline]
fn replace_flag(flag: u16, on: bool) -> bool {
    STATE.with(|s| {
        let old = s.get();
        s.set(old.with(flag, on));
        old.0 & flag != 0
    })
}

/// Suspends forward-mode AD on this thread until the guard drops (see `forward_ad/`).
pub(crate) fn suspend_forward_ad() -> ForwardAdSuspension {
    ForwardAdSuspension {
        previous: replace_flag(AutogradState::FORWARD_AD_SUSPENDED, true),
        _not_send: PhantomData,
    }
}

/// Restores forward-mode AD's previous suspension when dropped.
#[doc(hidden)]
#[derive(Debug)]
pub struct ForwardAdSuspension {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for ForwardAdSuspension {
    fn drop(&mut self) {
        replace_flag(AutogradState::FORWARD_AD_SUSPENDED, self.previous);
    }
}

/// Whether ops on this thread record a backward graph (default `true`).
///
/// # Examples
///
/// ```
/// assert!(autograd_runtime::is_grad_enabled());
/// {
///     let _g = autograd_runtime::no_grad();
///     assert!(!autograd_runtime::is_grad_enabled());
/// }
/// assert!(autograd_runtime::is_grad_enabled());
/// ```
#[inline]
pub fn is_grad_enabled() -> bool {
    state().grad()
}

/// Whether ops on this thread record a graph: grad mode on and inference mode off (in inference
/// mode nothing records, even under [`enable_grad`], as PyTorch's dispatcher skips autograd
/// there). One load, as [`is_grad_enabled`].
#[inline]
pub(crate) fn is_recording() -> bool {
    state().0 & (AutogradState::GRAD | AutogradState::INFERENCE) == AutogradState::GRAD
}

/// Restores the previous grad mode when dropped. Not `Send`: grad mode is per thread.
///
/// ```compile_fail
/// fn assert_send<T: Send>(_: T) {}
/// assert_send(autograd_runtime::no_grad());
/// ```
#[must_use = "grad mode is restored as soon as the guard is dropped"]
#[derive(Debug)]
pub struct GradModeGuard {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        replace_flag(AutogradState::GRAD, self.previous);
    }
}

/// Sets grad mode to `enabled` until the returned guard is dropped.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{set_grad_enabled, Tensor};
/// let x = Tensor::scalar(2.0f64);
/// x.set_requires_grad(true)?;
/// let y = {
///     let _g = set_grad_enabled(false);
///     x.mul(&x)?
/// };
/// assert!(!y.requires_grad());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    let previous = replace_flag(AutogradState::GRAD, enabled);
    GradModeGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// Disables graph recording until the guard is dropped (`torch.no_grad()`).
///
/// In-place ops under `no_grad` still bump the version counter.
///
/// # Examples
///
/// ```
/// let _g = autograd_runtime::no_grad();
/// assert!(!autograd_runtime::is_grad_enabled());
/// ```
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Enables graph recording until the guard is dropped (`torch.enable_grad()`), also inside
/// [`no_grad`].
///
/// # Examples
///
/// ```
/// let _outer = autograd_runtime::no_grad();
/// let _inner = autograd_runtime::enable_grad();
/// assert!(autograd_runtime::is_grad_enabled());
/// ```
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// Restores the previous multithreading setting when dropped (see
/// [`set_multithreading_enabled`]). Not `Send`: the setting is per thread.
#[must_use = "the setting is restored as soon as the guard is dropped; `std::mem::forget` it to keep the setting"]
#[derive(Debug)]
pub struct MultithreadingGuard {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for MultithreadingGuard {
    fn drop(&mut self) {
        replace_flag(AutogradState::MULTITHREADING, self.previous);
    }
}

/// Whether backward passes started on this thread may run nodes on device threads (default
/// `true`; `torch.autograd.is_multithreading_enabled`). Off inside [`inference_mode`], as in
/// PyTorch.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{is_multithreading_enabled, set_multithreading_enabled};
/// assert!(is_multithreading_enabled());
/// let guard = set_multithreading_enabled(false);
/// assert!(!is_multithreading_enabled());
/// drop(guard);
/// assert!(is_multithreading_enabled());
/// ```
#[inline]
pub fn is_multithreading_enabled() -> bool {
    state().multithreading()
}

/// Sets whether backward passes started on this thread may use device threads, until the guard
/// is dropped (`torch.autograd.set_multithreading_enabled`, B28). Disabled, a pass runs every
/// node on the thread that called `backward()`/`grad()`, the nodes of `Device::Virtual(i)` and
/// `Device::Cuda(i)` tensors included, instead of handing them to device `i`'s worker thread.
///
/// The setting is per thread, as PyTorch's. PyTorch's function form (a call that keeps the
/// setting) is `std::mem::forget(set_multithreading_enabled(false))`.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{set_multithreading_enabled, Device, Tensor};
/// let x = Tensor::scalar(2.0f64).to(Device::Virtual(1))?.requires_grad_(true)?;
/// let ran_on = Arc::new(Mutex::new(None));
/// let r = ran_on.clone();
/// x.register_hook(move |_| { *r.lock().unwrap() = Some(std::thread::current().id()); None })?;
/// {
///     let _single = set_multithreading_enabled(false);
///     x.mul(&x)?.backward()?;
/// }
/// assert_eq!(*ran_on.lock().unwrap(), Some(std::thread::current().id()));
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 4.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn set_multithreading_enabled(enabled: bool) -> MultithreadingGuard {
    let previous = replace_flag(AutogradState::MULTITHREADING, enabled);
    MultithreadingGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// Whether this thread is in inference mode (`torch.is_inference_mode_enabled`, default `false`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{inference_mode, is_inference_mode_enabled};
/// assert!(!is_inference_mode_enabled());
/// let _g = inference_mode();
/// assert!(is_inference_mode_enabled());
/// ```
#[inline]
pub fn is_inference_mode_enabled() -> bool {
    state().inference()
}

/// Restores the modes that were current before [`inference_mode`] or [`inference_mode_with`]
/// when dropped (grad mode, inference mode and the multithreading setting, as PyTorch's
/// `c10::InferenceMode` does). Not `Send`: the modes are per thread.
#[must_use = "the modes are restored as soon as the guard is dropped"]
#[derive(Debug)]
pub struct InferenceModeGuard {
    previous: AutogradState,
    _not_send: PhantomData<*const ()>,
}

impl Drop for InferenceModeGuard {
    fn drop(&mut self) {
        set_state(self.previous);
    }
}

/// Enters inference mode until the guard is dropped (`torch.inference_mode()`): no op records a
/// graph, and every tensor created meanwhile is an *inference tensor*
/// ([`Tensor::is_inference`](crate::Tensor::is_inference)), which has no version counter and can
/// never be part of a recorded graph's saved state. Cheaper than [`no_grad`] for code that will
/// never be differentiated: in-place ops on inference tensors are not counted.
///
/// Outside inference mode, inference tensors can be read by any op (an op that would have to save
/// one for backward fails), but not modified in place, nor made to require grad. Views of normal
/// tensors taken in inference mode stay normal views, which may not be modified in place
/// outside it when the change would be recorded. Inference mode also turns grad mode and
/// multithreaded backward off ([`is_multithreading_enabled`]), as PyTorch's does.
///
/// # Errors
///
/// None here; the errors come later, from what is done with inference tensors outside inference
/// mode: [`Error::InferenceTensorSaved`](crate::Error::InferenceTensorSaved),
/// [`Error::InferenceTensorInplace`](crate::Error::InferenceTensorInplace),
/// [`Error::InferenceTensorRequiresGrad`](crate::Error::InferenceTensorRequiresGrad).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{inference_mode, Tensor};
/// let w = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let y = {
///     let _g = inference_mode();
///     w.mul_scalar(3.0)?
/// };
/// assert!(y.is_inference() && !y.requires_grad());
/// assert_eq!(y.to_vec::<f64>()?, vec![3.0, 6.0]);
/// // Outside inference mode it can be read, not modified.
/// assert_eq!(y.add(&w)?.to_vec::<f64>()?, vec![4.0, 8.0]);
/// assert!(y.add_(&Tensor::scalar(1.0f64)).is_err());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn inference_mode() -> InferenceModeGuard {
    inference_mode_with(true)
}

/// [`inference_mode`] for `mode = true`; for `false` (`torch.inference_mode(False)`), leaves
/// inference mode until the guard is dropped, turning grad mode and multithreaded backward on,
/// as PyTorch's `c10::InferenceMode(false)` does.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{inference_mode, inference_mode_with, is_grad_enabled, is_inference_mode_enabled};
/// let _outer = inference_mode();
/// {
///     let _inner = inference_mode_with(false);
///     assert!(!is_inference_mode_enabled() && is_grad_enabled());
/// }
/// assert!(is_inference_mode_enabled() && !is_grad_enabled());
/// ```
pub fn inference_mode_with(mode: bool) -> InferenceModeGuard {
    let modes = if mode {
        AutogradState(AutogradState::INFERENCE)
    } else {
        AutogradState(AutogradState::GRAD | AutogradState::MULTITHREADING)
    };
    // Autocast's state is kept, as PyTorch's `InferenceMode` keeps the autocast keys.
    InferenceModeGuard {
        previous: replace_state(modes.with_autocast(state().autocast())),
        _not_send: PhantomData,
    }
}
