//! `GraphTask`: the state of one `backward()`/`grad()` call — dependency counts, buffers of nodes
//! that are not ready yet, captured gradients, the first error, final callbacks, and completion.

use crate::sync::Ordering;

use super::completion::Completion;
use super::dependencies::GraphPlan;
use super::exec_info::ExecInfo;
use super::input_buffer::InputBuffer;
use super::node_task::{NodeTask, TaskKind};
use super::ready_queue::ReadyQueue;
use super::thread_local_state::ThreadLocalState;
use super::trace::PassSpan;
use super::unwind;
use crate::sync::atomic::{AtomicBool, AtomicUsize};
use crate::sync::{Arc, Mutex};
use crate::{Error, Result, Tensor};

/// The queue the tasks of graph tasks wait in: each thread's local queue (a graph task's
/// `cpu_ready_queue`) and each device's queue.
pub(crate) type TaskQueue = ReadyQueue<NodeTask<GraphTask>>;

/// How one pass runs: the three flags of PyTorch's `Engine::execute`, resolved from the caller's
/// [`BackwardOptions`](crate::BackwardOptions) or [`GradOptions`](crate::GradOptions).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PassOptions {
    /// Keep saved tensors after nodes run (`retain_graph`, which defaults to `create_graph`).
    pub(crate) keep_graph: bool,
    /// Record the backward pass itself (`create_graph`): gradients are summed out of place, and
    /// nodes run with grad mode on (through `GraphTask::thread_locals`).
    pub(crate) create_graph: bool,
    /// Accumulate into the leaves' `.grad` (`backward()`), or capture the requested gradients
    /// and return them (`grad()`).
    pub(crate) accumulate_grad: bool,
}

/// A final callback queued with [`queue_callback`](crate::queue_callback).
pub(crate) type Callback = Box<dyn FnOnce() -> Result<()> + Send>;

/// Mutable state of a graph task, guarded by one mutex (PyTorch's `GraphTask::mutex_`).
pub(crate) struct TaskState {
    /// Remaining incoming edges per node; a node is ready at 0. A node with one incoming edge
    /// is never counted down: its one gradient makes it ready without the lock (see
    /// `evaluate_function`).
    pub(crate) dependencies: Vec<u32>,
    /// Gradient sums of nodes that received some but not all of their inputs (`None`: nothing
    /// received, or the node was queued; an empty slot drops without a call, so a pass over a
    /// large graph frees its slots in one cheap loop).
    pub(crate) not_ready: Vec<Option<InputBuffer>>,
    /// `grad()` results, by output index.
    pub(crate) captured: Vec<Option<Tensor>>,
    /// The first error raised by any node, hook or callback.
    pub(crate) error: Option<Error>,
    /// Callbacks to run after the last node, FIFO.
    pub(crate) final_callbacks: std::collections::VecDeque<Callback>,
}

/// One backward pass.
pub(crate) struct GraphTask {
    /// The engine running this task (device queues, reentrant pool).
    pub(crate) engine: Arc<super::EngineInner>,
    /// Unique per process, increasing (`torch._C._current_graph_task_id`, B30).
    pub(crate) id: u64,
    /// How the pass runs (`retain_graph`, `create_graph`, accumulate or capture).
    pub(crate) options: PassOptions,
    /// Nesting level: 0 for a top-level call, parent + 1 for a reentrant one.
    pub(crate) reentrant_depth: usize,
    /// The calling thread's state, installed around each node on whichever thread runs it
    /// (PyTorch's `thread_locals_`). Fixed at creation, before any node of the task is queued.
    pub(crate) thread_locals: ThreadLocalState,
    /// The reachable graph with dense indices. Immutable once the pass starts.
    pub(crate) plan: GraphPlan,
    /// Empty: run every reachable node. Otherwise only nodes that `should_execute`.
    pub(crate) exec_info: Vec<ExecInfo>,
    /// The calling thread's queue: CPU nodes of this task are pushed here.
    pub(crate) cpu_ready_queue: Arc<TaskQueue>,
    /// Whether a reentrant checkpoint may run inside this pass (PyTorch's `checkpoint_valid`):
    /// this pass runs every reachable node (no `exec_info`), and so does every pass it is nested
    /// in. Fixed at creation.
    pub(crate) checkpoint_valid: bool,
    pub(crate) state: Mutex<TaskState>,
    /// Tasks pushed but not yet finished. Incremented before each push, decremented by the worker
    /// after the task ran; reaching 0 completes the graph task.
    outstanding_tasks: AtomicUsize,
    /// Set (once) by the first error; remaining tasks are skipped.
    has_error: AtomicBool,
    /// Set once the task is finished (successfully or not); the owner's loop exits on it.
    completion: Completion,
    /// The pass's `tracing` span (nothing without the `tracing` feature).
    pub(crate) span: PassSpan,
}

impl GraphTask {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        engine: Arc<super::EngineInner>,
        options: PassOptions,
        reentrant_depth: usize,
        plan: GraphPlan,
        exec_info: Vec<ExecInfo>,
        num_captures: usize,
        cpu_ready_queue: Arc<TaskQueue>,
        thread_locals: ThreadLocalState,
        parent_checkpoint_valid: bool,
    ) -> GraphTask {
        let n = plan.len();
        // The plan keeps the counts as the walk made them: a node with one incoming edge is
        // handed its gradient without the lock (see `evaluate_function`).
        let dependencies = plan.dependency_counts();
        let mut not_ready = Vec::with_capacity(n);
        not_ready.resize_with(n, || None);
        static NEXT_ID: crate::sync::statics::AtomicU64 = crate::sync::statics::AtomicU64::new(0);
        // Relaxed: only uniqueness and monotonicity per thread matter.
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        GraphTask {
            id,
            thread_locals,
            span: PassSpan::new(id, reentrant_depth),
            engine,
            options,
            reentrant_depth,
            plan,
            checkpoint_valid: parent_checkpoint_valid && exec_info.is_empty(),
            exec_info,
            cpu_ready_queue,
            state: Mutex::new(TaskState {
                dependencies,
                not_ready,
                captured: vec![None; num_captures],
                error: None,
                final_callbacks: Default::default(),
            }),
            outstanding_tasks: AtomicUsize::new(0),
            has_error: AtomicBool::new(false),
            completion: Completion::new(),
        }
    }

    /// Counts a task about to be pushed.
    #[inline]
    pub(crate) fn add_outstanding(&self) {
        // Relaxed: the count only needs to be exact; the decrement that reaches 0 is AcqRel and
        // every increment happens-before the matching decrement (it precedes the push, and the
        // queue's mutex orders the push before the pop).
        self.outstanding_tasks.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks one task finished; returns `true` if it was the last one.
    #[inline]
    pub(crate) fn finish_one(&self) -> bool {
        // AcqRel: the thread that sees the count reach 0 must observe every other task's writes
        // (captured grads, leaf .grad) before running post-processing; pairs with the same
        // `fetch_sub` on other workers.
        self.outstanding_tasks.fetch_sub(1, Ordering::AcqRel) == 1
    }

    #[inline]
    pub(crate) fn has_error(&self) -> bool {
        // Relaxed: a hint to skip work; the error itself is read under `state`'s mutex.
        self.has_error.load(Ordering::Relaxed)
    }

    /// Records `err` if it is the first, and completes the task so the owner returns it (B24).
    /// `serving` is the queue the calling thread drains (its local queue).
    pub(crate) fn set_error(&self, err: Error, serving: &TaskQueue) {
        self.set_error_reporting(err, serving, || {});
    }

    /// [`GraphTask::set_error`] that calls `report` if `err` is the first error, before the task
    /// completes (so the owner returns after the report: anomaly mode's warnings).
    pub(crate) fn set_error_reporting(
        &self,
        err: Error,
        serving: &TaskQueue,
        report: impl FnOnce(),
    ) {
        let first = {
            let mut state = self.state.lock();
            let first = state.error.is_none();
            if first {
                state.error = Some(err);
            }
            first
        };
        if first {
            report();
        }
        self.has_error.store(true, Ordering::Relaxed);
        self.mark_completed(serving);
    }

    pub(crate) fn is_completed(&self) -> bool {
        self.completion.is_completed()
    }

    /// Completes the task (once) and — when this thread, which drains `serving`, does not serve
    /// the owner's queue — pushes a wake-up task there so an owner blocked in `ReadyQueue::pop`
    /// re-checks completion (README.md §3).
    fn mark_completed(&self, serving: &TaskQueue) {
        if !self.completion.complete() {
            return;
        }
        let on_owner_queue = std::ptr::eq(serving, &*self.cpu_ready_queue);
        if !on_owner_queue {
            self.cpu_ready_queue
                .push(NodeTask::control(TaskKind::WakeUp));
        }
    }

    /// Blocks until the task completes (a caller whose task went to the reentrant pool).
    pub(crate) fn wait_completed(&self) {
        self.completion.wait();
    }

    /// Runs after the last task: checks every node ran, then final callbacks in FIFO order
    /// (a callback may queue more), then completes (B25). The caller, which drains `serving`, has
    /// made this the current graph task (`per_thread::CurrentGraphTask`), as callbacks expect.
    pub(crate) fn run_post_processing(&self, serving: &TaskQueue) {
        if !self.has_error() {
            let incomplete = self.exec_info.is_empty()
                && self.state.lock().not_ready.iter().any(Option::is_some);
            if incomplete {
                self.set_error(Error::IncompleteGraph, serving);
                return;
            }
            // Callbacks run with the pass's state too (PyTorch's `exec_post_processing`).
            let state = self.thread_locals.enter();
            loop {
                let next = self.state.lock().final_callbacks.pop_front();
                let Some(cb) = next else { break };
                state.reinstate();
                let result = unwind::catch(None, cb);
                if let Err(e) = result {
                    self.set_error(e, serving);
                    return;
                }
            }
        }
        self.mark_completed(serving);
    }

    /// Whether `node` runs in this pass (`torch._C._will_engine_execute_node`): reachable, and
    /// selected by `exec_info` when the pass is selective; a leaf's `AccumulateGrad` whose
    /// gradient `grad()` captures is refused, as in PyTorch. O(nodes).
    pub(crate) fn will_execute(&self, node: &crate::NodeRef) -> Result<bool> {
        let Some(i) = self.plan.position(node) else {
            return Ok(false);
        };
        let Some(info) = self.exec_info.get(i as usize) else {
            return Ok(true);
        };
        if !info.should_execute() {
            return Ok(false);
        }
        if node.meta().topological_nr() == 0 && !info.captures.is_empty() {
            return Err(crate::Error::msg(
                "A leaf node was passed to _will_engine_execute_node but we are currently running autograd.grad(). This is currently not supported.",
            ));
        }
        Ok(true)
    }

    /// Takes the outcome: the captured gradients, or the first error.
    pub(crate) fn take_result(&self) -> Result<Vec<Option<Tensor>>> {
        let mut state = self.state.lock();
        if let Some(e) = state.error.take() {
            return Err(e);
        }
        Ok(std::mem::take(&mut state.captured))
    }
}
