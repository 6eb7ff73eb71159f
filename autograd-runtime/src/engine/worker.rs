//! The worker loop (`thread_main`) and the thread-local state of a thread doing backward work
//! (PyTorch's `worker_device`, `local_ready_queue`, `current_depth`, `total_depth`).
//!
//! Three kinds of threads run `thread_main`:
//! * the *owner*: the thread that called `backward()`/`grad()`; it runs CPU nodes of its graph
//!   task from its own local queue until the task completes;
//! * *device workers*: one per device index, forever, on that device's queue
//!   (`device_threads.rs`);
//! * *reentrant pool threads*: they take over a reentrant graph task whose caller reached the
//!   depth limit, on the caller's queue (`reentrant.rs`).

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::evaluate::evaluate_function;
use super::graph_task::GraphTask;
use super::input_buffer::InputBuffer;
use super::node_task::TaskKind;
use super::ready_queue::ReadyQueue;
use super::unwind;
use crate::sync::Arc;
use crate::Error;

thread_local! {
    /// The queue CPU work of graph tasks started on this thread goes to (PyTorch's
    /// `local_ready_queue`): a fresh queue for ordinary threads, the device queue for device
    /// workers, the caller's queue for pool threads.
    static LOCAL_READY_QUEUE: RefCell<Option<Arc<ReadyQueue>>> = const { RefCell::new(None) };
    /// Whether this thread is inside `thread_main` (so `backward()` here is reentrant).
    static IN_WORKER: Cell<bool> = const { Cell::new(false) };
    /// Reentrant calls nested inline on this thread; compared with `max_recursion_depth`.
    static CURRENT_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Reentrant depth of the innermost graph task this thread works for (across threads: a pool
    /// thread inherits it from the task it takes over).
    static TOTAL_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The graph task whose node, hook or callback is executing on this thread.
    static CURRENT_GRAPH_TASK: Cell<Option<NonNull<GraphTask>>> = const { Cell::new(None) };
}

pub(crate) fn local_ready_queue() -> Arc<ReadyQueue> {
    LOCAL_READY_QUEUE.with(|q| {
        q.borrow_mut()
            .get_or_insert_with(|| Arc::new(ReadyQueue::new()))
            .clone()
    })
}

/// Makes `queue` this thread's local queue (device workers and pool threads).
pub(crate) fn set_local_ready_queue(queue: Arc<ReadyQueue>) {
    LOCAL_READY_QUEUE.with(|q| *q.borrow_mut() = Some(queue));
}

pub(crate) fn in_worker() -> bool {
    IN_WORKER.with(Cell::get)
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

/// Processes tasks from `queue` (PyTorch's `thread_main`): until `until` completes for an owner or
/// pool thread, or until a shutdown task for a device worker (`until == None`). Tasks of any
/// graph task found on the queue are run: graph tasks do not form a stack.
///
/// Protocol (see `README.md`, "Completion and wake-up"): the thread whose `finish_one` brings a
/// graph task's outstanding count to 0 runs its post-processing and completes it; completing
/// pushes a wake-up task onto the owner's queue when the completing thread is not serving that
/// queue, so an owner blocked in `pop` re-checks `is_completed`.
pub(crate) fn thread_main(queue: &ReadyQueue, until: Option<&Arc<GraphTask>>) {
    let was_worker = IN_WORKER.with(|w| w.replace(true));
    loop {
        if until.is_some_and(|gt| gt.is_completed()) {
            break;
        }
        let task = queue.pop();
        match task.kind {
            TaskKind::Shutdown => break,
            TaskKind::WakeUp => continue,
            TaskKind::Evaluate => {}
        }
        let Some(gt) = task.graph_task else {
            continue;
        };
        run_task(&gt, task.node_index, task.inputs, queue, until);
    }
    IN_WORKER.with(|w| w.set(was_worker));
}

/// Runs node `node_index` of `gt`, then each continuation it hands back (README.md §2), and
/// releases the one `outstanding_tasks` count they share. The graph task is entered once for the
/// whole run, and no continuation takes a reference to it.
fn run_task(
    gt: &Arc<GraphTask>,
    mut node_index: u32,
    mut inputs: InputBuffer,
    queue: &ReadyQueue,
    until: Option<&Arc<GraphTask>>,
) {
    {
        let _current = CurrentGraphTask::enter(gt);
        // The caller's thread-local state, for every node of the run (`thread_local_state.rs`).
        let state = gt.thread_locals.enter();
        while !gt.has_error() {
            state.reinstate();
            let result = unwind::catch(None, || evaluate_function(gt, node_index, inputs, queue));
            let next = match result {
                Ok(Some(next)) => next,
                Ok(None) => break,
                Err(e) => {
                    report_node_error(gt, node_index, e);
                    break;
                }
            };
            if until.is_some_and(|u| u.is_completed()) {
                // The owner's task completed while a continuation of another graph task was
                // in hand (graph tasks do not form a stack): queue it for whoever drains this
                // queue next; it keeps the count.
                queue.push(next.into_task(Some(gt.clone()), gt.reentrant_depth));
                return;
            }
            node_index = next.node_index;
            inputs = next.inputs;
        }
    }
    if gt.finish_one() {
        gt.run_post_processing();
    }
}

fn report_node_error(gt: &GraphTask, node_index: u32, e: Error) {
    let node = gt.plan.node(node_index);
    if crate::is_anomaly_enabled() {
        let trace = node
            .meta()
            .forward_trace()
            .map(ToString::to_string)
            .unwrap_or_default();
        crate::warning::warn(&format!(
            "Error detected in {}. Traceback of forward call that caused the error:\n{trace}",
            node.name()
        ));
    }
    let e = match e {
        Error::Panic {
            node: None,
            message,
        } => Error::Panic {
            node: Some(node.name().to_string()),
            message,
        },
        e => e,
    };
    gt.set_error(e);
}
