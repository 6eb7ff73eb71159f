//! Unit tests of engine internals: ready-queue order and hand-off.

use super::graph_task::TaskQueue;
use super::node_task::{NodeTask, TaskKind};
use crate::sync::Arc;

#[test]
fn control_tasks_outrank_work() {
    let q = TaskQueue::new();
    q.push(NodeTask::control(TaskKind::WakeUp));
    q.push(NodeTask::control(TaskKind::Shutdown));
    assert_eq!(q.pop().kind, TaskKind::Shutdown);
    assert_eq!(q.pop().kind, TaskKind::WakeUp);
    assert_eq!(q.len(), 0);
}

#[test]
fn pop_blocks_until_a_push_from_another_thread() {
    let q: Arc<TaskQueue> = Arc::new(TaskQueue::new());
    let q2 = q.clone();
    let t = std::thread::spawn(move || q2.pop().kind);
    q.push(NodeTask::control(TaskKind::WakeUp));
    assert_eq!(t.join().expect("popper thread"), TaskKind::WakeUp);
}

mod properties {
    use proptest::prelude::*;

    use crate::Tensor;
    use crate::engine::graph_task::{GraphTask, TaskQueue};
    use crate::engine::input_buffer::InputBuffer;
    use crate::engine::node_task::{NodeTask, TaskKind};

    fn task(kind: u8, depth: usize, seq: u64) -> NodeTask<GraphTask> {
        let kind = match kind % 3 {
            0 => TaskKind::Evaluate,
            1 => TaskKind::WakeUp,
            _ => TaskKind::Shutdown,
        };
        let mut t = NodeTask::control(TaskKind::WakeUp);
        t.kind = kind;
        t.reentrant_depth = depth;
        t.sequence_nr = seq;
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        /// Pops come out in `NodeTask`'s order: shutdown, wake-up, deeper reentrant depth, larger
        /// sequence number (B04), whatever the push order.
        #[test]
        fn ready_queue_pops_in_priority_order(tasks in prop::collection::vec((0u8..3, 0usize..4, 0u64..50), 1..40)) {
            let q = TaskQueue::new();
            for &(k, d, s) in &tasks {
                q.push(task(k, d, s));
            }
            let popped: Vec<NodeTask<GraphTask>> = (0..tasks.len()).map(|_| q.pop()).collect();
            for w in popped.windows(2) {
                prop_assert!(w[0] >= w[1], "{:?} popped before {:?}", w[0], w[1]);
            }
            let key = |t: &NodeTask<GraphTask>| (t.kind, t.reentrant_depth, t.sequence_nr);
            let mut expected: Vec<_> = tasks.iter().map(|&(k, d, s)| key(&task(k, d, s))).collect();
            expected.sort();
            expected.reverse();
            prop_assert_eq!(popped.iter().map(key).collect::<Vec<_>>(), expected);
        }

        /// Summing gradients into a slot gives the same result in any order, in place or not.
        #[test]
        fn input_buffer_sum_is_order_independent(values in prop::collection::vec(prop::collection::vec(-100.0f64..100.0, 3), 1..8), rotate in 0usize..8) {
            let sum = |order: &[Vec<f64>], grad_mode: bool| -> Vec<f64> {
                let mut buf = InputBuffer::new(1);
                for v in order {
                    buf.add(0, Some(Tensor::from_vec(v.clone(), &[3]).unwrap()), grad_mode).unwrap();
                }
                buf.into_grads()[0].as_ref().unwrap().to_vec::<f64>().unwrap()
            };
            let mut rotated = values.clone();
            let n = rotated.len();
            rotated.rotate_left(rotate % n);
            let (a, b, c) = (sum(&values, false), sum(&rotated, false), sum(&values, true));
            for ((x, y), z) in a.iter().zip(&b).zip(&c) {
                prop_assert!((x - y).abs() < 1e-9 && (x - z).abs() < 1e-9, "{a:?} {b:?} {c:?}");
            }
        }
    }

    /// A caller's gradient tensor is never written to by the buffer (B05).
    #[test]
    fn input_buffer_never_mutates_a_callers_tensor() {
        let mine = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
        let mut buf = InputBuffer::new(1);
        buf.add(0, Some(mine.clone()), false).unwrap();
        buf.add(
            0,
            Some(Tensor::from_vec(vec![10.0f64, 20.0], &[2]).unwrap()),
            false,
        )
        .unwrap();
        assert_eq!(
            buf.into_grads()[0]
                .as_ref()
                .unwrap()
                .to_vec::<f64>()
                .unwrap(),
            vec![11.0, 22.0]
        );
        assert_eq!(mine.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
        assert_eq!(mine.version(), 0);
    }
}
