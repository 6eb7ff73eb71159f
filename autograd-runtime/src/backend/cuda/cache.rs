//! Device memory kept for reuse: PyTorch's CUDA caching allocator, for one stream per device.
//!
//! A storage that dies hands its allocation here ([`BlockCache::give`]) and the next request of
//! the same dtype and rounded size takes it back ([`BlockCache::take`]) without a driver call.
//! Asking the driver (`cuMemAllocAsync`, `cuMemFreeAsync`) cost about 1.6 µs per small op on an
//! H100, a quarter of a scalar op's whole launch.
//!
//! Why reuse is safe at once, with no event: every op of a device is issued on its one stream, so
//! the work that used a block was issued before the block came back, and the work of its next
//! owner is issued after, and the stream runs them in that order (PyTorch's allocator reasons the
//! same way for a block used on one stream only). The host never reads a block behind the
//! stream's back: copies to the host are issued on the stream too.
//!
//! Sizes are rounded up ([`rounded_len`]) so that nearby requests share blocks: to 512 bytes up to
//! 1 MiB (PyTorch's small-block rounding), above that to an eighth of the next power of two (at
//! most 12.5% more than asked). The cache is unbounded, as PyTorch's: a training loop's steps ask
//! for the same sizes, so it holds the peak of one step. [`empty_cache`](crate::cuda::empty_cache)
//! gives it back to the driver, and an allocation that fails for lack of memory does so and
//! tries once more.

use std::collections::HashMap;

use super::data::DeviceData;
use crate::DType;
use crate::sync::Mutex;

/// Requests up to this many bytes are rounded to [`SMALL_ROUND`] bytes.
const SMALL_LIMIT: usize = 1 << 20;
/// The rounding of small requests, in bytes (PyTorch's `kMinBlockSize`).
const SMALL_ROUND: usize = 512;

/// The capacity, in elements of `elem_bytes` bytes, of the block a request for `n` elements
/// gets (`n` at least 1).
pub(super) fn rounded_len(n: usize, elem_bytes: usize) -> usize {
    let rounded = n.checked_mul(elem_bytes).and_then(|bytes| {
        let round = if bytes <= SMALL_LIMIT {
            SMALL_ROUND
        } else {
            (bytes.checked_next_power_of_two()? / 8).max(SMALL_ROUND)
        };
        bytes.checked_next_multiple_of(round)
    });
    // A request too large to round is too large for any device: the driver refuses it as asked.
    rounded.map_or(n, |bytes| bytes.div_ceil(elem_bytes))
}

/// The free blocks of one device, by dtype and capacity.
#[derive(Debug, Default)]
pub(crate) struct BlockCache {
    free: Mutex<Blocks>,
}

#[derive(Debug, Default)]
struct Blocks {
    by_size: HashMap<(DType, usize), Vec<DeviceData>>,
    /// The bytes of every block in `by_size`.
    bytes: usize,
}

impl BlockCache {
    /// A free block of `dtype` holding exactly `cap` elements, if one is cached.
    pub(super) fn take(&self, dtype: DType, cap: usize) -> Option<DeviceData> {
        let mut free = self.free.lock();
        let data = free.by_size.get_mut(&(dtype, cap))?.pop()?;
        free.bytes -= data.bytes();
        Some(data)
    }

    /// Keeps `data` for the next request of its dtype and capacity.
    pub(super) fn give(&self, data: DeviceData) {
        let key = (data.dtype(), data.len());
        let mut free = self.free.lock();
        free.bytes += data.bytes();
        free.by_size.entry(key).or_default().push(data);
    }

    /// Every cached block, removed from the cache: dropping them frees them (in stream order).
    pub(super) fn drain(&self) -> Vec<DeviceData> {
        let mut free = self.free.lock();
        free.bytes = 0;
        free.by_size
            .drain()
            .flat_map(|(_, blocks)| blocks)
            .collect()
    }

    /// The bytes of the cached blocks.
    pub(crate) fn bytes(&self) -> usize {
        self.free.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::rounded_len;

    #[test]
    fn small_requests_round_to_512_bytes_and_large_ones_to_an_eighth_of_a_power_of_two() {
        assert_eq!(rounded_len(1, 4), 128);
        assert_eq!(rounded_len(128, 4), 128);
        assert_eq!(rounded_len(129, 4), 256);
        assert_eq!(rounded_len(1, 8), 64);
        assert_eq!(rounded_len(1 << 18, 4), 1 << 18); // exactly 1 MiB
        // 1 MiB + 4 bytes: the next power of two is 2 MiB, rounded to 256 KiB steps.
        assert_eq!(rounded_len((1 << 18) + 1, 4) * 4, (1 << 20) + (1 << 18));
        // 4096 x 2048 f32 (32 MiB) is a power of two: no rounding at all.
        assert_eq!(rounded_len(4096 * 2048, 4), 4096 * 2048);
        for n in [1usize, 100, 1000, 300_000, 3_000_001, 40_000_000] {
            for size in [4, 8] {
                let cap = rounded_len(n, size);
                assert!(cap >= n, "{n} x {size}: {cap}");
                assert!(
                    cap * size <= (n * size) * 9 / 8 + 512,
                    "{n} x {size}: {cap}"
                );
                assert_eq!(rounded_len(cap, size), cap, "rounding is idempotent");
            }
        }
        assert_eq!(
            rounded_len(usize::MAX / 4, 8),
            usize::MAX / 4,
            "no overflow"
        );
    }
}
