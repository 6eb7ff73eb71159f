//! Loom models of the engine's synchronisation protocols, run over the engine's own source files
//! (included by path) with `RUSTFLAGS="--cfg loom" cargo test --release` in this directory.
//!
//! * `ready_queue_hand_off`: a task pushed by one thread is popped by a thread blocked in `pop`
//!   (the waiter count must not make `push` skip a needed notification).
//! * `continuation_hand_back`: `looks_empty` then `push_unless_next` racing a push
//!   of a higher-priority task: the continuation is either run at once or queued behind it,
//!   never lost.
//! * `owner_wake_up`: README.md §3 — a worker completes a graph task and pushes a wake-up task;
//!   the owner, polling `is_completed` between pops, always terminates.
//! * `pool_waiter`: a caller blocked in `Completion::wait` is woken by `complete` on another thread.
#![cfg(loom)]
#![allow(dead_code, unreachable_pub, unused_imports)]

#[path = "../../autograd-runtime/src/sync.rs"]
mod sync;

#[path = "../../autograd-runtime/src/engine/completion.rs"]
mod completion;

#[path = "../../autograd-runtime/src/engine/ready_queue.rs"]
mod ready_queue;

#[cfg(test)]
mod tests {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    use crate::completion::Completion;
    use crate::ready_queue::ReadyQueue;

    #[test]
    fn ready_queue_hand_off() {
        loom::model(|| {
            let q: Arc<ReadyQueue<u32>> = Arc::new(ReadyQueue::new());
            let q2 = q.clone();
            let consumer = thread::spawn(move || {
                let a = q2.pop();
                let b = q2.pop();
                (a, b)
            });
            q.push(1);
            q.push(2);
            let (a, b) = consumer.join().unwrap();
            // Both tasks arrive, the higher priority first when both were queued.
            assert_eq!(a + b, 3);
        });
    }

    #[test]
    fn continuation_hand_back() {
        loom::model(|| {
            // A device worker pushes a task that outranks the continuation in hand.
            let q: Arc<ReadyQueue<u32>> = Arc::new(ReadyQueue::new());
            let pushed = Arc::new(AtomicBool::new(false));
            let (q2, p2) = (q.clone(), pushed.clone());
            let device = thread::spawn(move || {
                q2.push(5);
                p2.store(true, Ordering::Release);
            });
            let push_seen = pushed.load(Ordering::Acquire);
            let mut attached = false;
            // The engine's sequence: the lock-free empty check, then the locked comparison.
            let handed = if q.looks_empty() {
                Some(3)
            } else {
                q.push_unless_next(3, |_| attached = true)
            };
            device.join().unwrap();
            if push_seen {
                // The push happened before: the queue is not empty, and 5 outranks 3.
                assert!(handed.is_none(), "a continuation overtook a queued task");
            }
            match handed {
                // Run at once: the queue was empty (lock-free check) or held only lower tasks.
                Some(t) => {
                    assert_eq!(t, 3);
                    assert!(!attached, "a handed-back task is not completed for the queue");
                    assert_eq!(q.pop(), 5);
                }
                // Queued behind the task that outranks it: both come out, in priority order.
                None => {
                    assert!(attached, "a queued task is completed first");
                    assert_eq!((q.pop(), q.pop()), (5, 3));
                }
            }
        });
    }

    #[test]
    fn owner_wake_up() {
        loom::model(|| {
            let queue: Arc<ReadyQueue<u32>> = Arc::new(ReadyQueue::new());
            let done = Arc::new(Completion::new());
            let (q, d) = (queue.clone(), done.clone());
            // A device worker finishes the last task of the owner's graph task.
            let worker = thread::spawn(move || {
                if d.complete() {
                    q.push(0); // the wake-up task
                }
            });
            // The owner's `thread_main` loop.
            while !done.is_completed() {
                let _ = queue.pop();
            }
            worker.join().unwrap();
        });
    }

    #[test]
    fn pool_waiter() {
        loom::model(|| {
            let done = Arc::new(Completion::new());
            let d = done.clone();
            let pool = thread::spawn(move || {
                assert!(d.complete());
                assert!(!d.complete(), "only the first completion counts");
            });
            done.wait();
            assert!(done.is_completed());
            pool.join().unwrap();
        });
    }
}
