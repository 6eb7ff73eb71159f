//! `Reducer`: the per-step state machine of data-parallel training — gradient hooks fill buckets,
//! full buckets go to the communication thread in bucket order, the final callback waits and
//! writes averaged gradients back. The protocol is described in the `distributed` module docs.

use std::time::Instant;

use super::CommBuffer;
use super::bucket::{Bucket, Location};
use super::comm_thread::{CommThread, Done, Job};
use super::options::DdpOptions;
use super::stats::StepStats;
use crate::sync::atomic::AtomicBool;
use crate::sync::mpsc::{Receiver, RecvTimeoutError};
use crate::sync::{Arc, Mutex, Ordering};
use crate::{DType, Error, Result, Tensor, current_graph_task_id, queue_callback};

/// Shared by the [`DistributedDataParallel`](super::DistributedDataParallel) handle (strongly),
/// the gradient hooks and the final callback (weakly: the hooks live on the parameters the
/// reducer holds, so a strong reference would be a cycle).
#[derive(Debug)]
pub(crate) struct Reducer {
    pub(crate) rank: usize,
    pub(crate) world_size: usize,
    /// The replicated parameters, registration order.
    pub(crate) params: Vec<Tensor>,
    /// Their shapes at construction: a gradient of another shape is an error.
    shapes: Vec<Vec<usize>>,
    pub(crate) buckets: Vec<Bucket>,
    /// Bucket and slot of each parameter.
    location: Vec<Location>,
    options: DdpOptions,
    /// False inside `no_sync()`: hooks do nothing and gradients accumulate locally. Written by
    /// the `NoSyncGuard` on the user's thread, read by hooks on engine threads.
    pub(crate) require_sync: AtomicBool,
    /// The step in progress; locked briefly by hooks and the final callback.
    state: Mutex<StepState>,
    /// Runs the all-reduces.
    comm: CommThread,
    /// Results from `comm`, read only by the final callback.
    done: Mutex<Receiver<Done>>,
    /// Figures of the last finished step.
    pub(crate) stats: Mutex<StepStats>,
}

/// What one step has done so far.
#[derive(Debug)]
struct StepState {
    /// Step number: jobs and results carry it, so results of an abandoned step are dropped.
    step: u64,
    /// Whether a backward pass has reached a hook and queued the final callback.
    active: bool,
    /// The graph task of that pass: a hook from another task means the previous pass ended
    /// without its final callback (it failed), and the step starts over.
    task: Option<u64>,
    /// Each bucket's buffer while it fills; `None` once sent.
    buffers: Vec<Option<CommBuffer>>,
    /// Gradients each bucket still waits for.
    pending: Vec<usize>,
    /// Which parameters have reported this step.
    ready: Vec<bool>,
    /// The next bucket to send: buckets go out strictly in order, on every rank.
    next_launch: usize,
    /// Errors found on this rank this step; they set this rank's flag in every bucket sent
    /// afterwards, so that every rank fails the step.
    errors: Vec<String>,
}

impl Reducer {
    #[expect(
        clippy::too_many_arguments,
        reason = "a private constructor of plain parts"
    )]
    pub(crate) fn new(
        rank: usize,
        world_size: usize,
        params: Vec<Tensor>,
        buckets: Vec<Bucket>,
        location: Vec<Location>,
        options: DdpOptions,
        comm: CommThread,
        done: Receiver<Done>,
    ) -> Reducer {
        let shapes = params.iter().map(|p| p.shape().to_vec()).collect();
        let state = StepState {
            step: 0,
            active: false,
            task: None,
            buffers: buckets.iter().map(|b| Some(b.buffer())).collect(),
            pending: buckets.iter().map(|b| b.params.len()).collect(),
            ready: vec![false; params.len()],
            next_launch: 0,
            errors: Vec::new(),
        };
        Reducer {
            rank,
            world_size,
            params,
            shapes,
            buckets,
            location,
            options,
            require_sync: AtomicBool::new(true),
            state: Mutex::new(state),
            comm,
            done: Mutex::new(done),
            stats: Mutex::new(StepStats::default()),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::Distributed {
            rank: self.rank,
            op: "ddp step",
            message: message.into(),
        }
    }

    /// The post-accumulate-grad hook of parameter `index`: copies its gradient into its bucket
    /// and sends every bucket that is now complete (in order).
    pub(crate) fn on_grad_ready(self: &Arc<Self>, index: usize) {
        // Acquire; pairs with the Release store of `NoSyncGuard::new`/`drop`, made before the
        // user started this backward pass.
        if !self.require_sync.load(Ordering::Acquire) {
            return;
        }
        let (bucket_index, slot) = self.location[index];
        let bucket = &self.buckets[bucket_index];
        // Read the gradient before taking the lock: it may be a device-to-host copy.
        let grad = self.read_grad(index, bucket.dtype);
        let mut st = self.state.lock();
        let task = current_graph_task_id();
        if st.active && st.task != task {
            self.reset(&mut st, Vec::new());
        }
        if !st.active {
            st.active = true;
            st.task = task;
            let weak = Arc::downgrade(self);
            let queued = queue_callback(move || match weak.upgrade() {
                Some(reducer) => reducer.finish_step(),
                None => Ok(()),
            });
            if let Err(e) = queued {
                st.errors
                    .push(format!("cannot queue the step's final callback: {e}"));
            }
        }
        if st.ready[index] {
            st.errors.push(format!(
                "parameter {index} received its gradient twice in one backward pass"
            ));
            return;
        }
        st.ready[index] = true;
        let buffer = st.buffers[bucket_index]
            .as_mut()
            .expect("invariant: a bucket is sent only once all its parameters are ready");
        match grad {
            Ok(Some(values)) => {
                copy_into(buffer, bucket.offsets[slot], &values);
                buffer.set(bucket.used_flag(slot), 1.0);
            }
            Ok(None) => {} // no gradient after all: counts as unused (zeros)
            Err(message) => st.errors.push(message),
        }
        st.pending[bucket_index] -= 1;
        if self.options.overlap {
            self.launch_ready(&mut st);
        }
    }

    /// Parameter `index`'s gradient as a host buffer, checked against its shape and dtype.
    fn read_grad(
        &self,
        index: usize,
        dtype: DType,
    ) -> std::result::Result<Option<CommBuffer>, String> {
        let Some(grad) = self.params[index].grad() else {
            return Ok(None);
        };
        let expected = &self.shapes[index];
        if grad.shape() != expected.as_slice() || grad.dtype() != dtype {
            return Err(format!(
                "parameter {index} got a gradient of shape {:?} and dtype {}, expected shape {expected:?} and dtype {dtype}",
                grad.shape(),
                grad.dtype()
            ));
        }
        let values = match dtype {
            DType::F32 => grad.to_vec::<f32>().map(CommBuffer::F32),
            DType::F64 => grad.to_vec::<f64>().map(CommBuffer::F64),
            other => {
                return Err(format!(
                    "parameter {index} has dtype {other}: gradients are reduced in f32 or f64"
                ));
            }
        };
        values
            .map(Some)
            .map_err(|e| format!("cannot read the gradient of parameter {index}: {e}"))
    }

    /// Sends every complete bucket from `next_launch` on, in order.
    fn launch_ready(&self, st: &mut StepState) {
        while st.next_launch < self.buckets.len() && st.pending[st.next_launch] == 0 {
            let b = st.next_launch;
            let mut data = st.buffers[b]
                .take()
                .expect("invariant: buckets before next_launch were sent, the others not");
            if !st.errors.is_empty() {
                data.set(self.buckets[b].error_flag(self.rank), 1.0);
            }
            let job = Job {
                step: st.step,
                bucket: b,
                data,
            };
            if !self.comm.send(job) {
                st.errors
                    .push("the communication thread has stopped".into());
            }
            st.next_launch += 1;
        }
    }

    /// The final callback: launches what is left, waits for every bucket, checks every rank's
    /// flags and writes the averaged gradients.
    fn finish_step(&self) -> Result<()> {
        let backward_done = Instant::now();
        let step = {
            let mut st = self.state.lock();
            if !st.active {
                return Ok(());
            }
            for index in 0..self.params.len() {
                if !st.ready[index] {
                    st.ready[index] = true;
                    if !self.options.find_unused_parameters {
                        st.errors.push(format!(
                            "parameter {index} (shape {:?}) received no gradient in this backward pass; \
                             build DistributedDataParallel with `find_unused_parameters(true)` if some \
                             parameters are unused on purpose",
                            self.shapes[index]
                        ));
                    }
                    st.pending[self.location[index].0] -= 1;
                }
            }
            self.launch_ready(&mut st);
            st.step
        };

        let n = self.buckets.len();
        let mut results: Vec<Option<CommBuffer>> = vec![None; n];
        let mut failure: Option<Error> = None;
        let mut stats = StepStats {
            buckets: n,
            bytes: self
                .buckets
                .iter()
                .map(|b| b.len() * b.dtype.size_of())
                .sum(),
            ..StepStats::default()
        };
        {
            let done = self.done.lock();
            let mut received = 0;
            while received < n {
                match done.recv_timeout(self.options.timeout) {
                    Ok(d) if d.step != step => {} // a late result of an abandoned step
                    Ok(d) => {
                        received += 1;
                        stats.comm += d.took;
                        let end = d.started + d.took;
                        stats.hidden += end.min(backward_done).saturating_duration_since(d.started);
                        match d.result {
                            Ok(buffer) => results[d.bucket] = Some(buffer),
                            Err(e) => {
                                failure.get_or_insert(e);
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        failure = Some(self.error(format!(
                            "timed out after {:?} waiting for the all-reduce of bucket {received} of {n}",
                            self.options.timeout
                        )));
                        break;
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        failure = Some(self.error("the communication thread has stopped"));
                        break;
                    }
                }
            }
        }
        stats.wait = backward_done.elapsed();

        let local_errors = std::mem::take(&mut self.state.lock().errors);
        let outcome = match failure {
            Some(e) => Err(e),
            None => self.write_back(&results, &local_errors),
        };
        if outcome.is_ok() {
            *self.stats.lock() = stats;
        }
        let mut st = self.state.lock();
        self.reset(&mut st, results);
        outcome
    }

    /// Checks the error flags of every rank, then sets each used parameter's gradient to its
    /// bucket's sum over the world size.
    fn write_back(&self, results: &[Option<CommBuffer>], local_errors: &[String]) -> Result<()> {
        let failed: Vec<usize> = (0..self.world_size)
            .filter(|&rank| {
                self.buckets.iter().zip(results).any(|(bucket, data)| {
                    data.as_ref()
                        .is_some_and(|d| d.get(bucket.error_flag(rank)) != 0.0)
                })
            })
            .collect();
        if !local_errors.is_empty() {
            return Err(self.error(local_errors.join("; ")));
        }
        if !failed.is_empty() {
            return Err(self.error(format!(
                "rank(s) {failed:?} reported an error in this step (see their output); \
                 gradients were not synchronised"
            )));
        }
        let scale = 1.0 / self.world_size as f64;
        for (bucket, data) in self.buckets.iter().zip(results) {
            let data = data
                .as_ref()
                .expect("invariant: every bucket's result arrived");
            for (slot, (&index, &offset)) in bucket.params.iter().zip(&bucket.offsets).enumerate() {
                if data.get(bucket.used_flag(slot)) == 0.0 {
                    continue; // no rank computed a gradient: leave `.grad` as it is
                }
                let shape = &self.shapes[index];
                let range = offset..offset + self.params[index].numel();
                // world_size is a small integer: `x * (1/w)` in f32 equals `x / w` for w a power
                // of two, and is the same on every rank in any case.
                let grad = match data {
                    CommBuffer::F32(v) => {
                        let w = self.world_size as f32;
                        Tensor::from_vec(v[range].iter().map(|x| x / w).collect(), shape)?
                    }
                    CommBuffer::F64(v) => {
                        Tensor::from_vec(v[range].iter().map(|x| x * scale).collect(), shape)?
                    }
                };
                let param = &self.params[index];
                let grad = if param.device() == grad.device() {
                    grad
                } else {
                    grad.to(param.device())?
                };
                param.set_grad(Some(grad))?;
            }
        }
        Ok(())
    }

    /// Starts the next step: fresh (or recycled, zeroed) buffers, nothing ready.
    fn reset(&self, st: &mut StepState, mut recycled: Vec<Option<CommBuffer>>) {
        recycled.resize(self.buckets.len(), None);
        for (b, bucket) in self.buckets.iter().enumerate() {
            let buffer = match (st.buffers[b].take(), recycled[b].take()) {
                (Some(mut buffer), _) | (None, Some(mut buffer))
                    if buffer.len() == bucket.len() =>
                {
                    buffer.clear();
                    buffer
                }
                _ => bucket.buffer(),
            };
            st.buffers[b] = Some(buffer);
            st.pending[b] = bucket.params.len();
        }
        st.ready.fill(false);
        st.next_launch = 0;
        st.errors.clear();
        st.active = false;
        st.task = None;
        st.step += 1;
    }
}

/// Copies `src` into `dst` at `offset` (same dtype, checked by the caller).
fn copy_into(dst: &mut CommBuffer, offset: usize, src: &CommBuffer) {
    match (dst, src) {
        (CommBuffer::F32(d), CommBuffer::F32(s)) => d[offset..offset + s.len()].copy_from_slice(s),
        (CommBuffer::F64(d), CommBuffer::F64(s)) => d[offset..offset + s.len()].copy_from_slice(s),
        _ => unreachable!("invariant: the gradient's dtype was checked against the bucket's"),
    }
}
