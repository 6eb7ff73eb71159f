//! Warnings the runtime emits (PyTorch's `TORCH_WARN`): printed to stderr by default, or handed to
//! a handler installed with [`set_warning_handler`].

use crate::sync::statics::AtomicBool;
use crate::sync::{Arc, Mutex, Ordering};

type Handler = Arc<dyn Fn(&str) + Send + Sync>;

/// A function that receives warning messages (see [`set_warning_handler`]).
pub type WarningHandler = Box<dyn Fn(&str) + Send + Sync>;

static HANDLER: crate::sync::statics::OnceLock<Mutex<Option<Handler>>> =
    crate::sync::statics::OnceLock::new();

/// Installs `handler` to receive every warning (or restores printing to stderr with `None`).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// autograd_runtime::set_warning_handler(Some(Box::new(move |w: &str| s.lock().unwrap().push(w.to_string()))));
/// autograd_runtime::set_warning_handler(None);
/// ```
pub fn set_warning_handler(handler: Option<WarningHandler>) {
    *HANDLER.get_or_init(Default::default).lock() = handler.map(Handler::from);
}

pub(crate) fn warn(message: &str) {
    let handler = HANDLER.get_or_init(Default::default).lock().clone();
    match handler {
        Some(h) => h(message),
        None => eprintln!("autograd warning: {message}"),
    }
}

/// Whether once-per-process warnings are emitted every time (PyTorch's `set_warn_always`).
static WARN_ALWAYS: AtomicBool = AtomicBool::new(false);

/// Makes the warnings PyTorch emits once per process (`TORCH_WARN_ONCE`: `backward()` with
/// `create_graph`, reading `.grad` of a non-leaf) fire every time, or once again (PyTorch's
/// `torch.set_warn_always`). Useful in tests that observe a warning.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{set_warn_always, set_warning_handler, Tensor};
/// let seen = Arc::new(Mutex::new(0));
/// let s = seen.clone();
/// set_warning_handler(Some(Box::new(move |_: &str| *s.lock().unwrap() += 1)));
/// set_warn_always(true);
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let create_graph = autograd_runtime::BackwardOptions::new().create_graph(true);
/// x.exp()?.backward_with(create_graph.clone())?;
/// x.exp()?.backward_with(create_graph)?;
/// assert_eq!(*seen.lock().unwrap(), 2); // "Using backward() with create_graph=True ..." twice
/// set_warn_always(false);
/// set_warning_handler(None);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn set_warn_always(always: bool) {
    // Relaxed: a flag read by the next warning; no other memory depends on it.
    WARN_ALWAYS.store(always, Ordering::Relaxed);
}

/// Whether [`set_warn_always`] is on (PyTorch's `torch.is_warn_always_enabled`).
///
/// # Examples
///
/// ```
/// assert!(!autograd_runtime::is_warn_always_enabled());
/// ```
pub fn is_warn_always_enabled() -> bool {
    WARN_ALWAYS.load(Ordering::Relaxed)
}

/// Emits `message` the first time `warned` is seen unset (PyTorch's `TORCH_WARN_ONCE`), or every
/// time under [`set_warn_always`].
pub(crate) fn warn_once(warned: &AtomicBool, message: &str) {
    // Relaxed: only "at most once" matters for `warned`, and the switch is a plain flag.
    if !warned.swap(true, Ordering::Relaxed) || WARN_ALWAYS.load(Ordering::Relaxed) {
        warn(message);
    }
}
