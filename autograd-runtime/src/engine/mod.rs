//! The backward engine (PyTorch's `torch::autograd::Engine`): turns a call to `backward()`/`grad()`
//! into a [`GraphTask`](graph_task::GraphTask), schedules its nodes through ready queues — the
//! caller's own queue for CPU nodes, one queue and thread per device index otherwise — runs
//! reentrant calls inline up to a depth limit and on a pool thread beyond it, and returns the
//! captured gradients. `README.md` in this directory explains the protocol.

mod api;
mod completion;
mod dependencies;
mod device_threads;
mod evaluate;
mod exec_info;
mod graph_task;
mod input_buffer;
mod node_task;
pub(crate) mod per_thread;
mod ready_queue;
mod reentrant;
mod thread_local_state;
mod trace;
mod unwind;
mod worker;

#[cfg(test)]
mod tests;

pub use api::{
    BackwardOptions, GradOptions, GradTarget, backward, backward_edges, current_graph_task_id,
    current_graph_task_keep_graph, grad, grad_edges, is_checkpoint_valid, queue_callback,
    will_engine_execute_node,
};

use crate::sync::statics::OnceLock;

use dependencies::compute_dependencies;
use device_threads::DeviceThreads;
use evaluate::push_task;
use exec_info::{Requested, init_to_execute};
use graph_task::{GraphTask, PassOptions, TaskQueue};
use input_buffer::InputBuffer;
use reentrant::ReentrantPool;
use thread_local_state::ThreadLocalState;

use crate::graph::{Edge, GradVec, GraphRoot, NodeRef};
use crate::sync::Arc;
use crate::{Device, Result, Tensor};

/// PyTorch's `MAX_DEPTH`: reentrant backward calls nested inline on one thread before the next one
/// moves to a pool thread.
pub const DEFAULT_MAX_RECURSION_DEPTH: usize = 60;

/// A backward engine: its device worker threads and its reentrant thread pool.
///
/// [`backward`] and [`grad`] (and `Tensor::backward`) use the process-wide default engine, whose
/// threads live as long as the process, as PyTorch's do. An engine made with [`Engine::new`] can
/// be configured and shut down; use it through [`Engine::backward`] and [`Engine::grad`]. Its
/// threads stop, and are joined, when it is dropped: when its last handle (it is `Clone`) is
/// gone and no backward pass it started is still running — or at [`Engine::shutdown`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{BackwardOptions, Device, Engine, Tensor};
/// let engine = Engine::new().max_recursion_depth(8);
/// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let y = x.to(Device::Virtual(0))?.mul_scalar(3.0)?;
/// engine.backward(&[y], &[], BackwardOptions::new())?;
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 3.0);
/// assert_eq!(engine.device_threads(), 1);
/// engine.shutdown();
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

#[derive(Debug)]
pub(crate) struct EngineInner {
    /// Inline reentrant levels per thread before the pool takes over. Relaxed: a setting read
    /// once per reentrant call; a change races only with calls that are already deciding.
    max_recursion_depth: crate::sync::atomic::AtomicUsize,
    devices: DeviceThreads,
    pool: Arc<ReentrantPool>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    /// A new engine with no threads yet (they start lazily) and the default depth limit.
    pub fn new() -> Engine {
        Engine {
            inner: Arc::new(EngineInner {
                max_recursion_depth: crate::sync::atomic::AtomicUsize::new(
                    DEFAULT_MAX_RECURSION_DEPTH,
                ),
                devices: DeviceThreads::default(),
                pool: Arc::default(),
            }),
        }
    }

    /// Sets how many reentrant calls may nest inline on one thread (default 60); deeper calls
    /// move to a pool thread. Applies to every handle of this engine.
    pub fn max_recursion_depth(self, depth: usize) -> Engine {
        self.inner
            .max_recursion_depth
            .store(depth, crate::sync::Ordering::Relaxed);
        self
    }

    /// The process-wide engine used by [`backward`], [`grad`] and `Tensor::backward`.
    pub fn get_default() -> &'static Engine {
        static DEFAULT: OnceLock<Engine> = OnceLock::new();
        DEFAULT.get_or_init(Engine::new)
    }

    /// [`backward`](crate::backward) on this engine.
    ///
    /// # Errors
    ///
    /// As [`backward`](crate::backward).
    pub fn backward(
        &self,
        tensors: &[Tensor],
        grad_tensors: &[Option<Tensor>],
        options: BackwardOptions,
    ) -> Result<()> {
        api::backward_on(&self.inner, tensors, grad_tensors, options)
    }

    /// [`grad`](crate::grad) on this engine.
    ///
    /// # Errors
    ///
    /// As [`grad`](crate::grad).
    pub fn grad(
        &self,
        outputs: &[Tensor],
        inputs: &[Tensor],
        options: GradOptions,
    ) -> Result<Vec<Option<Tensor>>> {
        api::grad_on(&self.inner, outputs, inputs, options)
    }

    /// Number of device worker threads started so far.
    pub fn device_threads(&self) -> usize {
        self.inner.devices.started()
    }

    /// Number of reentrant pool threads started so far.
    pub fn pool_threads(&self) -> usize {
        self.inner.pool.threads()
    }

    /// Stops and joins this engine's device threads and pool threads. Backward passes must not be
    /// running on it; a later pass starts threads again. Dropping the engine does the same.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }
}

impl Drop for EngineInner {
    /// The engine's last handle is gone — every [`Engine`] and every graph task that ran on it,
    /// so no pass can still need its threads: stop them (README.md §6). This may run on one of
    /// those threads (a device thread dropping the last graph task); it is then not joined and
    /// exits on its own.
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl EngineInner {
    fn shutdown(&self) {
        self.devices.shutdown();
        self.pool.shutdown();
    }

    /// The engine to use for a call made on this thread: the one running the current graph task
    /// (reentrant calls stay on their engine), else the default.
    pub(crate) fn current() -> Arc<EngineInner> {
        per_thread::with_current_graph_task(|t| t.map(|t| t.engine.clone()))
            .unwrap_or_else(|| Engine::get_default().inner.clone())
    }

    /// PyTorch's `ready_queue(cpu_ready_queue, device)`: CPU work goes to the graph task's own
    /// queue (its caller's thread), device work to that device index's shared queue (B28). A pass
    /// started with multithreading disabled never gets here: `push_task` queues all its work on
    /// its own queue.
    ///
    /// # Errors
    ///
    /// [`Error::ThreadSpawn`](crate::Error::ThreadSpawn) if a device thread cannot be started.
    pub(crate) fn ready_queue(
        &self,
        cpu_queue: &Arc<TaskQueue>,
        device: Device,
    ) -> Result<Arc<TaskQueue>> {
        match device {
            Device::Cpu => Ok(cpu_queue.clone()),
            Device::Virtual(i) | Device::Cuda(i) => self.devices.queue(i),
        }
    }

    /// Runs one backward pass (PyTorch's `Engine::execute`, B01): `roots` receive `root_grads`;
    /// `outputs` are the edges whose gradients are captured (`grad()`, `options.accumulate_grad
    /// == false`) or whose nodes must run (`backward(inputs=..)`); `None` marks an input the
    /// graph cannot reach.
    pub(crate) fn execute(
        self: &Arc<Self>,
        roots: Vec<Edge>,
        root_grads: GradVec,
        options: PassOptions,
        outputs: &[Option<Edge>],
    ) -> Result<Vec<Option<Tensor>>> {
        // Single-root skip (B08): the root's own node starts, with the gradient in its buffer.
        let (root, root_inputs) = if roots.len() == 1 {
            let edge = &roots[0];
            let mut buffer = InputBuffer::new(edge.node.meta().num_inputs());
            let grad = root_grads.into_iter().next().flatten();
            buffer.add(edge.input_nr, grad, options.create_graph)?;
            (edge.node.clone(), buffer)
        } else {
            let edges = roots.into_iter().map(Some).collect();
            (
                NodeRef::new(Arc::new(GraphRoot::new(edges, root_grads))),
                InputBuffer::default(),
            )
        };

        let min_topo_nr = if outputs.is_empty() {
            0
        } else {
            outputs
                .iter()
                .flatten()
                .map(|e| e.node.meta().topological_nr())
                .min()
                .unwrap_or(u64::MAX)
        };
        let lookups: Vec<&NodeRef> = outputs.iter().flatten().map(|e| &e.node).collect();
        let (plan, found) = compute_dependencies(&root, min_topo_nr, &lookups);
        let exec_info = if outputs.is_empty() {
            Vec::new()
        } else {
            let mut found = found.into_iter();
            let requested: Vec<Requested> = outputs
                .iter()
                .enumerate()
                .filter_map(|(k, e)| {
                    let e = e.as_ref()?;
                    Some(Requested {
                        node: found.next().flatten()?,
                        input_nr: e.input_nr,
                        output_idx: k,
                    })
                })
                .collect();
            init_to_execute(&plan, &requested, options.accumulate_grad)
        };

        let reentrant = per_thread::in_worker();
        let depth = if reentrant {
            per_thread::total_depth() + 1
        } else {
            0
        };
        let queue = per_thread::local_ready_queue();
        // A reentrant pass inherits the profiler sessions of the pass whose node starts it (the
        // rest of that pass's state is installed on this thread while its node runs).
        // And it may run a reentrant checkpoint only if the pass it is nested in may
        // (`api::is_checkpoint_valid`).
        let (thread_locals, parent_checkpoint_valid) =
            per_thread::with_current_graph_task(|parent| {
                let parent_profiler = parent.and_then(|p| p.thread_locals.profiler.as_ref());
                (
                    ThreadLocalState::capture(options.create_graph, parent_profiler),
                    parent.is_none_or(|p| p.checkpoint_valid),
                )
            });
        let sequence_nr = root.meta().sequence_nr();
        let root_device = root.meta().device();
        let gt = Arc::new(GraphTask::new(
            self.clone(),
            options,
            depth,
            plan,
            exec_info,
            outputs.len(),
            queue.clone(),
            thread_locals,
            parent_checkpoint_valid,
        ));
        let _span = gt.span.enter();
        push_task(&gt, 0, sequence_nr, root_device, root_inputs)?;

        if !reentrant {
            // The caller becomes the owner and works on its own queue until the task is done.
            worker::thread_main(&queue, Some(&gt));
            // A failed task completes as soon as its error is set, so tasks of it that were ready
            // then are still queued here, each holding the graph task (the whole graph, through
            // its plan) and its gradients; and a wake-up pushed after the owner saw the task
            // complete is never popped. Every graph task using this queue is done now (nested
            // ones finished before their callers), so drop both kinds rather than keep them
            // until this thread's next pass — or forever, once it exits: the graph task holds
            // this queue, which would hold the graph task.
            queue.retain(|t| match (&t.graph_task, t.kind) {
                (_, node_task::TaskKind::WakeUp) => false,
                (Some(task), _) => !task.has_error(),
                (None, _) => true,
            });
        } else if per_thread::current_depth()
            >= self
                .max_recursion_depth
                .load(crate::sync::Ordering::Relaxed)
        {
            // B27: too deep for this thread's stack; a pool thread drains this queue instead.
            match self.pool.submit(gt.clone()) {
                Ok(()) => gt.wait_completed(),
                // The root task is already queued: failing the task makes every thread skip it.
                Err(e) => gt.set_error(e, &queue),
            }
        } else {
            per_thread::nested(|| worker::thread_main(&queue, Some(&gt)));
        }
        gt.take_result()
    }
}
