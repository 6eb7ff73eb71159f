//! The engine's per-thread state (PyTorch's `thread_local` variables of `engine.cpp`:
//! `local_ready_queue`, `current_depth`, `total_depth`, `current_graph_task`), all of it: every
//! `thread_local!` of the engine is here, and nothing else of the engine keeps any.
//!
//! Not to be confused with `thread_local_state.rs`: that is the *caller's* state (grad mode,
//! saved-tensor hooks, profiler) which a graph task carries to the threads that run its nodes.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::graph_task::{GraphTask, TaskQueue};
use crate::sync::Arc;

thread_local! {
    /// The queue CPU work of graph tasks started on this thread goes to (PyTorch's
    /// `local_ready_queue`): a fresh queue for ordinary threads, the device queue for device
    /// workers, the caller's queue for pool threads.
    static LOCAL_READY_QUEUE: RefCell<Option<Arc<TaskQueue>>> = const { RefCell::new(None) };
    /// Whether this thread is inside `thread_main` (so `backward()` here is reentrant).
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
    /// Reentrant calls nested inline on this thread; compared with `max_recursion_depth`.
    static CURRENT_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Reentrant depth of the innermost graph task this thread works for (across threads: a pool
    /// thread inherits it from the task it takes over).
    static TOTAL_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The graph task whose node, hook or callback is executing on this thread.
    static CURRENT_GRAPH_TASK: Cell<Option<NonNull<GraphTask>>> = const { Cell::new(None) };
    /// In a selective pass (`grad()`, `backward(inputs=..)`), the outputs the node running on
    /// this thread must compute (bit `i`: output `i`), and the graph task it runs for: nodes of
    /// a reentrant pass nested in it are not bound by it (see [`should_compute_output`]).
    static OUTPUT_MASK: Cell<Option<(NonNull<GraphTask>, u64)>> = const { Cell::new(None) };
}

pub(crate) fn local_ready_queue() -> Arc<TaskQueue> {
    LOCAL_READY_QUEUE.with(|q| {
        q.borrow_mut()
            .get_or_insert_with(|| Arc::new(TaskQueue::new()))
            .clone()
    })
}

/// Makes `queue` this thread's local queue (device workers and pool threads).
pub(crate) fn set_local_ready_queue(queue: Arc<TaskQueue>) {
    LOCAL_READY_QUEUE.with(|q| *q.borrow_mut() = Some(queue));
}

pub(crate) fn in_worker() -> bool {
    IN_WORKER.with(Cell::get)
}

/// Marks this thread as inside `thread_main`; returns what it was before, for [`leave_worker`].
pub(crate) fn enter_worker() -> bool {
    IN_WORKER.with(|w| w.replace(true))
}

/// Undoes [`enter_worker`], given what it returned.
pub(crate) fn leave_worker(was_worker: bool) {
    IN_WORKER.with(|w| w.set(was_worker));
}

pub(crate) fn current_depth() -> usize {
    CURRENT_DEPTH.with(Cell::get)
}

pub(crate) fn total_depth() -> usize {
    TOTAL_DEPTH.with(Cell::get)
}

/// Runs `f` as one more inline reentrant level (`++current_depth; ++total_depth`).
pub(crate) fn nested<R>(f: impl FnOnce() -> R) -> R {
    CURRENT_DEPTH.with(|d| d.set(d.get() + 1));
    TOTAL_DEPTH.with(|d| d.set(d.get() + 1));
    let r = f();
    CURRENT_DEPTH.with(|d| d.set(d.get() - 1));
    TOTAL_DEPTH.with(|d| d.set(d.get() - 1));
    r
}

/// Initialises a pool thread for `task`: its queue, and depths as PyTorch's
/// `reentrant_thread_init` / `thread_pool` set them.
pub(crate) fn init_pool_thread(task: &GraphTask) {
    set_local_ready_queue(task.cpu_ready_queue.clone());
    CURRENT_DEPTH.with(|d| d.set(0));
    TOTAL_DEPTH.with(|d| d.set(task.reentrant_depth));
}

/// Marks `task` as the current graph task until dropped (PyTorch's `GraphTaskGuard`). Borrows
/// the task, so it stays alive while it is published in the thread-local.
pub(crate) struct CurrentGraphTask<'a> {
    previous: Option<NonNull<GraphTask>>,
    _task: PhantomData<&'a GraphTask>,
}

impl<'a> CurrentGraphTask<'a> {
    pub(crate) fn enter(task: &'a GraphTask) -> CurrentGraphTask<'a> {
        let ptr = NonNull::from(task);
        let previous = CURRENT_GRAPH_TASK.with(|c| c.replace(Some(ptr)));
        CurrentGraphTask {
            previous,
            _task: PhantomData,
        }
    }
}

impl Drop for CurrentGraphTask<'_> {
    fn drop(&mut self) {
        CURRENT_GRAPH_TASK.with(|c| c.set(self.previous));
    }
}

/// Runs `f` with the graph task currently executing on this thread, if any.
pub(crate) fn with_current_graph_task<R>(f: impl FnOnce(Option<&GraphTask>) -> R) -> R {
    let ptr = CURRENT_GRAPH_TASK.with(Cell::get);
    // SAFETY: the pointer is only ever set by `CurrentGraphTask::enter`, whose guard borrows the
    // task for its whole life and restores the previous value on drop; guards nest strictly on
    // one thread, so a published pointer always refers to a live `GraphTask`.
    let task = ptr.map(|p| unsafe { p.as_ref() });
    f(task)
}

/// Publishes the outputs the node about to run for `task` must compute until dropped
/// (restored on unwinding too, so a panicking node leaves no mask behind).
pub(crate) struct OutputMask {
    previous: Option<(NonNull<GraphTask>, u64)>,
}

impl OutputMask {
    pub(crate) fn set(task: &GraphTask, mask: u64) -> OutputMask {
        let previous = OUTPUT_MASK.with(|m| m.replace(Some((NonNull::from(task), mask))));
        OutputMask { previous }
    }

    /// No mask until dropped: a node run outside the pass's scheduling (forward-mode AD runs an
    /// op's backward to compute its tangents, `forward_ad/`) computes every output it is asked
    /// for, whatever pass is running on this thread.
    pub(crate) fn clear() -> OutputMask {
        let previous = OUTPUT_MASK.with(|m| m.replace(None));
        OutputMask { previous }
    }
}

impl Drop for OutputMask {
    fn drop(&mut self) {
        OUTPUT_MASK.with(|m| m.set(self.previous));
    }
}

/// Whether the node running on this thread must compute its output `i` (PyTorch's
/// `task_should_compute_output`): false only in a selective pass whose `exec_info` does not
/// run the node output `i` leads to. The pointers are compared, never dereferenced.
pub(crate) fn should_compute_output(i: usize) -> bool {
    let Some((task, mask)) = OUTPUT_MASK.with(Cell::get) else {
        return true;
    };
    if i >= 64 || CURRENT_GRAPH_TASK.with(Cell::get) != Some(task) {
        return true;
    }
    mask & (1 << i) != 0
}
