//! `autograd::data`: the data loader against the orders PyTorch's draws (printed by
//! `tests/data/loader_values.py`), its options, collate steps and worker threads, and the data
//! sets the library ships.

mod datasets;
mod loader;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Held by every test that draws from the global generator (a loader without a generator,
/// `manual_seed`), so that tests running in parallel do not move each other's stream.
static GLOBAL_GENERATOR: Mutex<()> = Mutex::new(());

fn global_generator() -> MutexGuard<'static, ()> {
    GLOBAL_GENERATOR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
