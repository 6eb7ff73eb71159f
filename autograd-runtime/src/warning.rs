//! Warnings the runtime emits (PyTorch's `TORCH_WARN`): printed to stderr by default, or handed to
//! a handler installed with [`set_warning_handler`].

use crate::sync::{Arc, Mutex};

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
