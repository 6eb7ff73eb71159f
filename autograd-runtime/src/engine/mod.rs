//! The backward engine (PyTorch's `torch::autograd::Engine`): turns a call to `backward()`/`grad()`
//! into a [`GraphTask`](graph_task::GraphTask), schedules its nodes through ready queues and
//! returns the captured gradients. See `README.md` in this directory for the protocol.

mod dependencies;
mod evaluate;
mod exec_info;
mod front_door;
mod graph_task;
mod input_buffer;
mod node_task;
mod ready_queue;
mod unwind;
mod worker;

pub use front_door::{
    backward, current_graph_task_id, grad, queue_callback, will_engine_execute_node, BackwardOptions, GradOptions,
};

use dependencies::compute_dependencies;
use evaluate::push_task;
use exec_info::{init_to_execute, Requested};
use graph_task::GraphTask;
use input_buffer::InputBuffer;

use crate::graph::{Edge, GradVec, GraphRoot, NodeRef};
use crate::sync::Arc;
use crate::{Result, Tensor};

/// Runs one backward pass (PyTorch's `Engine::execute`, B01): `roots` receive `root_grads`;
/// `outputs` are the edges whose gradients are captured (`grad()`, `accumulate_grad == false`) or
/// whose nodes must run (`backward(inputs=..)`); `None` marks an input the graph cannot reach.
pub(crate) fn execute(
    roots: Vec<Edge>,
    root_grads: GradVec,
    keep_graph: bool,
    create_graph: bool,
    accumulate_grad: bool,
    outputs: &[Option<Edge>],
) -> Result<Vec<Option<Tensor>>> {
    // Single-root skip (B08): the root's own node starts, with the gradient in its buffer.
    let (root, root_inputs) = if roots.len() == 1 {
        let edge = &roots[0];
        let mut buffer = InputBuffer::new(edge.node.meta().num_inputs());
        let grad = root_grads.into_iter().next().flatten();
        buffer.add(edge.input_nr, grad, create_graph)?;
        (edge.node.clone(), buffer)
    } else {
        let edges = roots.into_iter().map(Some).collect();
        (NodeRef::new(Arc::new(GraphRoot::new(edges, root_grads))), InputBuffer::default())
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
        init_to_execute(&plan, &requested, accumulate_grad)
    };

    let queue = worker::local_ready_queue();
    let depth = worker::current_depth();
    let sequence_nr = root.meta().sequence_nr();
    let gt = Arc::new(GraphTask::new(
        keep_graph,
        create_graph,
        depth,
        plan,
        exec_info,
        outputs.len(),
        queue.clone(),
    ));
    push_task(&gt, 0, sequence_nr, root_inputs);
    worker::thread_main(&gt, &queue);
    gt.take_result()
}
