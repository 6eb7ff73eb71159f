//! Turning panics in nodes, hooks and callbacks into errors of the graph task (B24): the engine
//! stays usable and the caller of `backward()` gets [`Error::Panic`].

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{Error, Result};

/// Runs `f`, converting a panic into [`Error::Panic`] naming `node`. Never inlined: the worker
/// loop stays small, and LLVM's choice to inline it (or not) flipped with unrelated changes,
/// moving the per-node time by a few percent.
#[inline(never)]
pub(crate) fn catch<T>(node: Option<&str>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // AssertUnwindSafe: after a panic the graph task is marked failed and its partial state is
    // never read again except to drop it; engine invariants are restored by the caller.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "<non-string panic payload>".to_string());
            Err(Error::Panic {
                node: node.map(str::to_string),
                message,
            })
        }
    }
}
