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
use std::mem::{ManuallyDrop, size_of};
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
#[derive(Debug)]
struct RawBuf {
    ptr: NonNull<u8>,
    /// Capacity in elements of the `Vec<T>` it came from.
    cap: usize,
    /// Its size in bytes.
    bytes: usize,
    /// The `T` of that `Vec<T>`.
    elem: TypeId,
    /// Rebuilds the `Vec<T>` (length 0) and drops it, with the layout it was allocated with.
    free: unsafe fn(NonNull<u8>, usize),
}

// SAFETY: a `RawBuf` owns its allocation exclusively (it was a `Vec<T>` with `T: Send`, and no
// other pointer to it survives `from_vec`), so moving it to another thread is moving that `Vec`.
unsafe impl Send for RawBuf {}

impl RawBuf {
    /// Takes over `v`'s buffer (its elements are forgotten: plain floats, nothing to drop).
    fn from_vec<T: Send + 'static>(v: Vec<T>) -> RawBuf {
        let mut v = ManuallyDrop::new(v);
        RawBuf {
            ptr: NonNull::new(v.as_mut_ptr().cast::<u8>())
                .expect("invariant: a Vec's pointer is non-null"),
            cap: v.capacity(),
            bytes: v.capacity() * size_of::<T>(),
            elem: TypeId::of::<T>(),
            free: free_raw::<T>,
        }
    }

    /// The buffer as an empty `Vec<T>` again.
    ///
    /// # Panics
    ///
    /// If it did not come from a `Vec<T>` (an invariant: the cache keys buffers by type).
    fn into_vec<T: 'static>(self) -> Vec<T> {
        assert!(
            self.elem == TypeId::of::<T>(),
            "invariant: a cached buffer is taken back as the type it was given as"
        );
        let raw = ManuallyDrop::new(self);
        // SAFETY: `ptr`/`cap` are the buffer and capacity of a forgotten `Vec<T>` (checked
        // just above: same `T`), and `ManuallyDrop` keeps `RawBuf`'s destructor from freeing
        // it, so the new `Vec` is its only owner.
        unsafe { Vec::from_raw_parts(raw.ptr.as_ptr().cast::<T>(), 0, raw.cap) }
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `cap` come from a `Vec<T>` forgotten in `from_vec`, and `free` is
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
#[derive(Debug, Default)]
struct Cache {
    buffers: HashMap<(TypeId, usize), Vec<RawBuf>>,
    /// The bytes of all cached buffers.
    bytes: usize,
}

impl Cache {
    /// A buffer of exactly `key` (type, capacity), or on a miss the buffers evicted to make
    /// room for a fresh one of `bytes` (to be freed once the lock is released).
    fn pop(&mut self, key: (TypeId, usize), bytes: usize) -> Result<RawBuf, Vec<RawBuf>> {
        match self.buffers.get_mut(&key).and_then(Vec::pop) {
            Some(raw) => {
                self.bytes -= raw.bytes;
                Ok(raw)
            }
            None => Err(self.evict(bytes)),
        }
    }

    /// Keeps `raw` unless that would pass `limit` bytes; then hands it back (to be freed).
    fn push(&mut self, raw: RawBuf, limit: usize) -> Option<RawBuf> {
        if self.bytes + raw.bytes > limit {
            return Some(raw);
        }
        self.bytes += raw.bytes;
        self.buffers
            .entry((raw.elem, raw.cap))
            .or_default()
            .push(raw);
        None
    }

    /// Removes cached buffers until `want` bytes are out (or the cache is empty) and returns
    /// them, to be freed once the lock is released.
    fn evict(&mut self, want: usize) -> Vec<RawBuf> {
        let mut out = Vec::new();
        let mut freed = 0;
        for list in self.buffers.values_mut() {
            while freed < want {
                let Some(raw) = list.pop() else { break };
                freed += raw.bytes;
                out.push(raw);
            }
            if freed >= want {
                break;
            }
        }
        self.bytes -= freed;
        out
    }
}

/// The cache, created on first use.
fn cache() -> MutexGuard<'static, Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Cache::default())).lock()
}

/// An empty `Vec<T>` with capacity for `len` elements: a cached buffer of exactly that size if
/// there is one, else a fresh allocation. A miss first frees cached buffers of other sizes
/// (as many bytes as it asks for), so sizes a workload stopped using go back to the system
/// allocator instead of sitting in the cache.
#[inline]
pub(crate) fn take<T: 'static>(len: usize) -> Vec<T> {
    let bytes = len.saturating_mul(size_of::<T>());
    if bytes < MIN_BYTES {
        return Vec::with_capacity(len);
    }
    let popped = cache().pop((TypeId::of::<T>(), len), bytes);
    match popped {
        Ok(raw) => raw.into_vec(),
        Err(evicted) => {
            drop(evicted); // freed outside the lock
            Vec::with_capacity(len)
        }
    }
}

/// `len` zeros in a buffer from [`take`].
pub(crate) fn zeroed<T: Clone + Default + 'static>(len: usize) -> Vec<T> {
    let mut v = take(len);
    v.resize(len, T::default());
    v
}

/// Keeps `v`'s buffer for a later [`take`] of its capacity, or frees it (small, or the cache is
/// full).
pub(crate) fn give<T: Send + 'static>(v: Vec<T>) {
    if v.capacity().saturating_mul(size_of::<T>()) < MIN_BYTES || size_of::<T>() == 0 {
        return;
    }
    let refused = cache().push(RawBuf::from_vec(v), LIMIT.load(Ordering::Relaxed));
    drop(refused); // freed outside the lock
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
        let over = cache.bytes.saturating_sub(bytes);
        cache.evict(over)
    };
    drop(evicted); // freed outside the lock
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(len: usize) -> RawBuf {
        RawBuf::from_vec(vec![1.5f64; len])
    }

    #[test]
    fn a_cached_buffer_comes_back_for_its_type_and_size_only() {
        let mut cache = Cache::default();
        let given = raw(40_000);
        let ptr = given.ptr;
        assert!(cache.push(given, usize::MAX).is_none());
        assert_eq!(cache.bytes, 320_000);
        // Same byte size, other type: a miss, which evicts the f64 buffer to make room.
        let evicted = cache
            .pop((TypeId::of::<u64>(), 40_000), 320_000)
            .expect_err("no u64 buffers");
        assert_eq!((evicted.len(), cache.bytes), (1, 0));
        assert!(
            cache
                .push(evicted.into_iter().next().expect("one"), usize::MAX)
                .is_none()
        );
        let back = cache
            .pop((TypeId::of::<f64>(), 40_000), 320_000)
            .expect("the f64 buffer");
        assert_eq!((back.ptr, cache.bytes), (ptr, 0));
        let v: Vec<f64> = back.into_vec();
        assert_eq!((v.len(), v.capacity()), (0, 40_000));
    }

    #[test]
    fn the_limit_bounds_the_cache_and_eviction_frees_what_a_miss_asks_for() {
        let mut cache = Cache::default();
        assert!(cache.push(raw(40_000), 500_000).is_none());
        // A second buffer would pass the limit: handed back to be freed.
        assert!(cache.push(raw(40_000), 500_000).is_some());
        assert!(cache.push(raw(20_000), 500_000).is_none());
        assert_eq!(cache.bytes, 480_000);
        let evicted = cache
            .pop((TypeId::of::<f64>(), 30_000), 240_000)
            .expect_err("no buffer of that size");
        let freed: usize = evicted.iter().map(|r| r.bytes).sum();
        assert!(freed >= 240_000);
        assert_eq!(cache.bytes, 480_000 - freed);
    }

    #[test]
    fn take_and_give_round_trip_through_the_global_cache() {
        // Other tests may evict it in between; the result is correct either way.
        let v: Vec<f32> = take(100_003);
        assert!(v.capacity() >= 100_003 && v.is_empty());
        give(v);
        let z: Vec<f32> = zeroed(100_003);
        assert!(z.len() == 100_003 && z.iter().all(|&x| x == 0.0));
    }
}
