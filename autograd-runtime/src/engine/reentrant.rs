//! Reentrant backward beyond the depth limit (B27): a nested graph task whose caller already
//! has `max_recursion_depth` inline levels on its stack is handed to a pool thread, which keeps
//! draining the *caller's* queue while the caller blocks on the task's completion. This bounds
//! the stack depth of every thread (PyTorch's `add_thread_pool_task` / `thread_pool`).

use std::collections::VecDeque;
use std::thread::JoinHandle;

use super::graph_task::GraphTask;
use super::{per_thread, worker};
use crate::sync::{Arc, CondMutex, Condvar};
use crate::{Error, Result};

/// Stack size of pool threads: each runs up to `max_recursion_depth` inline reentrant levels.
const POOL_STACK_SIZE: usize = 16 * 1024 * 1024;

#[derive(Default)]
struct PoolState {
    /// Graph tasks waiting for a pool thread.
    tasks: VecDeque<Arc<GraphTask>>,
    /// Pool threads waiting for a task.
    idle: usize,
    /// Set by `shutdown`: idle threads exit.
    stopping: bool,
    threads: Vec<JoinHandle<()>>,
}

/// The reentrant thread pool: grows on demand (a thread is spawned when no idle one can take a
/// task), threads are reused afterwards.
#[derive(Default)]
pub(crate) struct ReentrantPool {
    state: CondMutex<PoolState>,
    available: Condvar,
}

impl ReentrantPool {
    /// Queues `task` for a pool thread, spawning one if none is idle.
    ///
    /// # Errors
    ///
    /// [`Error::ThreadSpawn`] if a thread is needed and cannot be started (the task is not
    /// queued then).
    pub(crate) fn submit(self: &Arc<Self>, task: Arc<GraphTask>) -> Result<()> {
        let mut state = self.state.lock();
        if state.idle > state.tasks.len() {
            state.tasks.push_back(task);
            drop(state);
            self.available.notify_one();
            return Ok(());
        }
        let pool = self.clone();
        let name = format!("autograd-reentrant-{}", state.threads.len());
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(POOL_STACK_SIZE)
            .spawn(move || pool.run())
            .map_err(|e| Error::ThreadSpawn {
                name,
                message: e.to_string(),
            })?;
        state.tasks.push_back(task);
        state.threads.push(thread);
        Ok(())
    }

    fn run(&self) {
        loop {
            let task = {
                let mut state = self.state.lock();
                loop {
                    if let Some(t) = state.tasks.pop_front() {
                        break t;
                    }
                    if state.stopping {
                        return;
                    }
                    state.idle += 1;
                    state = self.available.wait(state);
                    state.idle -= 1;
                }
            };
            per_thread::init_pool_thread(&task);
            let queue = task.cpu_ready_queue.clone();
            worker::thread_main(&queue, Some(&task));
        }
    }

    /// Lets idle threads exit and joins them all (explicit engines only; a thread still running a
    /// task finishes it first). The calling thread, if it is a pool thread, is not joined: it
    /// exits by itself when it next finds no task.
    pub(crate) fn shutdown(&self) {
        let threads = {
            let mut state = self.state.lock();
            state.stopping = true;
            std::mem::take(&mut state.threads)
        };
        self.available.notify_all();
        for t in threads {
            super::device_threads::join_unless_current(t);
        }
    }

    /// Number of pool threads spawned so far.
    pub(crate) fn threads(&self) -> usize {
        self.state.lock().threads.len()
    }
}

impl std::fmt::Debug for ReentrantPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReentrantPool")
            .field("threads", &self.threads())
            .finish()
    }
}
