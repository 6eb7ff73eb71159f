//! Running one node (PyTorch's `evaluate_function` / `call_function` / `validate_outputs`):
//! hooks in B19's order, the node itself, gradient validation, release of saved tensors, the
//! anomaly NaN check, and handing each output gradient to the next node's input buffer (B06).

use super::dependencies::NO_TARGET;
use super::graph_task::{GraphTask, TaskQueue, TaskState};
use super::input_buffer::InputBuffer;
use super::node_task::{NodeTask, TaskKind};
use super::per_thread;
use crate::graph::{Edge, GradVec, Node, NodeMeta};
use crate::layout::{is_expandable_to, same_dims};
use crate::sync::{Arc, MutexGuard};
use crate::{Device, Error, Result, Tensor};

/// A child of the node just run that the same thread runs next, for the same graph task (see
/// [`evaluate_function`]). It carries no reference to the graph task: the caller already holds
/// one, so a chain costs no reference count per node.
pub(crate) struct Continuation {
    pub(crate) node_index: u32,
    pub(crate) sequence_nr: u64,
    pub(crate) inputs: InputBuffer,
}

impl Continuation {
    /// The ready-queue task for this child: `graph_task` is `None` while the task is only
    /// compared with the queue's top, `Some` once it must be queued after all.
    pub(crate) fn into_task(
        self,
        graph_task: Option<Arc<GraphTask>>,
        reentrant_depth: usize,
    ) -> NodeTask<GraphTask> {
        NodeTask {
            graph_task,
            node_index: self.node_index,
            sequence_nr: self.sequence_nr,
            reentrant_depth,
            kind: TaskKind::Evaluate,
            inputs: self.inputs,
        }
    }
}

impl From<NodeTask<GraphTask>> for Continuation {
    fn from(task: NodeTask<GraphTask>) -> Continuation {
        Continuation {
            node_index: task.node_index,
            sequence_nr: task.sequence_nr,
            inputs: task.inputs,
        }
    }
}

/// Runs node `index` of `gt` and hands its gradients on. Returns the *continuation*: a child that
/// became ready, belongs on `serving` (the queue this thread drains) and would be the next task
/// popped from it anyway. The caller runs it directly; the finished task's `outstanding_tasks`
/// count is transferred to it instead of being released and taken again (README.md §2).
///
/// Always inlined into its one caller (the closure `run_task` hands to `unwind::catch`): LLVM's
/// own choice flipped with unrelated changes to `run_task`, and a call here costs about 30
/// instructions per node on the engine's callgrind workload.
#[inline(always)]
pub(crate) fn evaluate_function(
    gt: &Arc<GraphTask>,
    index: u32,
    inputs: InputBuffer,
    serving: &TaskQueue,
) -> Result<Option<Continuation>> {
    let node = gt.plan.node(index);
    // Read by the walk: every `meta()` is a virtual call.
    let meta = gt.plan.meta(index);
    let mut grads = inputs.into_grads();
    if !gt.exec_info.is_empty() {
        let info = &gt.exec_info[index as usize];
        if !info.needed {
            // Tensor hooks fire whenever the engine reaches the node, even if it does not run (B18).
            call_tensor_pre_hooks(node, meta, &mut grads)?;
        }
        if !info.captures.is_empty() {
            let mut state = gt.state.lock();
            for c in &info.captures {
                state.captured[c.output_idx] = grads.get(c.input_nr).cloned().flatten();
            }
        }
        if !info.needed {
            return Ok(None);
        }
    }

    let _span = super::trace::node_span(&gt.span, node);
    let outputs = call_function(gt, index, node, meta, grads)?;
    if !gt.options.keep_graph {
        node.release_saved();
    }
    if outputs.is_empty() {
        return Ok(None);
    }
    if crate::anomaly::checks_nan() {
        for (i, g) in outputs.iter().enumerate() {
            if let Some(g) = g {
                if !g.has_nan()? {
                    continue;
                }
                return Err(Error::NanInGradient {
                    node: node.name().to_string(),
                    index: i,
                });
            }
        }
    }

    let edges = meta.next_edges();
    // Only CPU children on the queue this thread serves can continue here.
    let serves_cpu_queue = std::ptr::eq(&*gt.cpu_ready_queue, serving);
    let mut continuation: Option<Continuation> = None;
    let mut outputs = outputs;
    // Taken at the first child that has more than one incoming edge, then held to the end of
    // the loop (a chain's nodes never take it).
    let mut state: Option<MutexGuard<'_, TaskState>> = None;
    // Each gradient is moved out of `outputs` (not consumed through `into_iter`): once the loop
    // is done, an inline `outputs` holds nothing to free, and is forgotten below instead of
    // going through `SmallVec`'s out-of-line `Drop`.
    // Through one slice: each `outputs[i]` would check again where the vector's items live.
    for (i, out) in outputs.iter_mut().enumerate() {
        let grad = std::mem::take(out);
        let target = gt.plan.target(index, i);
        if target == NO_TARGET {
            continue;
        }
        let t = target as usize;
        let (next, dependencies) = gt.plan.child(target);
        let inputs = if dependencies == 1 {
            // This is the only edge into the child (counted by the walk), so this is the only
            // gradient it will get in this pass, and it is ready now: nothing else ever reads or
            // writes its count or its slot in `state`, so they are left alone, unlocked (its
            // slot stays empty, as a ready node's does). Its buffer is built with the gradient
            // in it (on a chain, every node).
            if !gt.exec_info.is_empty() && !gt.exec_info[t].should_execute() {
                continue;
            }
            let input_nr = edge_input_nr(edges, i);
            InputBuffer::with_first(next.num_inputs(), input_nr, grad)
        } else {
            let state = state.get_or_insert_with(|| gt.state.lock());
            state.dependencies[t] -= 1;
            let ready = state.dependencies[t] == 0;
            if !gt.exec_info.is_empty() && !gt.exec_info[t].should_execute() {
                continue;
            }
            let num_inputs = next.num_inputs();
            let input_nr = edge_input_nr(edges, i);
            let slot = &mut state.not_ready[t];
            match slot {
                // The node's only gradient so far, and it is ready: its buffer is built with the
                // gradient in it, never stored.
                None if ready => InputBuffer::with_first(num_inputs, input_nr, grad),
                _ => {
                    let buffer = slot.get_or_insert_with(|| InputBuffer::new(num_inputs));
                    buffer.add(input_nr, grad, gt.options.create_graph)?;
                    if !ready {
                        continue;
                    }
                    slot.take().expect("invariant: filled above")
                }
            }
        };
        let device = next.device();
        if serves_cpu_queue && device.is_cpu() && continuation.is_none() {
            continuation = Some(Continuation {
                node_index: target,
                sequence_nr: next.sequence_nr(),
                inputs,
            });
        } else {
            push_task(gt, target, next.sequence_nr(), device, inputs)?;
        }
    }
    drop(state);
    if !outputs.spilled() {
        // Every slot is `None` (taken above) and nothing is on the heap: nothing to drop.
        std::mem::forget(outputs);
    }
    let Some(next) = continuation else {
        return Ok(None);
    };
    if serving.looks_empty() {
        // Nothing queued can outrank it (see `ReadyQueue::looks_empty`).
        return Ok(Some(next));
    }
    // No graph-task reference yet: one is taken only if the task is queued.
    let task = next.into_task(None, gt.reentrant_depth);
    match serving.push_unless_next(task, |t| t.graph_task = Some(gt.clone())) {
        Some(task) => Ok(Some(Continuation::from(task))),
        None => {
            // Queued after all: it needs its own count; this node's count is released by the
            // caller as usual. (Counted after the push: the caller still holds this node's count,
            // so the total cannot reach 0 in between.)
            gt.add_outstanding();
            Ok(None)
        }
    }
}

fn node_task(
    gt: &Arc<GraphTask>,
    index: u32,
    sequence_nr: u64,
    inputs: InputBuffer,
) -> NodeTask<GraphTask> {
    let child = Continuation {
        node_index: index,
        sequence_nr,
        inputs,
    };
    child.into_task(Some(gt.clone()), gt.reentrant_depth)
}

/// The input slot of its node that edge `i` of `edges` leads to (an edge with a target exists).
#[inline(always)]
fn edge_input_nr(edges: &[Option<Edge>], i: usize) -> usize {
    edges[i]
        .as_ref()
        .expect("invariant: a target implies an edge")
        .input_nr
}

/// Queues node `index` of `gt` with `inputs` on the queue for `device` (B28): the graph task's
/// own CPU queue for CPU nodes, and for every node when the pass was started with multithreading
/// disabled ([`set_multithreading_enabled`](crate::set_multithreading_enabled)).
///
/// # Errors
///
/// [`Error::ThreadSpawn`] if the device's worker thread cannot be started (nothing is queued).
pub(crate) fn push_task(
    gt: &Arc<GraphTask>,
    index: u32,
    sequence_nr: u64,
    device: Device,
    inputs: InputBuffer,
) -> Result<()> {
    if device.is_cpu() || !gt.thread_locals.modes.multithreading() {
        // The hot path: no queue lookup, no reference count.
        gt.add_outstanding();
        gt.cpu_ready_queue
            .push(node_task(gt, index, sequence_nr, inputs));
        return Ok(());
    }
    let queue = gt.engine.ready_queue(&gt.cpu_ready_queue, device)?;
    gt.add_outstanding();
    queue.push(node_task(gt, index, sequence_nr, inputs));
    Ok(())
}

/// A tensor hook's replacement gradient must look like the one it replaces (PyTorch's
/// `check_single_result`: "hook 'hook' has changed the size of value").
fn check_hook_result(old: &Tensor, new: Tensor) -> Result<Tensor> {
    let changed = if new.shape() != old.shape() {
        Some((
            "size",
            format!("{:?}", old.shape()),
            format!("{:?}", new.shape()),
        ))
    } else if new.dtype() != old.dtype() {
        Some(("type", old.dtype().to_string(), new.dtype().to_string()))
    } else if new.device() != old.device() {
        Some(("device", old.device().to_string(), new.device().to_string()))
    } else {
        None
    };
    match changed {
        None => Ok(new),
        Some((what, was, got)) => Err(Error::shape(
            "hook",
            format!("hook has changed the {what} of value (was {was} got {got})"),
        )),
    }
}

/// Tensor pre-hooks, then retains_grad hooks (B17, B19), replacing `grads` in place (no move of
/// the vector in and out through a `Result` on every node). Most nodes have none: that check is
/// inline, the work out of line.
#[inline]
fn call_tensor_pre_hooks(node: &dyn Node, meta: &NodeMeta, grads: &mut GradVec) -> Result<()> {
    // An AccumulateGrad has no next edges, so its topological number is 0: any other node is
    // told apart without the virtual call.
    if !meta.hooks.any() && (meta.topological_nr() != 0 || node.accumulates_into().is_none()) {
        return Ok(());
    }
    run_tensor_pre_hooks(node, grads)
}

#[inline(never)]
fn run_tensor_pre_hooks(node: &dyn Node, grads: &mut GradVec) -> Result<()> {
    if let Some(leaf) = node.accumulates_into() {
        let hooks =
            (leaf.meta_lock().leaf_hooks.as_ref()).map_or_else(Vec::new, |h| h.tensor.clone());
        for (_, hook) in hooks {
            if let Some(g) = grads.first().cloned().flatten()
                && let Some(new) = hook(&g)?
            {
                grads[0] = Some(check_hook_result(&g, new)?);
            }
        }
        return Ok(());
    }
    let Some(hooks) = node.meta().hooks.snapshot() else {
        return Ok(());
    };
    for (_, output_nr, hook) in &hooks.tensor_pre {
        if let Some(g) = grads.get(*output_nr).cloned().flatten()
            && let Some(new) = hook(&g)?
        {
            grads[*output_nr] = Some(check_hook_result(&g, new)?);
        }
    }
    for (output_nr, tensor) in &hooks.retains_grad {
        let (Some(t), Some(Some(g))) = (tensor.upgrade(), grads.get(*output_nr)) else {
            continue;
        };
        let t = Tensor(std::mem::ManuallyDrop::new(t));
        // Under the pass's grad mode, as PyTorch's retains_grad hook: with `create_graph` the
        // retained gradient is a recorded copy (or sum), which has history.
        let old = t.meta_lock().grad.take();
        let updated = match old {
            None if crate::is_grad_enabled() => g.copy()?,
            None => g.contiguous_data_owned()?,
            Some(old) => old.add(g)?,
        };
        t.meta_lock().grad = Some(updated);
    }
    Ok(())
}

/// `node.apply(grads)`, timed for the profiler (PyTorch's profiler, too, times the node itself,
/// not its hooks). Cold and out of line: the unprofiled path stays as it was.
#[cold]
#[inline(never)]
fn apply_profiled(
    sessions: &crate::profiler::Sessions,
    graph_task_id: u64,
    node: &dyn Node,
    grads: GradVec,
) -> Result<GradVec> {
    let recording = sessions.start(&grads);
    let outputs = node.apply(grads);
    recording.finish(node, graph_task_id);
    outputs
}

/// Hooks in B19's order around `node.apply`. Always inlined into its one caller,
/// [`evaluate_function`], for the reason given there; a node with node hooks (or retains_grad
/// hooks) takes the out-of-line [`call_function_with_hooks`], so the common path carries none of
/// the hook code.
#[inline(always)]
fn call_function(
    gt: &GraphTask,
    index: u32,
    node: &dyn Node,
    meta: &NodeMeta,
    grads: GradVec,
) -> Result<GradVec> {
    let mut grads = grads;
    call_tensor_pre_hooks(node, meta, &mut grads)?;
    if meta.hooks.any() {
        return call_function_with_hooks(gt, index, node, grads);
    }
    let mut outputs = apply(gt, index, node, grads)?;
    validate_outputs_of(node, meta, &mut outputs)?;
    Ok(outputs)
}

/// [`call_function`] for a node that has (or had) hooks: node pre-hooks, apply, node post-hooks.
#[inline(never)]
fn call_function_with_hooks(
    gt: &GraphTask,
    index: u32,
    node: &dyn Node,
    grads: GradVec,
) -> Result<GradVec> {
    let mut grads = grads;
    let hooks = node.meta().hooks.snapshot();
    if let Some(h) = &hooks {
        for (_, pre) in &h.pre {
            if let Some(new) = pre(&grads)? {
                grads = new.into_iter().collect();
            }
        }
    }
    let grad_outputs = hooks
        .as_ref()
        .filter(|h| !h.post.is_empty())
        .map(|_| grads.clone());
    let mut outputs = apply(gt, index, node, grads)?;
    validate_outputs(node, &mut outputs)?;
    if let (Some(h), Some(grad_outputs)) = (&hooks, grad_outputs) {
        for (_, post) in &h.post {
            if let Some(new) = post(&outputs, &grad_outputs)? {
                outputs = new.into_iter().collect();
            }
        }
    }
    Ok(outputs)
}

/// [`apply`] in a selective pass (`grad()`, `backward(inputs=..)`) or in anomaly mode. In a
/// selective pass the node learns which of its outputs lead to a node the pass runs
/// (`NodeMeta::should_compute_output`, PyTorch's `task_should_compute_output`); in anomaly mode
/// the nodes its backward records take it as their parent (for "Previous calculation was
/// induced by .."). Out of line, so that the guards' cleanup is not on the path of every node of
/// an ordinary pass.
#[inline(never)]
fn apply_guarded(gt: &GraphTask, index: u32, node: &dyn Node, grads: GradVec) -> Result<GradVec> {
    let _mask = (!gt.exec_info.is_empty())
        .then(|| per_thread::OutputMask::set(gt, output_mask(gt, index, node.meta())));
    let _evaluating =
        crate::is_anomaly_enabled().then(|| crate::anomaly::EvaluatingGuard::enter(node));
    match &gt.thread_locals.profiler {
        None => node.apply(grads),
        Some(sessions) => apply_profiled(sessions, gt.id, node, grads),
    }
}

/// Which outputs of node `index` lead to a node this selective pass runs (bit `i`: output `i`;
/// outputs past the 64th always count as wanted).
fn output_mask(gt: &GraphTask, index: u32, meta: &NodeMeta) -> u64 {
    let mut mask = 0u64;
    for i in 0..meta.num_outputs() {
        if i >= 64 {
            return mask;
        }
        let target = gt.plan.target(index, i);
        if target != NO_TARGET && gt.exec_info[target as usize].should_execute() {
            mask |= 1 << i;
        }
    }
    mask
}

/// `node.apply(grads)`, through the profiler when the pass records. Not profiling (`None`) costs
/// one load of a field fixed before the task was queued: no atomic, no thread-local. The field is
/// written by `GraphTask::new` only, and this task reached this thread through a ready queue's
/// mutex, which orders that write before this read. The profiled path is out of line, so this one
/// compiles as it did without a profiler.
#[inline(always)]
fn apply(gt: &GraphTask, index: u32, node: &dyn Node, grads: GradVec) -> Result<GradVec> {
    if !gt.exec_info.is_empty() || crate::is_anomaly_enabled() {
        return apply_guarded(gt, index, node, grads);
    }
    match &gt.thread_locals.profiler {
        None => node.apply(grads),
        Some(sessions) => apply_profiled(sessions, gt.id, node, grads),
    }
}

/// Checks the number of gradients a node returned and fits each to the input it is for (B07).
/// Always inlined, into [`call_function`] for the reason given at [`evaluate_function`].
#[inline(always)]
pub(crate) fn validate_outputs(node: &dyn Node, outputs: &mut GradVec) -> Result<()> {
    validate_outputs_of(node, node.meta(), outputs)
}

/// [`validate_outputs`] given the node's `meta` (read once by the caller).
#[inline(always)]
fn validate_outputs_of(node: &dyn Node, meta: &NodeMeta, outputs: &mut GradVec) -> Result<()> {
    let edges = meta.next_edges();
    if outputs.len() != edges.len() {
        return Err(Error::InvalidGradientCount {
            node: node.name().to_string(),
            expected: edges.len(),
            got: outputs.len(),
        });
    }
    for (i, (edge, slot)) in edges.iter().zip(outputs.iter_mut()).enumerate() {
        let (Some(edge), Some(grad)) = (edge, slot.as_ref()) else {
            continue;
        };
        let md = edge.node.meta().input_metadata(edge.input_nr);
        if !same_dims(grad.shape(), md.shape())
            || grad.device() != md.device()
            || grad.dtype() != md.dtype()
        {
            refit_gradient(slot, md, i, Some(node.name().to_string()))?;
        }
    }
    Ok(())
}

/// Fits the gradient in `slot` to the input `edge` leads to, as PyTorch's `validate_outputs`
/// does for node outputs and root gradients alike: sum-reduces a broadcast shape, casts another
/// floating dtype, moves a 0-dim gradient to the input's device; any other shape or device is an
/// error naming `node()` (`None` for a root gradient). A gradient that fits already (nearly
/// every one) costs three comparisons. (`validate_outputs` repeats those comparisons inline.)
pub(crate) fn fit_gradient(
    slot: &mut Option<Tensor>,
    edge: &Edge,
    index: usize,
    node: impl Fn() -> Option<String>,
) -> Result<()> {
    let Some(grad) = slot.as_ref() else {
        return Ok(());
    };
    let md = edge.node.meta().input_metadata(edge.input_nr);
    if same_dims(grad.shape(), md.shape())
        && grad.dtype() == md.dtype()
        && grad.device() == md.device()
    {
        return Ok(());
    }
    refit_gradient(slot, md, index, node())
}

/// The work of [`fit_gradient`] for a gradient that does not fit as it is (out of line: rare).
#[cold]
#[inline(never)]
pub(crate) fn refit_gradient(
    slot: &mut Option<Tensor>,
    md: &crate::graph::InputMetadata,
    index: usize,
    node: Option<String>,
) -> Result<()> {
    let Some(mut grad) = slot.take() else {
        return Ok(());
    };
    if grad.shape() != md.shape() {
        if !is_expandable_to(md.shape(), grad.shape()) {
            return Err(Error::InvalidGradientShape {
                node,
                index,
                got: grad.shape().to_vec(),
                expected: md.shape().to_vec(),
            });
        }
        grad = grad.sum_to_shape(md.shape())?;
    }
    if grad.dtype() != md.dtype() {
        grad = grad.to_dtype(md.dtype())?;
    }
    if grad.device() != md.device() {
        if grad.ndim() != 0 {
            return Err(Error::InvalidGradientDevice {
                node,
                index,
                expected: md.device(),
                got: grad.device(),
            });
        }
        grad = grad.to(md.device())?;
    }
    *slot = Some(grad);
    Ok(())
}
