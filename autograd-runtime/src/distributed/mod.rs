//! Data-parallel training: the [`ProcessGroup`] transport trait and
//! [`DistributedDataParallel`], PyTorch's DDP reducer built on post-accumulate-grad hooks and
//! final callbacks.
//!
//! Every rank (process) holds a replica of the parameters and runs forward and backward on its own
//! shard of the global batch. [`DistributedDataParallel`] hooks every parameter's gradient
//! accumulation, packs gradients into buckets (reverse registration order, 25 MB by default),
//! hands each bucket to a communication thread for an all-reduce the moment its last gradient
//! arrives — while the engine keeps running backward on the rest of the graph — and, from a final
//! callback ([`queue_callback`](crate::queue_callback)), waits for every bucket and writes the
//! averaged gradients back. When `backward()` returns, every rank holds the same gradients: the
//! gradient of the mean loss over the global batch.
//!
//! Transports:
//!
//! * [`LocalGroup`]: ranks are threads of one process. A **test double**: it lets the reducer's
//!   logic (buckets, overlap, unused parameters, `no_sync`, failures) run under `cargo test` on
//!   any machine. Not a way to speed anything up.
//! * `MpiGroup` (cargo feature `mpi`): processes started by `mpirun`, through the `mpi` crate and
//!   the system's MPI library (OpenMPI).
//! * `NcclGroup` (cargo feature `nccl`): one GPU per rank through cudarc's NCCL bindings.
//!
//! # Protocol of one step
//!
//! 1. The first gradient hook of a backward pass queues the step's final callback.
//! 2. Each hook copies its parameter's gradient into its bucket; when a bucket is complete, it and
//!    every complete bucket after it *in bucket order* are sent to the communication thread. All
//!    ranks therefore launch the same all-reduces in the same order, whatever order their engine
//!    ran the hooks in.
//! 3. Each bucket carries a trailer after the gradients: one error flag per rank and one "used"
//!    flag per parameter. A rank that hit an error (a gradient of the wrong shape, a parameter
//!    without a gradient) still takes part in every all-reduce, with its flag set, so that every
//!    rank learns of the error in the same step and returns it instead of hanging.
//! 4. The final callback marks parameters that got no gradient (zeros with
//!    [`DdpOptions::find_unused_parameters`], an error otherwise), launches the remaining buckets,
//!    waits for every result (each within [`DdpOptions::timeout`]), and writes
//!    `sum / world_size` into each used parameter's `.grad`. A parameter no rank used keeps its
//!    gradient unchanged, as in PyTorch.
//!
//! Limits: one backward pass at a time per [`DistributedDataParallel`]; a pass that reaches none
//! of its parameters does not synchronise (its step starts with the first gradient hook); a pass
//! that fails inside the engine after some buckets were sent leaves the ranks' collectives out of
//! step, and the next step fails with a timeout. Gradients are staged through host buffers, also
//! for CUDA tensors.
//!
//! # Examples
//!
//! Two ranks as two threads; each computes the loss of its own shard:
//!
//! ```
//! use autograd_runtime::distributed::{DdpOptions, DistributedDataParallel, LocalGroup, ProcessGroup};
//! use autograd_runtime::Tensor;
//!
//! let ranks = LocalGroup::new(2);
//! let grads: Vec<Vec<f64>> = std::thread::scope(|s| {
//!     let handles: Vec<_> = ranks
//!         .into_iter()
//!         .map(|group| {
//!             s.spawn(move || -> autograd_runtime::Result<Vec<f64>> {
//!                 let rank = group.rank() as f64;
//!                 // rank 1 starts from other weights: DDP broadcasts rank 0's.
//!                 let w = Tensor::from_vec(vec![1.0 + rank, 2.0], &[2])?.requires_grad_(true)?;
//!                 let ddp = DistributedDataParallel::new(&[w.clone()], group, DdpOptions::new())?;
//!                 let x = Tensor::from_vec(vec![rank + 1.0, 1.0], &[2])?; // this rank's shard
//!                 w.mul(&x)?.sum()?.backward()?;
//!                 drop(ddp);
//!                 w.grad().unwrap().to_vec::<f64>()
//!             })
//!         })
//!         .collect();
//!     handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
//! });
//! // d/dw of the mean of the two ranks' losses: the mean of their inputs.
//! assert_eq!(grads[0], vec![1.5, 1.0]);
//! assert_eq!(grads[0], grads[1]);
//! ```

mod bucket;
mod comm_thread;
mod ddp;
mod local_group;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "nccl")]
mod nccl;
mod options;
mod reducer;
mod stats;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::{DType, Result};

pub use ddp::{DistributedDataParallel, NoSyncGuard};
pub use local_group::LocalGroup;
#[cfg(feature = "mpi")]
pub use mpi::MpiGroup;
#[cfg(feature = "nccl")]
pub use nccl::NcclGroup;
pub use options::DdpOptions;
pub use stats::StepStats;

/// A set of processes (ranks) that run collectives together: PyTorch's `ProcessGroup`.
///
/// Every rank must call the same collectives, with buffers of the same dtype and length, in the
/// same order. A collective that a peer does not join within the group's timeout, that a peer
/// left, or that does not match across ranks returns [`Error::Distributed`](crate::Error) instead
/// of hanging. After such an error the group may be unusable; create a new one.
///
/// Buffers are passed by value and returned filled: a transport can move them to its own
/// communication thread, and one that gives up on a timed-out collective can keep (leak) them
/// safely while the network might still write into them.
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::{CommBuffer, LocalGroup, ProcessGroup};
///
/// let sums: Vec<CommBuffer> = std::thread::scope(|s| {
///     let handles: Vec<_> = LocalGroup::new(3)
///         .into_iter()
///         .map(|g| s.spawn(move || g.all_reduce_sum(CommBuffer::F32(vec![g.rank() as f32, 1.0]))))
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
/// });
/// assert!(sums.iter().all(|b| *b == CommBuffer::F32(vec![3.0, 3.0])));
/// ```
pub trait ProcessGroup: Send + Sync + fmt::Debug {
    /// This process's rank, `0..world_size()`.
    fn rank(&self) -> usize;

    /// Number of ranks in the group.
    fn world_size(&self) -> usize;

    /// Element-wise sum of `buf` over all ranks; every rank receives the same sum.
    ///
    /// # Errors
    ///
    /// [`Error::Distributed`](crate::Error) on a timeout, a peer that left, or buffers that do
    /// not match across ranks.
    fn all_reduce_sum(&self, buf: CommBuffer) -> Result<CommBuffer>;

    /// Rank `root`'s `buf` on every rank (the others' contents are ignored, their length and
    /// dtype must match).
    ///
    /// # Errors
    ///
    /// As [`ProcessGroup::all_reduce_sum`], and for a `root` outside the group.
    fn broadcast(&self, buf: CommBuffer, root: usize) -> Result<CommBuffer>;

    /// Returns once every rank has entered the barrier.
    ///
    /// # Errors
    ///
    /// As [`ProcessGroup::all_reduce_sum`].
    fn barrier(&self) -> Result<()>;
}

impl<P: ProcessGroup + ?Sized> ProcessGroup for crate::sync::Arc<P> {
    fn rank(&self) -> usize {
        (**self).rank()
    }
    fn world_size(&self) -> usize {
        (**self).world_size()
    }
    fn all_reduce_sum(&self, buf: CommBuffer) -> Result<CommBuffer> {
        (**self).all_reduce_sum(buf)
    }
    fn broadcast(&self, buf: CommBuffer, root: usize) -> Result<CommBuffer> {
        (**self).broadcast(buf, root)
    }
    fn barrier(&self) -> Result<()> {
        (**self).barrier()
    }
}

/// A host buffer of `f32` or `f64` values, the unit [`ProcessGroup`] collectives work on.
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::CommBuffer;
/// use autograd_runtime::DType;
/// let b = CommBuffer::zeros(DType::F64, 3);
/// assert_eq!((b.dtype(), b.len()), (DType::F64, 3));
/// assert_eq!(b, CommBuffer::F64(vec![0.0; 3]));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CommBuffer {
    /// Single precision.
    F32(Vec<f32>),
    /// Double precision.
    F64(Vec<f64>),
}

impl CommBuffer {
    /// `len` zeros of `dtype`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{distributed::CommBuffer, DType};
    /// assert_eq!(CommBuffer::zeros(DType::F32, 2), CommBuffer::F32(vec![0.0, 0.0]));
    /// ```
    pub fn zeros(dtype: DType, len: usize) -> CommBuffer {
        match dtype {
            DType::F64 => CommBuffer::F64(vec![0.0; len]),
            // Every other dtype: an `f32` buffer (the reducer refuses gradients it cannot
            // carry exactly before any buffer is filled).
            _ => CommBuffer::F32(vec![0.0; len]),
        }
    }

    /// Number of elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::distributed::CommBuffer;
    /// assert_eq!(CommBuffer::F32(vec![1.0; 4]).len(), 4);
    /// ```
    pub fn len(&self) -> usize {
        match self {
            CommBuffer::F32(v) => v.len(),
            CommBuffer::F64(v) => v.len(),
        }
    }

    /// Whether the buffer has no elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::distributed::CommBuffer;
    /// assert!(CommBuffer::F64(Vec::new()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{distributed::CommBuffer, DType};
    /// assert_eq!(CommBuffer::F32(vec![]).dtype(), DType::F32);
    /// ```
    pub fn dtype(&self) -> DType {
        match self {
            CommBuffer::F32(_) => DType::F32,
            CommBuffer::F64(_) => DType::F64,
        }
    }

    /// Element `i` as `f64` (exact for both dtypes).
    pub(crate) fn get(&self, i: usize) -> f64 {
        match self {
            CommBuffer::F32(v) => f64::from(v[i]),
            CommBuffer::F64(v) => v[i],
        }
    }

    /// Sets element `i` (rounded to `f32` for an `F32` buffer; used for small integer flags).
    pub(crate) fn set(&mut self, i: usize, value: f64) {
        match self {
            // Flags are small integers, exact in f32.
            CommBuffer::F32(v) => v[i] = value as f32,
            CommBuffer::F64(v) => v[i] = value,
        }
    }

    /// Sets every element to zero, keeping the allocation.
    pub(crate) fn clear(&mut self) {
        match self {
            CommBuffer::F32(v) => v.fill(0.0),
            CommBuffer::F64(v) => v.fill(0.0),
        }
    }

    /// `"<len> <dtype>"`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} {}", self.len(), self.dtype())
    }
}
