//! The worker loop (`thread_main`), PyTorch's `thread_main`. The state it keeps per thread (the
//! local ready queue, the depths, the current graph task) is in `per_thread.rs`.
//!
//! Three kinds of threads run `thread_main`:
//! * the *owner*: the thread that called `backward()`/`grad()`; it runs CPU nodes of its graph
//!   task from its own local queue until the task completes;
//! * *device workers*: one per device index, forever, on that device's queue
//!   (`device_threads.rs`);
//! * *reentrant pool threads*: they take over a reentrant graph task whose caller reached the
//!   depth limit, on the caller's queue (`reentrant.rs`).

use super::evaluate::evaluate_function;
use super::graph_task::{GraphTask, TaskQueue};
use super::input_buffer::InputBuffer;
use super::node_task::TaskKind;
use super::per_thread::{self, CurrentGraphTask};
use super::unwind;
use crate::Error;
use crate::sync::Arc;

/// Processes tasks from `queue` (PyTorch's `thread_main`): until `until` completes for an owner or
/// pool thread, or until a shutdown task for a device worker (`until == None`). Tasks of any
/// graph task found on the queue are run: graph tasks do not form a stack.
///
/// Protocol (see `README.md`, "Completion and wake-up"): the thread whose `finish_one` brings a
/// graph task's outstanding count to 0 runs its post-processing and completes it; completing
/// pushes a wake-up task onto the owner's queue when the completing thread is not serving that
/// queue, so an owner blocked in `pop` re-checks `is_completed`.
pub(crate) fn thread_main(queue: &TaskQueue, until: Option<&Arc<GraphTask>>) {
    let was_worker = per_thread::enter_worker();
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
    per_thread::leave_worker(was_worker);
}

/// Runs node `node_index` of `gt`, then each continuation it hands back (README.md §2), and
/// releases the one `outstanding_tasks` count they share. The graph task is entered once for the
/// whole run, and no continuation takes a reference to it.
fn run_task(
    gt: &Arc<GraphTask>,
    node_index: u32,
    inputs: InputBuffer,
    queue: &TaskQueue,
    until: Option<&Arc<GraphTask>>,
) {
    {
        let _current = CurrentGraphTask::enter(gt);
        // The caller's thread-local state, for every node of the run (`thread_local_state.rs`).
        let state = gt.thread_locals.enter();
        // The node running, for the error report. One `catch` covers the whole run: a panic
        // ends the run as an error would, and the loop pays for no unwinding frame per node.
        let mut running = node_index;
        let result = unwind::catch(None, || {
            let (mut node_index, mut inputs) = (node_index, inputs);
            while !gt.has_error() {
                state.reinstate();
                running = node_index;
                let Some(next) = evaluate_function(gt, node_index, inputs, queue)? else {
                    break;
                };
                if until.is_some_and(|u| u.is_completed()) {
                    // The owner's task completed while a continuation of another graph task was
                    // in hand (graph tasks do not form a stack): queue it for whoever drains this
                    // queue next; it keeps the count.
                    queue.push(next.into_task(Some(gt.clone()), gt.reentrant_depth));
                    return Ok(HandedOn::Yes);
                }
                node_index = next.node_index;
                inputs = next.inputs;
            }
            Ok(HandedOn::No)
        });
        match result {
            Ok(HandedOn::Yes) => return,
            Ok(HandedOn::No) => {}
            Err(e) => report_node_error(gt, running, e, queue),
        }
    }
    if gt.finish_one() {
        let _current = CurrentGraphTask::enter(gt);
        gt.run_post_processing(queue);
    }
}

/// Whether a run ended by queueing its continuation, which then carries the run's
/// `outstanding_tasks` count.
enum HandedOn {
    Yes,
    No,
}

fn report_node_error(gt: &GraphTask, node_index: u32, e: Error, queue: &TaskQueue) {
    let node = gt.plan.node(node_index);
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
    // Anomaly mode reports the pass's first error only (PyTorch's `set_exception_without_signal`):
    // one warning per failing pass, with the failing node's forward trace and its parents'.
    gt.set_error_reporting(e, queue, || {
        if crate::is_anomaly_enabled() {
            crate::anomaly::print_stack(node.name(), node.meta().anomaly_metadata().map(|m| &**m));
        }
    });
}
