//! The worker loop (`thread_main`) and the thread-local state of a thread running backward work:
//! its own CPU ready queue, its reentrant depth, and the graph task currently executing.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::evaluate::evaluate_function;
use super::graph_task::GraphTask;
use super::node_task::TaskKind;
use super::ready_queue::ReadyQueue;
use super::unwind;
use crate::sync::Arc;
use crate::Error;

thread_local! {
    /// The queue for CPU work of graph tasks started on this thread (PyTorch's
    /// `local_ready_queue`). Created on first use, lives as long as the thread.
    static LOCAL_READY_QUEUE: Arc<ReadyQueue> = Arc::new(ReadyQueue::new());
    /// Number of `thread_main` loops nested on this thread (reentrant backward).
    static CURRENT_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The graph task whose node, hook or callback is executing on this thread.
    static CURRENT_GRAPH_TASK: Cell<Option<NonNull<GraphTask>>> = const { Cell::new(None) };
}

pub(crate) fn local_ready_queue() -> Arc<ReadyQueue> {
    LOCAL_READY_QUEUE.with(Arc::clone)
}

pub(crate) fn current_depth() -> usize {
    CURRENT_DEPTH.with(Cell::get)
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

/// Processes tasks from `queue` until `graph_task` completes (PyTorch's `thread_main` for the
/// owner thread). Tasks of other graph tasks found on the queue (reentrant parents or children)
/// are run too: graph tasks do not form a stack.
pub(crate) fn thread_main(graph_task: &Arc<GraphTask>, queue: &ReadyQueue) {
    CURRENT_DEPTH.with(|d| d.set(d.get() + 1));
    while !graph_task.is_completed() {
        let task = queue.pop();
        if task.kind != TaskKind::Evaluate {
            continue;
        }
        let Some(gt) = task.graph_task else {
            continue;
        };
        if !gt.has_error() {
            let node_index = task.node_index;
            let _current = CurrentGraphTask::enter(&gt);
            let _grad_mode = crate::set_grad_enabled(gt.create_graph);
            let result = unwind::catch(None, || evaluate_function(&gt, node_index, task.inputs));
            if let Err(e) = result {
                let e = match e {
                    Error::Panic { node: None, message } => Error::Panic {
                        node: Some(gt.plan.node(node_index).name().to_string()),
                        message,
                    },
                    e => e,
                };
                gt.set_error(e);
            }
        }
        if gt.finish_one() {
            gt.run_post_processing();
        }
    }
    CURRENT_DEPTH.with(|d| d.set(d.get() - 1));
}
