//! A bounded cache of large host buffers: a storage that dies hands its buffer here, and the next
//! kernel output of exactly that size takes it back instead of asking the system allocator.
//!
//! Why: glibc serves allocations of a few MiB with fresh `mmap`s (or trims them off the heap when
//! freed), so every wide kernel output used to pay a page fault and a page clear per 4 KiB: a
//! third of the wide-tanh backward went to the kernel. Training loops allocate the same sizes
//! every step, so an exact-size cache gets nearly every buffer back. PyTorch's CUDA caching
//! allocator works the same way; its CPU allocator does not cache.
//!
//! Bounded ([`set_cache_limit`], 512 MiB by default; a buffer that would pass the limit is freed)
//! and releasable ([`empty_cache`]). Only buffers of at least [`MIN_BYTES`] are kept: smaller ones
//! are cheap for the allocator. Cached memory is never read before a kernel overwrites it all.

use std::any::TypeId;
use std::collections::HashMap;
use std::mem::{size_of, ManuallyDrop};
use std::ptr::NonNull;

use crate::sync::statics::{AtomicUsize, OnceLock};
use crate::sync::{Mutex, MutexGuard, Ordering};

/// Buffers smaller than this are left to the system allocator.
pub(crate) const MIN_BYTES: usize = 256 * 1024;

/// The default bound on the bytes the cache holds.
const DEFAULT_LIMIT: usize = 512 * 1024 * 1024;

/// The bound on the bytes the cache holds (Relaxed: a setting read on each `give`; a racing
/// change only decides whether one buffer is kept or freed).
static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_LIMIT);

/// One cached allocation: a `Vec<T>`'s buffer with its length forgotten.
struct RawBuf {
    ptr: NonNull<u8>,
    /// Capacity in elements of the `Vec<T>` it came from.
    cap: usize,
    /// Its size in bytes.
    bytes: usize,
    /// Rebuilds the `Vec<T>` (length 0) and drops it, with the layout it was allocated with.
    free: unsafe fn(NonNull<u8>, usize),
}

// SAFETY: a `RawBuf` owns its allocation exclusively (it was a `Vec<T>` with `T: Send`, and no
// other pointer to it survives `give`), so moving it to another thread is moving that `Vec`.
unsafe impl Send for RawBuf {}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `cap` come from a `Vec<T>` forgotten in `give`, and `free` is
        // `free_raw::<T>` for that same `T`; the buffer is dropped exactly once, here.
        unsafe { (self.free)(self.ptr, self.cap) }
    }
}

/// Drops the `Vec<T>` whose buffer is `ptr` with capacity `cap`.
///
/// # Safety
///
/// `ptr`/`cap` must be the buffer and capacity of a `Vec<T>` that was forgotten, not freed.
unsafe fn free_raw<T>(ptr: NonNull<u8>, cap: usize) {
    // SAFETY: the caller guarantees `ptr` was allocated by a `Vec<T>` with capacity `cap`;
    // length 0, so no element is dropped (they are plain floats anyway).
    drop(unsafe { Vec::from_raw_parts(ptr.as_ptr().cast::<T>(), 0, cap) });
}

/// Cached buffers by element type and capacity.
#[derive(Default)]
struct Cache {
    buffers: HashMap<(TypeId, usize), Vec<RawBuf>>,
    bytes: usize,
}

/// The cache, created on first use.
fn cache() -> MutexGuard<'static, Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Cache::default())).lock()
}

/// An empty `Vec<T>` with capacity for `len` elements: a cached buffer of exactly that size if
/// there is one, else a fresh allocation.
#[inline]
pub(crate) fn take<T: 'static>(len: usize) -> Vec<T> {
    let bytes = len.saturating_mul(size_of::<T>());
    if bytes >= MIN_BYTES {
        let raw = {
            let mut cache = cache();
            let raw = cache
                .buffers
                .get_mut(&(TypeId::of::<T>(), len))
                .and_then(Vec::pop);
            if raw.is_some() {
                cache.bytes -= bytes;
            }
            raw
        };
        if let Some(raw) = raw {
            let raw = ManuallyDrop::new(raw);
            // SAFETY: the entry was keyed by `TypeId::of::<T>()` and capacity `len`, so it is the
            // buffer of a forgotten `Vec<T>` of capacity `len`; `ManuallyDrop` keeps `RawBuf`'s
            // destructor from freeing it, so the new `Vec` is its only owner.
            return unsafe { Vec::from_raw_parts(raw.ptr.as_ptr().cast::<T>(), 0, raw.cap) };
        }
    }
    Vec::with_capacity(len)
}

/// Keeps `v`'s buffer for a later [`take`] of its capacity, or frees it (small, or the cache is
/// full).
pub(crate) fn give<T: Send + 'static>(v: Vec<T>) {
    let bytes = v.capacity().saturating_mul(size_of::<T>());
    if bytes < MIN_BYTES || size_of::<T>() == 0 {
        return;
    }
    let mut cache = cache();
    if cache.bytes + bytes > LIMIT.load(Ordering::Relaxed) {
        return; // `v` is freed on return, after the lock is released
    }
    let mut v = ManuallyDrop::new(v);
    let raw = RawBuf {
        ptr: NonNull::new(v.as_mut_ptr().cast::<u8>())
            .expect("invariant: a Vec's pointer is non-null"),
        cap: v.capacity(),
        bytes,
        free: free_raw::<T>,
    };
    cache.bytes += bytes;
    cache
        .buffers
        .entry((TypeId::of::<T>(), raw.cap))
        .or_default()
        .push(raw);
}

/// Frees every buffer the CPU backend keeps for reuse (PyTorch's `torch.cuda.empty_cache`, for
/// host memory). Tensors alive are not affected.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{cached_bytes, empty_cache, DType, Tensor};
/// drop(Tensor::ones(&[1 << 20], DType::F32)?.exp()?); // a 4 MiB output, now cached
/// empty_cache();
/// assert_eq!(cached_bytes(), 0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn empty_cache() {
    let drained = std::mem::take(&mut *cache());
    drop(drained); // the buffers are freed here, outside the lock
}

/// The bytes of host memory the CPU backend currently keeps for reuse.
///
/// # Examples
///
/// ```
/// assert!(autograd_runtime::cached_bytes() <= 512 << 20);
/// ```
pub fn cached_bytes() -> usize {
    cache().bytes
}

/// Bounds the bytes of host memory the CPU backend keeps for reuse (512 MiB by default; 0
/// disables the cache). Buffers already cached beyond a lowered limit are freed.
///
/// # Examples
///
/// ```
/// autograd_runtime::set_cache_limit(64 << 20); // keep at most 64 MiB
/// # autograd_runtime::set_cache_limit(512 << 20);
/// ```
pub fn set_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
    let evicted: Vec<RawBuf> = {
        let mut cache = cache();
        let Cache {
            buffers,
            bytes: held,
        } = &mut *cache;
        let mut evicted = Vec::new();
        for list in buffers.values_mut() {
            while *held > bytes {
                let Some(raw) = list.pop() else { break };
                *held -= raw.bytes;
                evicted.push(raw);
            }
        }
        evicted
    };
    drop(evicted); // freed outside the lock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_for_the_same_size_and_type() {
        // A size no other test uses, so parallel tests cannot take it in between.
        let len = 40_009;
        let v: Vec<f64> = vec![1.5; len];
        let ptr = v.as_ptr();
        give(v);
        // Another element type of the same byte size does not get it.
        let other: Vec<u64> = take(len);
        assert_ne!(other.as_ptr().cast::<f64>(), ptr);
        let back: Vec<f64> = take(len);
        assert_eq!(back.as_ptr(), ptr);
        assert_eq!((back.len(), back.capacity()), (0, len));
    }
}
