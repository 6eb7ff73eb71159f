//! `CommThread`: the thread that runs a reducer's all-reduces, one bucket after another, while
//! the engine goes on with backward.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{CommBuffer, ProcessGroup};
use crate::sync::Arc;
use crate::sync::mpsc::{self, Receiver, Sender};
use crate::{Error, Result};

/// A bucket to all-reduce.
#[derive(Debug)]
pub(crate) struct Job {
    /// The step it belongs to; results of an abandoned step are recognised and dropped.
    pub(crate) step: u64,
    /// Bucket index.
    pub(crate) bucket: usize,
    /// Gradients and trailer.
    pub(crate) data: CommBuffer,
}

/// A finished all-reduce.
#[derive(Debug)]
pub(crate) struct Done {
    /// As in the [`Job`].
    pub(crate) step: u64,
    /// As in the [`Job`].
    pub(crate) bucket: usize,
    /// The summed buffer, or the transport's error.
    pub(crate) result: Result<CommBuffer>,
    /// When the all-reduce started and how long it took.
    pub(crate) started: Instant,
    pub(crate) took: Duration,
}

/// Handle to the communication thread: jobs go in over `jobs`, results come out on the receiver
/// returned by [`CommThread::spawn`]. The thread ends when this handle is dropped (the job channel
/// closes); dropping joins it, which takes at most one collective's timeout.
#[derive(Debug)]
pub(crate) struct CommThread {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl CommThread {
    /// Starts the thread (named `autograd-ddp-comm:<rank>`).
    pub(crate) fn spawn(group: Arc<dyn ProcessGroup>) -> Result<(CommThread, Receiver<Done>)> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done_rx) = mpsc::channel::<Done>();
        let name = format!("autograd-ddp-comm:{}", group.rank());
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                for job in job_rx {
                    let started = Instant::now();
                    let result = group.all_reduce_sum(job.data);
                    let done = Done {
                        step: job.step,
                        bucket: job.bucket,
                        result,
                        started,
                        took: started.elapsed(),
                    };
                    if done_tx.send(done).is_err() {
                        break; // the reducer is gone
                    }
                }
            })
            .map_err(|e| Error::ThreadSpawn {
                name,
                message: e.to_string(),
            })?;
        Ok((
            CommThread {
                jobs: Some(jobs),
                thread: Some(thread),
            },
            done_rx,
        ))
    }

    /// Queues `job`; false if the thread has ended.
    pub(crate) fn send(&self, job: Job) -> bool {
        self.jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }
}

impl Drop for CommThread {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // A panic in the transport has already been reported as a missing result.
            let _ = thread.join();
        }
    }
}
