//! `NcclGroup`: a [`ProcessGroup`] over NCCL (cudarc's bindings), one GPU per rank.
//!
//! **Never run**: the machines this was written on have no GPU. It compiles (feature `nccl`), and
//! without a GPU or without libnccl, [`NcclGroup::new`] returns [`Error::DeviceUnavailable`]
//! with the reason instead of panicking.
//!
//! Like `MpiGroup`, one thread (`autograd-nccl:<device>`) owns the NCCL communicator and its
//! CUDA stream and runs the collectives in call order. Buffers are host [`CommBuffer`]s staged
//! through device memory (copy in, `ncclAllReduce` in place, copy out); the reducer reads
//! gradients to the host anyway. The caller waits for each collective at most the group's
//! timeout; NCCL itself cannot be interrupted here, so after a timeout the group is unusable.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaStream, DeviceRepr, ValidAsZeroBits};
use cudarc::nccl::{Comm, Id, NcclType, ReduceOp};

use super::{CommBuffer, ProcessGroup};
use crate::sync::Arc;
use crate::sync::mpsc::{self, Receiver, Sender};
use crate::{Device, Error, Result};

/// A [`ProcessGroup`] of GPUs, one per rank, communicating through NCCL.
///
/// Built from another group (e.g. an `MpiGroup`) that carries NCCL's unique id from rank 0 to
/// the others.
///
/// # Examples
///
/// ```no_run
/// use autograd_runtime::distributed::{LocalGroup, NcclGroup, ProcessGroup};
/// let bootstrap = LocalGroup::new(1).pop().unwrap();
/// match NcclGroup::new(&bootstrap, 0) {
///     Ok(group) => println!("NCCL rank {} of {}", group.rank(), group.world_size()),
///     Err(e) => println!("skipped: {e}"),
/// }
/// ```
pub struct NcclGroup {
    rank: usize,
    world_size: usize,
    device: usize,
    timeout: Duration,
    requests: Option<Sender<Call>>,
    thread: Option<JoinHandle<()>>,
}

struct Call {
    op: Op,
    reply: Sender<std::result::Result<CommBuffer, String>>,
}

enum Op {
    AllReduce(CommBuffer),
    Broadcast(CommBuffer, usize),
}

/// How long a collective waits by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

impl NcclGroup {
    /// Joins NCCL on CUDA device `device` with the ranks of `bootstrap` (a collective of
    /// `bootstrap`: every rank must call it).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`] without a GPU, CUDA or libnccl (the reason says which);
    /// [`Error::Distributed`] if NCCL fails to set up; errors of `bootstrap`'s broadcast.
    ///
    /// # Examples
    ///
    /// See [`NcclGroup`].
    pub fn new(bootstrap: &dyn ProcessGroup, device: usize) -> Result<NcclGroup> {
        let unavailable = |reason: String| Error::DeviceUnavailable {
            device: Device::Cuda(device),
            reason,
        };
        if let Some(reason) = crate::cuda::unavailable_reason(device) {
            return Err(unavailable(reason));
        }
        let rank = bootstrap.rank();
        let world_size = bootstrap.world_size();
        // Rank 0 makes the id; its 128 bytes travel as f64 values (exact).
        let mine = if rank == 0 {
            let id = catch_unwind(Id::new)
                .map_err(|_| unavailable("libnccl could not be loaded".into()))?
                .map_err(|e| unavailable(format!("ncclGetUniqueId failed: {e:?}")))?;
            id.internal().iter().map(|&b| f64::from(b)).collect()
        } else {
            vec![0.0; 128]
        };
        let CommBuffer::F64(bytes) = bootstrap.broadcast(CommBuffer::F64(mine), 0)? else {
            return Err(unavailable(
                "the bootstrap group changed the id's dtype".into(),
            ));
        };
        let mut internal = [0 as core::ffi::c_char; 128];
        for (dst, src) in internal.iter_mut().zip(bytes) {
            *dst = src as core::ffi::c_char; // a c_char value, exact in f64
        }
        let (requests, calls) = mpsc::channel::<Call>();
        let (ready_tx, ready_rx) = mpsc::channel::<std::result::Result<(), String>>();
        let name = format!("autograd-nccl:{device}");
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                serve(
                    device,
                    rank,
                    world_size,
                    Id::uninit(internal),
                    calls,
                    ready_tx,
                )
            })
            .map_err(|e| Error::ThreadSpawn {
                name,
                message: e.to_string(),
            })?;
        let ready = ready_rx
            .recv()
            .unwrap_or_else(|_| Err("the NCCL thread ended during set-up".into()));
        if let Err(message) = ready {
            let _ = thread.join();
            return Err(Error::Distributed {
                rank,
                op: "NcclGroup::new",
                message,
            });
        }
        Ok(NcclGroup {
            rank,
            world_size,
            device,
            timeout: DEFAULT_TIMEOUT,
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    /// Sets how long a collective may take before it fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use autograd_runtime::distributed::{LocalGroup, NcclGroup};
    /// # let bootstrap = LocalGroup::new(1).pop().unwrap();
    /// let group = NcclGroup::new(&bootstrap, 0)?.with_timeout(std::time::Duration::from_secs(30));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> NcclGroup {
        self.timeout = timeout;
        self
    }

    fn call(&self, op: Op, name: &'static str) -> Result<CommBuffer> {
        let error = |message: String| Error::Distributed {
            rank: self.rank,
            op: name,
            message,
        };
        let (reply, outcome) = mpsc::channel();
        let sent = self
            .requests
            .as_ref()
            .is_some_and(|r| r.send(Call { op, reply }).is_ok());
        if !sent {
            return Err(error("the NCCL thread has stopped".into()));
        }
        match outcome.recv_timeout(self.timeout) {
            Ok(result) => result.map_err(error),
            Err(_) => Err(error(format!(
                "timed out after {:?} on cuda:{}",
                self.timeout, self.device
            ))),
        }
    }
}

/// The NCCL thread: sets up the communicator, reports, then runs calls until the channel closes.
fn serve(
    device: usize,
    rank: usize,
    world_size: usize,
    id: Id,
    calls: Receiver<Call>,
    ready: Sender<std::result::Result<(), String>>,
) {
    let setup = catch_unwind(AssertUnwindSafe(|| {
        let ctx = CudaContext::new(device).map_err(|e| format!("cuda:{device}: {e:?}"))?;
        let stream = ctx.default_stream();
        let comm = Comm::from_rank(stream.clone(), rank, world_size, id)
            .map_err(|e| format!("ncclCommInitRank failed: {e:?}"))?;
        Ok::<_, String>((stream, comm))
    }))
    .unwrap_or_else(|_| Err("CUDA or NCCL panicked during set-up".into()));
    let (stream, comm) = match setup {
        Ok(v) => v,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if ready.send(Ok(())).is_err() {
        return;
    }
    for Call { op, reply } in calls {
        let result = catch_unwind(AssertUnwindSafe(|| match op {
            Op::AllReduce(CommBuffer::F32(v)) => run(&stream, &comm, v, None).map(CommBuffer::F32),
            Op::AllReduce(CommBuffer::F64(v)) => run(&stream, &comm, v, None).map(CommBuffer::F64),
            Op::Broadcast(CommBuffer::F32(v), root) => {
                run(&stream, &comm, v, Some(root)).map(CommBuffer::F32)
            }
            Op::Broadcast(CommBuffer::F64(v), root) => {
                run(&stream, &comm, v, Some(root)).map(CommBuffer::F64)
            }
        }))
        .unwrap_or_else(|_| Err("CUDA or NCCL panicked".into()));
        let _ = reply.send(result);
    }
}

/// Copies `values` to the device, all-reduces (or broadcasts from `root`) in place, copies back.
fn run<T>(
    stream: &Arc<CudaStream>,
    comm: &Comm,
    values: Vec<T>,
    root: Option<usize>,
) -> std::result::Result<Vec<T>, String>
where
    T: NcclType + DeviceRepr + ValidAsZeroBits + Clone + Default,
{
    if values.is_empty() {
        return Ok(values);
    }
    let mut device = stream
        .clone_htod(&values)
        .map_err(|e| format!("copy to the device: {e:?}"))?;
    match root {
        None => comm
            .all_reduce_in_place(&mut device, &ReduceOp::Sum)
            .map(drop)
            .map_err(|e| format!("ncclAllReduce: {e:?}"))?,
        Some(root) => comm
            .broadcast_in_place(&mut device, root as i32)
            .map(drop)
            .map_err(|e| format!("ncclBroadcast: {e:?}"))?,
    }
    stream
        .clone_dtoh(&device)
        .map_err(|e| format!("copy from the device: {e:?}"))
}

impl ProcessGroup for NcclGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn all_reduce_sum(&self, buf: CommBuffer) -> Result<CommBuffer> {
        self.call(Op::AllReduce(buf), "all_reduce")
    }

    fn broadcast(&self, buf: CommBuffer, root: usize) -> Result<CommBuffer> {
        if root >= self.world_size {
            return Err(Error::Distributed {
                rank: self.rank,
                op: "broadcast",
                message: format!(
                    "root {root} is not a rank of a group of {}",
                    self.world_size
                ),
            });
        }
        self.call(Op::Broadcast(buf, root), "broadcast")
    }

    /// An all-reduce of one element: NCCL has no barrier.
    fn barrier(&self) -> Result<()> {
        self.call(Op::AllReduce(CommBuffer::F32(vec![0.0])), "barrier")
            .map(drop)
    }
}

impl Drop for NcclGroup {
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for NcclGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NcclGroup")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::LocalGroup;

    /// Runs NCCL on one GPU where there is one; says why it skipped otherwise.
    #[test]
    fn one_rank_all_reduce_or_a_clear_skip() {
        let bootstrap = LocalGroup::new(1).pop().unwrap();
        match NcclGroup::new(&bootstrap, 0) {
            Ok(group) => {
                let sum = group
                    .all_reduce_sum(CommBuffer::F32(vec![1.0, 2.0]))
                    .unwrap();
                assert_eq!(sum, CommBuffer::F32(vec![1.0, 2.0]));
            }
            Err(e @ Error::DeviceUnavailable { .. }) => {
                eprintln!("skipped: NCCL needs a GPU here: {e}");
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}
