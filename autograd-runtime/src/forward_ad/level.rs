//! Dual levels: the one level that may be open (PyTorch supports no nesting), the tangents set
//! under it, and what exiting it clears.
//!
//! A level is identified by a generation number, never reused: a tangent remembers the
//! generation it was set under and counts only while that level is open, so a tangent left on a
//! tensor the exit could not reach (dropped from the registry's reach) is never seen again.

use crate::sync::Mutex;
use crate::sync::Weak;
use crate::sync::statics::AtomicU64;
use crate::sync::{Arc, Ordering};
use crate::tensor::TensorImpl;
use crate::{Error, Result, Tensor};

/// The open level's generation; 0 when none is open.
///
/// Relaxed: the level is a mode the user opens and closes between ops, as grad mode is, not a
/// handshake between threads. An op racing with the exit on another thread sees the level open
/// or closed; a tangent it sets under a level that just closed carries that level's generation
/// and is never read (see [`current`]).
static CURRENT: AtomicU64 = AtomicU64::new(0);

/// The generation the next level takes. Relaxed: only uniqueness matters, which the atomic
/// increment gives.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The tensors given a tangent under the open level, so that exiting it frees their tangents as
/// PyTorch does. Weak: the registry keeps no tensor alive.
static TANGENTS: Mutex<Vec<Weak<TensorImpl>>> = Mutex::new(Vec::new());

/// The open level's generation, if one is open.
#[inline(always)]
pub(crate) fn current() -> Option<u64> {
    match CURRENT.load(Ordering::Relaxed) {
        0 => None,
        g => Some(g),
    }
}

/// Opens a level; the public level number is always 0, PyTorch's first.
pub(super) fn enter() -> Result<usize> {
    let generation = NEXT.fetch_add(1, Ordering::Relaxed);
    CURRENT
        .compare_exchange(0, generation, Ordering::Relaxed, Ordering::Relaxed)
        .map_err(|_| Error::NestedDualLevel)?;
    Ok(0)
}

/// Closes the open level (`level` must be its number, 0) and frees the tangents set under it.
pub(super) fn exit(level: usize) -> Result<()> {
    let Some(generation) = current() else {
        return Err(Error::ExitDualLevel);
    };
    if level != 0 {
        return Err(Error::ExitDualLevel);
    }
    CURRENT.store(0, Ordering::Relaxed);
    let tensors = std::mem::take(&mut *TANGENTS.lock());
    // The tangents drop outside the registry's lock and each tensor's (their drop may free a
    // graph, whose saved values run user `Drop` code).
    let mut freed = Vec::new();
    for t in tensors.iter().filter_map(Weak::upgrade) {
        let mut meta = t.autograd.lock();
        if meta
            .forward_grad
            .as_ref()
            .is_some_and(|g| g.generation == generation)
        {
            freed.push(meta.forward_grad.take());
        }
    }
    drop(freed);
    Ok(())
}

/// Remembers that `t` got a tangent under the open level.
pub(super) fn register(t: &Tensor) {
    let mut tensors = TANGENTS.lock();
    // Keep the list from growing with dead entries over a long level.
    if tensors.len() >= 1024 && tensors.len().is_power_of_two() {
        tensors.retain(|w| w.strong_count() > 0);
    }
    tensors.push(Arc::downgrade(&t.0));
}
