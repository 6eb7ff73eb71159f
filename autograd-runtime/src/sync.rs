//! The one place the runtime imports its synchronisation primitives from.
//!
//! Under `--cfg loom` these are loom's model-checked types; otherwise std's `Arc`, `Weak`,
//! atomics, `CondMutex` and `Condvar`, and parking_lot's `Mutex` and `RwLock`. The mutex
//! poisoning policy is decided here once: a panic while a lock is held happens only inside user
//! hooks or backward code, which the engine catches and reports as an [`Error`](crate::Error);
//! the data the lock protects is left consistent by every engine critical section (none of them
//! runs user code while holding a lock), so [`CondMutex::lock`] (and [`Mutex::lock`] under loom)
//! simply ignores poisoning, and parking_lot's locks have none to ignore.
//!
//! The other runtime files take their locks, `Arc`s and atomics from here, not from `std::sync`
//! (rustdoc examples aside: they show the user's side). The std types kept whatever the cfg are
//! re-exported here too, each saying why: `statics` and `StdArc`.

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

/// The guard of a [`CondMutex`] (std's or loom's), which [`Condvar`] waits on.
pub(crate) use imp::MutexGuard as CondMutexGuard;
#[cfg(loom)]
pub(crate) use imp::MutexGuard;
/// The guard of a [`Mutex`] (parking_lot's: see [`Mutex`]).
#[cfg(not(loom))]
pub(crate) use parking_lot::MutexGuard;

/// std's `Arc` by name (whichever `Arc` above is the crate's), for the values a dependency's API types as `std::sync::Arc`
/// (cudarc's contexts and streams): loom cannot stand in for them, and they take part in no
/// engine protocol (the CUDA backend is not compiled under loom). Two attributes, not one
/// `all(..)`: under loom the first drops the item before the second names a feature that the
/// loom-models crate does not declare.
#[cfg(not(loom))]
#[cfg(feature = "cuda")]
pub(crate) use std::sync::Arc as StdArc;

/// Memory orderings: one type for std's and loom's atomics.
pub(crate) use std::sync::atomic::Ordering;

/// Process-wide statics (id counters, warn-once flags, the default engine, the warning handler,
/// the anomaly mode, the shared zero storages, the CUDA driver probe, device table, compiled PTX
/// and kernel caches, and the byte counters of those devices): always std's types, since loom
/// models no statics and they take part in no engine protocol.
#[cfg(not(loom))]
pub(crate) mod statics {
    pub(crate) use std::sync::OnceLock;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
}

/// A mutex whose `lock` never fails (see the module docs for the poisoning policy).
///
/// Outside loom, parking_lot's: it has no poisoning to ignore, so an uncontended lock and unlock
/// are one atomic instruction each, inline, where std's mutex also reads the global panic count
/// on both (its poison bookkeeping) and unlocks through a call. The engine takes several per
/// recorded op and per node run.
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(
    #[cfg(loom)] imp::Mutex<T>,
    #[cfg(not(loom))] parking_lot::Mutex<T>,
);

impl<T> Mutex<T> {
    #[cfg(loom)]
    pub(crate) fn new(value: T) -> Self {
        Mutex(imp::Mutex::new(value))
    }

    #[cfg(not(loom))]
    pub(crate) const fn new(value: T) -> Self {
        Mutex(parking_lot::Mutex::new(value))
    }

    #[cfg(loom)]
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock()
    }

    /// The value, through exclusive access (no locking).
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }
}

/// The mutex a [`Condvar`] waits on: std's (loom's under loom), with [`Mutex`]'s poisoning
/// policy. The engine's hand-offs between threads (the ready queues, a graph task's completion,
/// the reentrant pool) use it rather than parking_lot's: on a loaded 2-core machine, the chain
/// that alternates CPU and device nodes took about 25 µs per node instead of 0.8 in some runs
/// with parking_lot's mutex and condition variable there, never with std's.
#[derive(Debug, Default)]
pub(crate) struct CondMutex<T>(imp::Mutex<T>);

impl<T> CondMutex<T> {
    pub(crate) fn new(value: T) -> Self {
        CondMutex(imp::Mutex::new(value))
    }

    #[inline]
    pub(crate) fn lock(&self) -> CondMutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A condition variable paired with [`CondMutex`], with the same poisoning policy.
#[derive(Debug, Default)]
pub(crate) struct Condvar(imp::Condvar);

impl Condvar {
    pub(crate) fn new() -> Self {
        Condvar(imp::Condvar::new())
    }

    pub(crate) fn wait<'a, T>(&self, guard: CondMutexGuard<'a, T>) -> CondMutexGuard<'a, T> {
        self.0
            .wait(guard)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Condvar::wait`] that gives up at `timeout`; the flag says whether it timed out.
    #[cfg(not(loom))]
    pub(crate) fn wait_timeout<'a, T>(
        &self,
        guard: CondMutexGuard<'a, T>,
        timeout: std::time::Duration,
    ) -> (CondMutexGuard<'a, T>, bool) {
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

/// A reader-writer lock with the same poisoning policy; guards tensor storage. parking_lot's,
/// as [`Mutex`] (every scalar op takes a read or a write lock on a storage).
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct RwLock<T>(parking_lot::RwLock<T>);

/// The guards of a [`RwLock`].
#[cfg(not(loom))]
pub(crate) use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

#[cfg(not(loom))]
impl<T> RwLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        RwLock(parking_lot::RwLock::new(value))
    }

    #[inline]
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
        self.0.read()
    }

    #[inline]
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.0.write()
    }

    /// The value, through exclusive access (no locking).
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }
}
