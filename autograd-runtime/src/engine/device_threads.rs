//! One long-lived worker thread and ready queue per device index (PyTorch's
//! `device_ready_queues_` and `pt_autograd_<i>` threads, B28), started lazily the first time a
//! node of that device is scheduled.

use std::thread::JoinHandle;

use super::graph_task::TaskQueue;
use super::node_task::{NodeTask, TaskKind};
use super::{per_thread, worker};
use crate::sync::{Arc, Mutex};
use crate::{Error, Result};

struct DeviceWorker {
    queue: Arc<TaskQueue>,
    thread: Option<JoinHandle<()>>,
}

/// The per-device queues and their threads. Device `Virtual(i)` and `Cuda(i)` share index `i`, as
/// PyTorch shares one thread per device index across device types.
#[derive(Default)]
pub(crate) struct DeviceThreads {
    workers: Mutex<Vec<Option<DeviceWorker>>>,
}

impl DeviceThreads {
    /// The queue of device index `index`, starting its worker on first use.
    pub(crate) fn queue(&self, index: usize) -> Result<Arc<TaskQueue>> {
        let mut workers = self.workers.lock();
        if workers.len() <= index {
            workers.resize_with(index + 1, || None);
        }
        if let Some(worker) = &workers[index] {
            return Ok(worker.queue.clone());
        }
        let queue = Arc::new(TaskQueue::new());
        let q = queue.clone();
        let name = format!("autograd-device-{index}");
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                crate::backend::on_device_thread_start(index);
                per_thread::set_local_ready_queue(q.clone());
                worker::thread_main(&q, None);
            })
            .map_err(|e| Error::ThreadSpawn {
                name,
                message: e.to_string(),
            })?;
        workers[index] = Some(DeviceWorker {
            queue: queue.clone(),
            thread: Some(thread),
        });
        Ok(queue)
    }

    /// Number of device threads started so far.
    pub(crate) fn started(&self) -> usize {
        self.workers.lock().iter().flatten().count()
    }

    /// Stops every device thread (a shutdown task outranks all work) and joins it — except the
    /// calling thread, when it is one of them (the engine dropped by a device thread that held
    /// its last graph task): that one leaves its loop at the shutdown task once it returns there.
    pub(crate) fn shutdown(&self) {
        let workers: Vec<DeviceWorker> = self.workers.lock().drain(..).flatten().collect();
        for w in &workers {
            w.queue.push(NodeTask::control(TaskKind::Shutdown));
        }
        for mut w in workers {
            if let Some(t) = w.thread.take() {
                join_unless_current(t);
            }
        }
    }
}

/// Joins `thread` unless it is the calling thread (which cannot join itself: the handle is dropped,
/// detaching it, and the thread exits by itself).
pub(crate) fn join_unless_current(thread: JoinHandle<()>) {
    if thread.thread().id() == std::thread::current().id() {
        return;
    }
    // An engine thread never panics out of its loop (node panics are caught), so a join error
    // would be a bug in the engine itself; there is nothing to recover.
    let _ = thread.join();
}

impl std::fmt::Debug for DeviceThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceThreads")
            .field("started", &self.started())
            .finish()
    }
}
