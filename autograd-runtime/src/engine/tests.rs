//! Unit tests of engine internals: ready-queue order and hand-off.

use super::node_task::{NodeTask, TaskKind};
use super::ready_queue::ReadyQueue;
use crate::sync::Arc;

#[test]
fn control_tasks_outrank_work() {
    let q: ReadyQueue = ReadyQueue::new();
    q.push(NodeTask::control(TaskKind::WakeUp));
    q.push(NodeTask::control(TaskKind::Shutdown));
    assert_eq!(q.pop().kind, TaskKind::Shutdown);
    assert_eq!(q.pop().kind, TaskKind::WakeUp);
    assert_eq!(q.len(), 0);
}

#[test]
fn pop_blocks_until_a_push_from_another_thread() {
    let q: Arc<ReadyQueue> = Arc::new(ReadyQueue::new());
    let q2 = q.clone();
    let t = std::thread::spawn(move || q2.pop().kind);
    q.push(NodeTask::control(TaskKind::WakeUp));
    assert_eq!(t.join().expect("popper thread"), TaskKind::WakeUp);
}
