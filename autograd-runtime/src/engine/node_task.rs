//! `NodeTask`: one unit of work in a ready queue (run node `node_index` of a graph task with these
//! input gradients), and its priority order (B04).
//!
//! A task holds its graph task, and a graph task holds the queue its tasks wait in: the type of
//! the graph task is a parameter here (the engine's is always `GraphTask`, `graph_task.rs`), so
//! that this file, like `ready_queue.rs`, needs nothing of the files that use it.

use std::cmp::Ordering;

use super::input_buffer::InputBuffer;
use crate::sync::Arc;

/// What a task asks the worker to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TaskKind {
    /// Run a node. Lowest priority class.
    Evaluate,
    /// Wake the owner of a graph task that another thread completed (PyTorch's empty task).
    WakeUp,
    /// Stop the worker thread. Highest priority.
    Shutdown,
}

/// A node that is ready to run, with the gradients it receives; `G` is the graph task type.
pub(crate) struct NodeTask<G> {
    /// The graph task this node belongs to (`None` for wake-up and shutdown tasks). Tasks of a
    /// graph task that already failed are popped and skipped (PyTorch's expired-`weak_ptr` check);
    /// holding it strongly costs one reference count per task instead of a downgrade plus an
    /// upgrade.
    pub(crate) graph_task: Option<Arc<G>>,
    /// Index of the node in its graph task's dense node table.
    pub(crate) node_index: u32,
    /// The node's sequence number, cached for ordering.
    pub(crate) sequence_nr: u64,
    /// The graph task's reentrant depth, cached for ordering.
    pub(crate) reentrant_depth: usize,
    pub(crate) kind: TaskKind,
    pub(crate) inputs: InputBuffer,
}

impl<G> NodeTask<G> {
    /// A wake-up or shutdown task.
    pub(crate) fn control(kind: TaskKind) -> NodeTask<G> {
        debug_assert!(kind != TaskKind::Evaluate, "control tasks carry no node");
        NodeTask {
            graph_task: None,
            node_index: 0,
            sequence_nr: 0,
            reentrant_depth: 0,
            kind,
            inputs: InputBuffer::default(),
        }
    }
}

/// Priority, as PyTorch's `CompareNodeTaskTime` (greater runs first): shutdown tasks, then
/// wake-up tasks, then the task of the deeper reentrant graph task, then the node with the larger
/// sequence number (created later in the forward pass; AccumulateGrad has `u64::MAX`).
impl<G> Ord for NodeTask<G> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.kind
            .cmp(&other.kind)
            .then(self.reentrant_depth.cmp(&other.reentrant_depth))
            .then(self.sequence_nr.cmp(&other.sequence_nr))
    }
}

impl<G> PartialOrd for NodeTask<G> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<G> PartialEq for NodeTask<G> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<G> Eq for NodeTask<G> {}

impl<G> std::fmt::Debug for NodeTask<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeTask")
            .field("kind", &self.kind)
            .field("node_index", &self.node_index)
            .field("sequence_nr", &self.sequence_nr)
            .field("reentrant_depth", &self.reentrant_depth)
            .finish()
    }
}
