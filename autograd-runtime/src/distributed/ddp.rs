//! `DistributedDataParallel`: the user-facing handle of the reducer and the `no_sync` guard (its
//! options are in `options.rs`, its per-step figures in `stats.rs`).

use std::fmt;

use super::bucket;
use super::comm_thread::CommThread;
use super::options::DdpOptions;
use super::reducer::Reducer;
use super::stats::StepStats;
use super::{CommBuffer, ProcessGroup};
use crate::sync::{Arc, Ordering};
use crate::{DType, Error, HookHandle, Result, Tensor, no_grad};

/// Data-parallel training, PyTorch's `DistributedDataParallel`: keeps the gradients of a set of
/// parameters identical on every rank of a [`ProcessGroup`].
///
/// [`new`](Self::new) broadcasts rank 0's parameter values, then hooks every parameter's
/// gradient accumulation. In each `backward()`, gradients are packed into buckets (reverse
/// registration order, [`DdpOptions::bucket_cap_bytes`]) and each bucket's all-reduce starts on
/// a communication thread as soon as it is full; a final callback of the backward pass waits for
/// the last bucket and writes `sum / world_size` into every `.grad`. When `backward()` returns,
/// every rank holds the gradient of the mean loss over all ranks' batches, bit-identical across
/// ranks, so identical optimizer steps keep the replicas identical.
///
/// Errors are collective: a gradient of an unexpected shape, or a parameter without a gradient
/// (unless [`DdpOptions::find_unused_parameters`]), makes `backward()` fail on *every* rank; a
/// rank that fails before its collectives or dies makes the others fail after the timeout.
///
/// Dropping the handle removes the hooks and stops the communication thread.
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::{DdpOptions, DistributedDataParallel, LocalGroup};
/// use autograd_runtime::Tensor;
///
/// // A one-rank group: the gradient is left as computed.
/// let group = LocalGroup::new(1).pop().unwrap();
/// let w = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
/// let ddp = DistributedDataParallel::new(&[w.clone()], group, DdpOptions::new())?;
/// w.mul(&w)?.sum()?.backward()?;
/// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
/// assert_eq!(ddp.last_step_stats().buckets, 1);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct DistributedDataParallel {
    pub(crate) reducer: Arc<Reducer>,
    group: Arc<dyn ProcessGroup>,
    /// One post-accumulate-grad hook per parameter; removed on drop.
    hooks: Vec<HookHandle>,
}

impl DistributedDataParallel {
    /// Wraps `params` (leaves that require grad, `f32` or `f64`, the same list in the same order
    /// on every rank) for data-parallel training over `group`.
    ///
    /// This is a collective: every rank must call it. It checks that all ranks passed parameters
    /// of the same shapes and dtypes and (by default) copies rank 0's values to every rank.
    ///
    /// # Errors
    ///
    /// [`Error::Distributed`] if the ranks' parameters differ or a collective fails;
    /// [`Error::HookWithoutRequiresGrad`] / [`Error::PostAccumulateGradHookOnNonLeaf`] for a
    /// parameter that is not a leaf requiring grad; [`Error::ThreadSpawn`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::distributed::{DdpOptions, DistributedDataParallel, LocalGroup};
    /// use autograd_runtime::Tensor;
    /// let group = LocalGroup::new(1).pop().unwrap();
    /// let x = Tensor::from_vec(vec![1.0f64], &[1])?; // does not require grad
    /// assert!(DistributedDataParallel::new(&[x], group, DdpOptions::new()).is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(
        params: &[Tensor],
        group: impl ProcessGroup + 'static,
        options: DdpOptions,
    ) -> Result<DistributedDataParallel> {
        let group: Arc<dyn ProcessGroup> = Arc::new(group);
        let rank = group.rank();
        let world_size = group.world_size();
        for param in params {
            if !param.requires_grad() {
                return Err(Error::HookWithoutRequiresGrad);
            }
            if !param.is_leaf() {
                return Err(Error::PostAccumulateGradHookOnNonLeaf);
            }
        }
        check_same_parameters(&*group, params)?;
        if options.broadcast_parameters && world_size > 1 {
            broadcast_parameters(&*group, params)?;
        }
        let (buckets, location) = bucket::plan(params, options.bucket_cap_bytes, world_size);
        let (comm, done) = CommThread::spawn(group.clone())?;
        let reducer = Arc::new(Reducer::new(
            rank,
            world_size,
            params.to_vec(),
            buckets,
            location,
            options,
            comm,
            done,
        ));
        let mut hooks = Vec::with_capacity(params.len());
        for (index, param) in params.iter().enumerate() {
            // Weak: the hook lives on the parameter, which the reducer holds.
            let weak = Arc::downgrade(&reducer);
            hooks.push(param.register_post_accumulate_grad_hook(move |_| {
                if let Some(reducer) = weak.upgrade() {
                    reducer.on_grad_ready(index);
                }
            })?);
        }
        Ok(DistributedDataParallel {
            reducer,
            group,
            hooks,
        })
    }

    /// This process's rank.
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::distributed::*;
    /// let ddp = DistributedDataParallel::new(&[], LocalGroup::new(1).pop().unwrap(), DdpOptions::new())?;
    /// assert_eq!((ddp.rank(), ddp.world_size()), (0, 1));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.reducer.rank
    }

    /// Number of ranks.
    ///
    /// # Examples
    ///
    /// See [`rank`](Self::rank).
    pub fn world_size(&self) -> usize {
        self.reducer.world_size
    }

    /// The process group, for the program's own collectives (e.g. summing a metric) between
    /// steps.
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::distributed::*;
    /// let ddp = DistributedDataParallel::new(&[], LocalGroup::new(1).pop().unwrap(), DdpOptions::new())?;
    /// ddp.group().barrier()?;
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn group(&self) -> &Arc<dyn ProcessGroup> {
        &self.group
    }

    /// The parameters, in registration order.
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::{distributed::*, Tensor};
    /// let w = Tensor::zeros(&[2], autograd_runtime::DType::F32)?.requires_grad_(true)?;
    /// let ddp = DistributedDataParallel::new(&[w], LocalGroup::new(1).pop().unwrap(), DdpOptions::new())?;
    /// assert_eq!(ddp.parameters().len(), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn parameters(&self) -> &[Tensor] {
        &self.reducer.params
    }

    /// The buckets as lists of parameter indices, in the order they are all-reduced.
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::{distributed::*, DType, Tensor};
    /// let p: Vec<Tensor> = (0..3)
    ///     .map(|_| Tensor::zeros(&[256], DType::F32)?.requires_grad_(true))
    ///     .collect::<autograd_runtime::Result<_>>()?;
    /// let group = LocalGroup::new(1).pop().unwrap();
    /// let ddp = DistributedDataParallel::new(&p, group, DdpOptions::new().bucket_cap_bytes(2048))?;
    /// assert_eq!(ddp.buckets(), vec![vec![2, 1], vec![0]]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn buckets(&self) -> Vec<Vec<usize>> {
        self.reducer
            .buckets
            .iter()
            .map(|b| b.params.clone())
            .collect()
    }

    /// Skips communication while the guard lives: gradients accumulate locally in `.grad`, and
    /// the first backward after the guard is dropped all-reduces the accumulated sum (PyTorch's
    /// `no_sync()`, for gradient accumulation).
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::{distributed::*, Tensor};
    /// let w = Tensor::from_vec(vec![1.0f64], &[1])?.requires_grad_(true)?;
    /// let ddp = DistributedDataParallel::new(&[w.clone()], LocalGroup::new(1).pop().unwrap(), DdpOptions::new())?;
    /// {
    ///     let _local = ddp.no_sync();
    ///     w.mul_scalar(2.0)?.sum()?.backward()?; // no communication
    /// }
    /// w.mul_scalar(3.0)?.sum()?.backward()?; // all-reduces 2 + 3
    /// assert_eq!(w.grad().unwrap().to_vec::<f64>()?, vec![5.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn no_sync(&self) -> NoSyncGuard<'_> {
        // Release: publishes the flag to the hooks' Acquire load in `Reducer::on_grad_ready`.
        let previous = self.reducer.require_sync.swap(false, Ordering::AcqRel);
        NoSyncGuard {
            ddp: self,
            previous,
        }
    }

    /// Figures of the last step that synchronised successfully.
    ///
    /// # Examples
    ///
    /// See [`DistributedDataParallel`].
    pub fn last_step_stats(&self) -> StepStats {
        *self.reducer.stats.lock()
    }
}

impl Drop for DistributedDataParallel {
    fn drop(&mut self) {
        for hook in self.hooks.drain(..) {
            hook.remove();
        }
    }
}

impl fmt::Debug for DistributedDataParallel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedDataParallel")
            .field("rank", &self.reducer.rank)
            .field("world_size", &self.reducer.world_size)
            .field("parameters", &self.reducer.params.len())
            .field("buckets", &self.buckets())
            .finish_non_exhaustive()
    }
}

/// Returned by [`DistributedDataParallel::no_sync`]; communication resumes when it is dropped.
#[derive(Debug)]
#[must_use = "communication resumes as soon as the guard is dropped"]
pub struct NoSyncGuard<'a> {
    ddp: &'a DistributedDataParallel,
    previous: bool,
}

impl Drop for NoSyncGuard<'_> {
    fn drop(&mut self) {
        // Release: pairs with the hooks' Acquire load in `Reducer::on_grad_ready`.
        self.ddp
            .reducer
            .require_sync
            .store(self.previous, Ordering::Release);
    }
}

/// Fails on every rank unless all ranks registered parameters of the same count, shapes and
/// dtypes: rank 0's fingerprint is broadcast, each rank compares, and a flag is summed.
fn check_same_parameters(group: &dyn ProcessGroup, params: &[Tensor]) -> Result<()> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325; // FNV-1a
    let mut mix = |v: u64| {
        hash ^= v;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    };
    for p in params {
        mix(p.shape().len() as u64);
        p.shape().iter().for_each(|&d| mix(d as u64));
        mix(p.dtype().size_of() as u64);
    }
    let total: usize = params.iter().map(Tensor::numel).sum();
    // 52 bits of the hash: exact in an f64.
    let mine = vec![params.len() as f64, total as f64, (hash >> 12) as f64];
    let theirs = group.broadcast(CommBuffer::F64(mine.clone()), 0)?;
    let differs = theirs != CommBuffer::F64(mine.clone());
    let flags = group.all_reduce_sum(CommBuffer::F64(vec![f64::from(u8::from(differs))]))?;
    if flags.get(0) != 0.0 {
        return Err(Error::Distributed {
            rank: group.rank(),
            op: "DistributedDataParallel::new",
            message: format!(
                "the ranks' parameters differ: {} rank(s) have other shapes or dtypes than rank 0 \
                 (this rank: {} parameters, {} elements{})",
                flags.get(0),
                mine[0],
                mine[1],
                if differs { ", differs from rank 0" } else { "" }
            ),
        });
    }
    Ok(())
}

/// Sets every rank's parameters to rank 0's values (one broadcast per dtype).
fn broadcast_parameters(group: &dyn ProcessGroup, params: &[Tensor]) -> Result<()> {
    for dtype in [DType::F32, DType::F64] {
        let of_dtype: Vec<&Tensor> = params.iter().filter(|p| p.dtype() == dtype).collect();
        if of_dtype.is_empty() {
            continue;
        }
        let mut buffer = CommBuffer::zeros(dtype, 0);
        for p in &of_dtype {
            match &mut buffer {
                CommBuffer::F32(v) => v.extend(p.to_vec::<f32>()?),
                CommBuffer::F64(v) => v.extend(p.to_vec::<f64>()?),
            }
        }
        let buffer = group.broadcast(buffer, 0)?;
        let _guard = no_grad();
        let mut offset = 0;
        for p in of_dtype {
            let range = offset..offset + p.numel();
            offset = range.end;
            let value = match &buffer {
                CommBuffer::F32(v) => Tensor::from_vec(v[range].to_vec(), p.shape())?,
                CommBuffer::F64(v) => Tensor::from_vec(v[range].to_vec(), p.shape())?,
            };
            let value = value.to(p.device())?;
            p.zero_()?;
            p.add_(&value)?;
        }
    }
    Ok(())
}
