//! Modes: anomaly detection and `set_warn_always`, whose switches and warning handler are
//! process-wide (as PyTorch's), so they live apart from the other themes: the anomaly tests run
//! one at a time, and the once-per-process warning runs in a process of its own. And the
//! thread-local modes: inference mode and multithreaded backward.

#[path = "../common/mod.rs"]
mod common;

mod anomaly;
mod inference_mode;
mod multithreading;
mod warn_always;
