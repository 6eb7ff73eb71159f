//! `Completion`: the one-shot latch that says a graph task is finished (PyTorch's
//! `future_result_`). The owner polls it between tasks; a caller whose task went to the pool
//! blocks on it. See README.md §3 for the wake-up protocol built on it.

use crate::sync::Ordering;

use crate::sync::atomic::AtomicBool;
use crate::sync::{CondMutex, Condvar};

/// A flag set once, with a condition variable for threads that block until it is set.
#[derive(Debug, Default)]
pub(crate) struct Completion {
    /// Set once by `complete`. Also read without the lock by `is_completed`.
    done: AtomicBool,
    /// Guards the transition and the condvar wait, so a waiter cannot miss the notification.
    lock: CondMutex<()>,
    cv: Condvar,
}

impl Completion {
    pub(crate) fn new() -> Completion {
        Completion::default()
    }

    /// Sets the flag; returns `true` for the call that set it (only that caller must act on it).
    pub(crate) fn complete(&self) -> bool {
        let _g = self.lock.lock();
        // AcqRel: Release publishes everything written before completion (results, the error) to
        // the Acquire loads in `is_completed`/`wait`; Acquire orders this call after an earlier
        // completer's writes when it loses the race.
        let first = !self.done.swap(true, Ordering::AcqRel);
        if first {
            self.cv.notify_all();
        }
        first
    }

    pub(crate) fn is_completed(&self) -> bool {
        // Acquire: pairs with the Release half of the swap in `complete`.
        self.done.load(Ordering::Acquire)
    }

    /// Blocks until `complete` was called.
    pub(crate) fn wait(&self) {
        let mut g = self.lock.lock();
        // Acquire: as in `is_completed`. The flag is set under `lock`, so checking it under the
        // lock before waiting cannot miss the `notify_all` that follows the set.
        while !self.done.load(Ordering::Acquire) {
            g = self.cv.wait(g);
        }
    }
}
