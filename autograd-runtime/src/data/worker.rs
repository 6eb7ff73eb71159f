//! The worker threads of a [`DataLoader`](super::DataLoader) iterator (PyTorch's
//! `_MultiProcessingDataLoaderIter`, with threads for processes), and the one function that makes
//! a batch wherever it runs.
//!
//! Protocol, with `k` workers and `p` batches ready per worker:
//!
//! 1. The caller's thread owns the [`BatchSampler`] and sends batch `i`'s indices to worker
//!    `i mod k` over that worker's index channel; at the start it sends `p·k` batches (or as
//!    many as the epoch has), then one more after each batch it receives
//!    (`_try_put_index`).
//! 2. Worker `w` takes index lists from its channel in order, makes each batch
//!    ([`make_batch`]) and sends the result on its own result channel.
//! 3. The caller receives batch `i` from worker `i mod k`'s result channel: since a worker
//!    handles its batches in the order it got them, batches come out in the sampler's order.
//! 4. At most `p·k` batches are in flight and the assignment is round robin, so each worker has
//!    at most `p` outstanding: both channels hold `p`, and no send ever blocks.
//! 5. Dropping the iterator raises `stop`, closes the index channels and joins the workers: a
//!    worker sees the closed channel (after skipping, thanks to `stop`, the lists still queued)
//!    or, while sending, the closed result channel, and returns. Only a batch already being
//!    made is finished first.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use super::dataset::Dataset;
use super::loader::CollateFn;
use super::sampler::BatchSampler;
use crate::sync::atomic::AtomicBool;
use crate::sync::mpsc::{self, Receiver, SyncSender};
use crate::sync::{Arc, Ordering};
use crate::{Error, Result};

/// Fetches the samples at `indices` and collates them; a panic in either becomes
/// [`Error::DataLoaderPanic`] naming `worker`.
pub(crate) fn make_batch<D: Dataset + ?Sized, B>(
    dataset: &D,
    collate: &CollateFn<D::Item, B>,
    indices: &[usize],
    worker: Option<usize>,
) -> Result<B> {
    // AssertUnwindSafe: after a panic nothing of this call is used again; the data set and the
    // collate function are the user's, and a later batch reads them as PyTorch's worker goes on
    // after an exception.
    let made = catch_unwind(AssertUnwindSafe(|| {
        let samples = indices
            .iter()
            .map(|&i| dataset.get(i))
            .collect::<Result<Vec<_>>>()?;
        collate(samples)
    }));
    made.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "<non-string panic payload>".to_string());
        Err(Error::DataLoaderPanic { worker, message })
    })
}

/// One worker thread, from the caller's side.
#[derive(Debug)]
struct Worker<B> {
    /// Index lists to make batches of (closed on drop: the worker's signal to return).
    indices: Option<SyncSender<Vec<usize>>>,
    /// The worker's batches, in the order of its index lists.
    results: Receiver<Result<B>>,
    /// Joined on drop.
    thread: Option<JoinHandle<()>>,
}

/// The worker threads of one epoch and the caller's bookkeeping (steps 1 and 3 of the module
/// docs).
#[derive(Debug)]
pub(crate) struct Workers<B> {
    /// The epoch's index lists, drawn on the caller's thread.
    batches: BatchSampler,
    /// Whether `batches` has run out.
    exhausted: bool,
    /// The workers; batch `i` goes to `workers[i % k]`.
    workers: Vec<Worker<B>>,
    /// Batches sent to workers so far.
    sent: usize,
    /// Batches received (yielded) so far.
    received: usize,
    /// Set when the iterator is dropped, so that workers skip the lists still queued.
    stop: Arc<AtomicBool>,
}

impl<B: Send + 'static> Workers<B> {
    /// Starts `count` workers over `dataset` and sends the first `count · prefetch` batches.
    pub(crate) fn start<D: Dataset + 'static>(
        dataset: &Arc<D>,
        collate: &Arc<CollateFn<D::Item, B>>,
        batches: BatchSampler,
        count: usize,
        prefetch: usize,
    ) -> Result<Workers<B>> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::with_capacity(count);
        for w in 0..count {
            let (index_tx, index_rx) = mpsc::sync_channel::<Vec<usize>>(prefetch);
            let (result_tx, result_rx) = mpsc::sync_channel::<Result<B>>(prefetch);
            let (dataset, collate, stop) =
                (Arc::clone(dataset), Arc::clone(collate), Arc::clone(&stop));
            let name = format!("autograd-data-{w}");
            let thread = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    for indices in index_rx {
                        // Relaxed: `stop` only saves the work of lists queued before the drop;
                        // the exit itself is ordered by the channels closing (step 5).
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let batch = make_batch(&*dataset, &*collate, &indices, Some(w));
                        if result_tx.send(batch).is_err() {
                            break; // the iterator is gone
                        }
                    }
                })
                .map_err(|e| Error::ThreadSpawn {
                    name,
                    message: e.to_string(),
                })?;
            workers.push(Worker {
                indices: Some(index_tx),
                results: result_rx,
                thread: Some(thread),
            });
        }
        let mut this = Workers {
            batches,
            exhausted: false,
            workers,
            sent: 0,
            received: 0,
            stop,
        };
        for _ in 0..count * prefetch {
            this.put_index();
        }
        Ok(this)
    }
}

impl<B> Workers<B> {
    /// Sends the next batch's indices to its worker, if the epoch has one (`_try_put_index`).
    fn put_index(&mut self) {
        if self.exhausted {
            return;
        }
        let Some(indices) = self.batches.next() else {
            self.exhausted = true;
            return;
        };
        let k = self.workers.len();
        let worker = &self.workers[self.sent % k];
        // A worker only leaves its loop early once `stop` is set, so the channel is open and
        // has room (step 4); if it is not, `next` reports the missing batch.
        if let Some(tx) = &worker.indices {
            let _ = tx.send(indices);
        }
        self.sent += 1;
    }

    /// The next batch in the sampler's order, or `None` at the end of the epoch.
    pub(crate) fn next(&mut self) -> Option<Result<B>> {
        if self.received == self.sent {
            return None;
        }
        let w = self.received % self.workers.len();
        self.received += 1;
        match self.workers[w].results.recv() {
            Ok(batch) => {
                self.put_index();
                Some(batch)
            }
            Err(_) => {
                // The worker is gone without its batch: nothing else of this epoch can be
                // trusted to come, so the epoch ends after this error.
                self.exhausted = true;
                self.sent = self.received;
                Some(Err(Error::DataLoaderPanic {
                    worker: Some(w),
                    message: "the worker thread exited unexpectedly".into(),
                }))
            }
        }
    }
}

impl<B> Drop for Workers<B> {
    fn drop(&mut self) {
        // Relaxed: see the load in the worker loop.
        self.stop.store(true, Ordering::Relaxed);
        for worker in &mut self.workers {
            drop(worker.indices.take());
        }
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                // Panics in user code were caught in `make_batch`; anything else has already
                // been reported as a missing batch or no longer matters.
                let _ = thread.join();
            }
        }
    }
}
