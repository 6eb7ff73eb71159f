//! Intra-op parallelism, PyTorch's `at::parallel_for`: a kernel over `n` elements is cut into
//! fixed chunks of [`GRAIN`] elements that rayon's pool runs in any order; below one grain the
//! kernel runs inline on the calling thread.
//!
//! Chunk boundaries depend only on `n`, never on the number of threads, and reductions combine
//! their per-chunk partial results in chunk order on the calling thread. So every kernel gives
//! the same bits for the same input whatever the pool size (PyTorch does not promise this for
//! its reductions; we do, and `reduce/tests.rs` checks it).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::{Error, Result};

/// Elements per chunk: below this a kernel runs inline (PyTorch's `GRAIN_SIZE`, 32,768).
pub(crate) const GRAIN: usize = 32_768;

/// Whether work of `n` elements is worth handing to the pool.
#[inline]
pub(crate) fn is_parallel(n: usize) -> bool {
    n > GRAIN && rayon::current_num_threads() > 1
}

/// A `Vec` of `len` elements written chunk by chunk: `fill(start, chunk)` must initialise every
/// element of `chunk`, which holds the elements `start..start + chunk.len()`. Chunks run on the
/// pool when `len` exceeds one grain. The buffer comes from the buffer cache when it holds one
/// of this size.
///
/// # Safety
///
/// `fill` must write every element of every chunk it is given (the `Vec` is then read as
/// initialised). A panic in `fill` is sound: the `Vec` is dropped with length 0.
#[inline]
pub(crate) unsafe fn collect_chunks<T, F>(len: usize, fill: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize, &mut [MaybeUninit<T>]) + Sync,
{
    let mut v = super::buffer_cache::take(len);
    let spare = &mut v.spare_capacity_mut()[..len];
    if is_parallel(len) {
        spare
            .par_chunks_mut(GRAIN)
            .enumerate()
            .for_each(|(i, chunk)| fill(i * GRAIN, chunk));
    } else {
        fill(0, spare);
    }
    // SAFETY: the capacity is at least `len`, and the caller promises that `fill` initialised
    // each of the first `len` elements (the chunks above cover `0..len` exactly once).
    unsafe { v.set_len(len) };
    v
}

/// Runs `f(start, chunk)` over `data` in chunks of [`GRAIN`] (on the pool when there are
/// several).
#[inline]
pub(crate) fn for_chunks_mut<T, F>(data: &mut [T], f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    if is_parallel(data.len()) {
        data.par_chunks_mut(GRAIN)
            .enumerate()
            .for_each(|(i, chunk)| f(i * GRAIN, chunk));
    } else {
        f(0, data);
    }
}

/// `reduce(chunk)` for every [`GRAIN`]-sized chunk of `data`, in chunk order. The chunks are
/// fixed by `data.len()` alone, so combining the results in order is deterministic.
#[inline]
pub(crate) fn map_chunks<T, R, F>(data: &[T], reduce: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> R + Sync + Send,
{
    if is_parallel(data.len()) {
        data.par_chunks(GRAIN).map(reduce).collect()
    } else {
        data.chunks(GRAIN).map(reduce).collect()
    }
}

/// Sets the number of threads intra-op parallel kernels use (PyTorch's
/// `torch.set_num_threads`). Call it once, before the first kernel runs on more than one grain;
/// by default the pool has one thread per hardware thread (or `RAYON_NUM_THREADS`).
///
/// Matrix products (through `gemm`) and element-wise, reduction and copy kernels all share
/// this pool. Results do not depend on the number of threads.
///
/// # Errors
///
/// [`Error::ThreadPool`] if `n` is 0 or the pool has already started with another size.
///
/// # Examples
///
/// ```
/// autograd_runtime::set_num_threads(autograd_runtime::num_threads())?;
/// assert!(autograd_runtime::set_num_threads(0).is_err());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::ThreadPool {
            requested: n,
            reason: "the number of threads must be at least 1".into(),
        });
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("autograd-intra-op-{i}"))
        .build_global()
    {
        Ok(()) => Ok(()),
        Err(_) if rayon::current_num_threads() == n => Ok(()),
        Err(_) => Err(Error::ThreadPool {
            requested: n,
            reason: format!(
                "the intra-op pool already runs {} threads; call set_num_threads before any \
                 parallel kernel runs",
                rayon::current_num_threads()
            ),
        }),
    }
}

/// The number of threads intra-op parallel kernels use (PyTorch's `torch.get_num_threads`).
///
/// # Examples
///
/// ```
/// assert!(autograd_runtime::num_threads() >= 1);
/// ```
pub fn num_threads() -> usize {
    rayon::current_num_threads()
}
