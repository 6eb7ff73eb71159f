//! Process-wide modes: anomaly detection and `set_warn_always`. Their switches and the warning
//! handler are process-wide (as PyTorch's), so they live apart from the other themes: the anomaly
//! tests run one at a time, and the once-per-process warning runs in a process of its own.

#[path = "../common/mod.rs"]
mod common;

mod anomaly;
mod warn_always;
