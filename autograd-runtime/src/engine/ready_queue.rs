//! `ReadyQueue`: a priority queue of tasks (the engine's `NodeTask`s) behind a mutex and a
//! condition variable. Each thread that calls `backward()` owns one for its CPU work (B28).

use std::collections::BinaryHeap;

use crate::sync::atomic::AtomicUsize;
use crate::sync::{CondMutex, Condvar, Ordering};

#[derive(Debug)]
struct Inner<T> {
    heap: BinaryHeap<T>,
    /// Threads blocked in `pop`. `push` signals the condvar only when this is non-zero, which
    /// saves a futex syscall per node in the common single-threaded case.
    waiters: usize,
}

/// Tasks ready to run, greatest first: for the engine, `NodeTask`s in their priority order
/// (`node_task.rs`). Generic, so that this file needs nothing else of the engine and the loom
/// models can check the hand-off with plain integers.
#[derive(Debug)]
pub(crate) struct ReadyQueue<T> {
    inner: CondMutex<Inner<T>>,
    available: Condvar,
    /// The heap's length, written under the lock after every change, read without it by
    /// `looks_empty`: an empty queue hands a continuation straight back with no lock taken.
    queued: AtomicUsize,
}

impl<T: Ord> Default for ReadyQueue<T> {
    fn default() -> Self {
        ReadyQueue {
            inner: CondMutex::new(Inner {
                heap: BinaryHeap::new(),
                waiters: 0,
            }),
            available: Condvar::new(),
            queued: AtomicUsize::new(0),
        }
    }
}

impl<T: Ord> ReadyQueue<T> {
    pub(crate) fn new() -> ReadyQueue<T> {
        ReadyQueue::default()
    }

    /// Adds a task and wakes one waiting thread, if any. The caller has already counted the task
    /// in its graph task's `outstanding_tasks`.
    pub(crate) fn push(&self, task: T) {
        let mut inner = self.inner.lock();
        inner.heap.push(task);
        self.publish_len(&inner);
        let wake = inner.waiters > 0;
        drop(inner);
        if wake {
            self.available.notify_one();
        }
    }

    /// Records the heap's length for `looks_empty`'s lock-free check (under the lock).
    #[inline]
    fn publish_len(&self, inner: &Inner<T>) {
        // Release: pairs with the Acquire load in `looks_empty`, so a reader that sees the
        // length also sees the heap change it describes (the mutex orders the writers).
        self.queued.store(inner.heap.len(), Ordering::Release);
    }

    /// Whether the queue is empty, read without the lock: a task pushed just after the load is
    /// ordered after whatever the caller does next, as if it had been pushed after a locked
    /// check, so the answer is one the lock would have given at the moment of the load.
    #[inline]
    pub(crate) fn looks_empty(&self) -> bool {
        // Acquire: see `publish_len`.
        self.queued.load(Ordering::Acquire) == 0
    }

    /// Hands `task` back if it would be the next one popped (no queued task outranks it), so the
    /// caller can run it at once; otherwise completes it with `on_push` (the engine attaches the
    /// graph task a handed-back task does not need), queues it (and wakes a waiter) and returns
    /// `None`. One lock instead of a push and a pop — the engine's continuation fast path, taken
    /// after [`ReadyQueue::looks_empty`] has said no (an empty queue needs no lock at all).
    pub(crate) fn push_unless_next(&self, mut task: T, on_push: impl FnOnce(&mut T)) -> Option<T> {
        let mut inner = self.inner.lock();
        if inner.heap.peek().is_none_or(|top| *top <= task) {
            return Some(task);
        }
        on_push(&mut task);
        inner.heap.push(task);
        self.publish_len(&inner);
        let wake = inner.waiters > 0;
        drop(inner);
        if wake {
            self.available.notify_one();
        }
        None
    }

    /// Removes the highest-priority task, blocking until one is available.
    pub(crate) fn pop(&self) -> T {
        let mut inner = self.inner.lock();
        loop {
            if let Some(task) = inner.heap.pop() {
                self.publish_len(&inner);
                return task;
            }
            inner.waiters += 1;
            inner = self.available.wait(inner);
            inner.waiters -= 1;
        }
    }

    /// Drops every queued task for which `keep` is false (the end of a failed pass: see
    /// `EngineInner::execute`). An empty queue, the usual case, keeps its allocation.
    #[cfg_attr(loom, allow(dead_code, reason = "the loom models do not drop tasks"))]
    pub(crate) fn retain(&self, keep: impl FnMut(&T) -> bool) {
        let dropped: Vec<T> = {
            let mut inner = self.inner.lock();
            if inner.heap.is_empty() {
                return;
            }
            let (kept, dropped): (Vec<T>, Vec<T>) =
                std::mem::take(&mut inner.heap).into_iter().partition(keep);
            inner.heap = BinaryHeap::from(kept);
            self.publish_len(&inner);
            dropped
        };
        drop(dropped); // their gradients and graph tasks are freed outside the lock
    }

    /// Number of queued tasks.
    #[allow(dead_code, reason = "used by unit tests and loom models")]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().heap.len()
    }
}
