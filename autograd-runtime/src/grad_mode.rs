//! Thread-local grad mode: whether ops record the graph (`no_grad`, `enable_grad`,
//! `set_grad_enabled`), as `torch.no_grad()` and friends.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
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
    GRAD_ENABLED.with(Cell::get)
}

/// Sets this thread's grad mode, returning the previous one (for guards that restore it
/// themselves, such as the engine's `ThreadLocalStateGuard`).
#[inline]
pub(crate) fn replace(enabled: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(enabled))
}

/// Sets this thread's grad mode (for the engine's `ThreadLocalStateGuard`, which restores it).
#[inline]
pub(crate) fn set(enabled: bool) {
    GRAD_ENABLED.with(|g| g.set(enabled));
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
        GRAD_ENABLED.with(|g| g.set(self.previous));
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
    let previous = replace(enabled);
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
