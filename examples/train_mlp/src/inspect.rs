//! The inspection tools of `--graph` and `--profile`: the backward graph in Graphviz DOT
//! (`autograd::viz`, torchviz's `make_dot`) and the autograd profiler's table
//! (`autograd::profiler`, PyTorch's `key_averages().table()`).

use std::fs;
use std::path::Path;

use autograd::profiler::{self, Profile};
use autograd::{Tensor, viz};

use crate::RunError;

/// Writes the backward graph behind `loss` to `path` as DOT, creating parent directories.
///
/// # Errors
///
/// [`RunError::Write`] when the file cannot be written.
pub(crate) fn write_graph(loss: &Tensor, path: &Path) -> Result<(), RunError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::write(path, viz::to_dot(loss))
    };
    write().map_err(|source| RunError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Runs `f` under the autograd profiler, which records every backward node it runs.
pub(crate) fn profile<R>(f: impl FnOnce() -> R) -> (R, Profile) {
    profiler::profile(f)
}

/// The profiler's summary: one row per node name with calls, total and self time.
pub(crate) fn table(profile: &Profile) -> String {
    profile.key_averages().to_string()
}

/// Writes the Chrome trace (`chrome://tracing`, Perfetto) of `profile` to `path`.
///
/// # Errors
///
/// [`RunError::Write`] when the file cannot be written.
pub(crate) fn write_trace(profile: &Profile, path: &Path) -> Result<(), RunError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::write(path, profile.chrome_trace())
    };
    write().map_err(|source| RunError::Write {
        path: path.to_owned(),
        source,
    })
}
