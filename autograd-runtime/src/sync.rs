//! The one place the runtime imports its synchronisation primitives from.
//!
//! Under `--cfg loom` these are loom's model-checked types; otherwise std's. The mutex poisoning
//! policy is decided here once: a panic while a lock is held happens only inside user hooks or
//! backward code, which the engine catches and reports as an [`Error`](crate::Error); the data the
//! lock protects is left consistent by every engine critical section (none of them runs user code
//! while holding a lock), so [`Mutex::lock`] simply ignores poisoning.

// loom has no `Weak`; only the protocol files the loom models include are compiled under loom.
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, atomic};
/// Channels between the data-parallel reducer and its communication thread.
#[cfg(not(loom))]
pub(crate) use std::sync::mpsc;
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Weak, atomic};

#[cfg(loom)]
use loom::sync as imp;
#[cfg(not(loom))]
use std::sync as imp;

pub(crate) use imp::MutexGuard;

/// Memory orderings: one type for std's and loom's atomics.
pub(crate) use std::sync::atomic::Ordering;

/// Process-wide statics (id counters, warn-once flags, the default engine, the warning handler,
/// the anomaly mode): always std's types, since loom models no statics and they take part in no
/// engine protocol.
#[cfg(not(loom))]
pub(crate) mod statics {
    pub(crate) use std::sync::OnceLock;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
}

/// A mutex whose `lock` never fails (see the module docs for the poisoning policy).
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(imp::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(imp::Mutex::new(value))
    }

    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value, through exclusive access (no locking).
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A condition variable paired with [`Mutex`], with the same poisoning policy.
#[derive(Debug, Default)]
pub(crate) struct Condvar(imp::Condvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(imp::Condvar::new())
    }

    pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0
            .wait(guard)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Condvar::wait`] that gives up at `timeout`; the flag says whether it timed out.
    #[cfg(not(loom))]
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        let (guard, result) = self
            .0
            .wait_timeout(guard, timeout)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (guard, result.timed_out())
    }

    pub(crate) fn notify_one(&self) {
        self.0.notify_one();
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// A reader-writer lock with the same poisoning policy; guards tensor storage.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct RwLock<T>(std::sync::RwLock<T>);

#[cfg(not(loom))]
impl<T> RwLock<T> {
    pub(crate) fn new(value: T) -> Self {
        RwLock(std::sync::RwLock::new(value))
    }

    #[inline]
    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[inline]
    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, T> {
        self.0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value, through exclusive access (no locking).
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
