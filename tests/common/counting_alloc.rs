//! A counting global allocator for the leak and soak test binaries: `System`, plus the number of
//! live allocations, the live bytes and a resettable peak of live bytes. Also the process's
//! thread count, read from `/proc`.
//!
//! A binary that includes this module (`#[path = "common/counting_alloc.rs"] mod counting_alloc;`)
//! counts every allocation of every thread: measurements are only meaningful while nothing else
//! in the process allocates, so such a binary runs its measured workloads from a single test.
#![allow(
    dead_code,
    reason = "each test binary uses the part of this module it needs"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// `System`, counting as it goes.
struct Counting;

/// Allocations made minus allocations freed (signed: a thread may free what was counted on
/// another before the first's increment lands; the sum is exact once both have returned).
static LIVE_ALLOCS: AtomicIsize = AtomicIsize::new(0);
/// Bytes allocated minus bytes freed.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// The highest `LIVE_BYTES` seen since the last [`reset_peak`].
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    // Relaxed throughout: these are statistics; the test reads them after joining (or while no
    // other thread allocates), and a join is itself a synchronisation point.
    let now = LIVE_BYTES.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
    PEAK_BYTES.fetch_max(now.max(0) as usize, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE_BYTES.fetch_sub(bytes as isize, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we forward.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract, which we forward.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, hence by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_ALLOCS.fetch_sub(1, Ordering::Relaxed);
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract; `ptr` came from `System`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live allocations and live bytes at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Live {
    pub(crate) allocs: isize,
    pub(crate) bytes: isize,
}

impl Live {
    /// What is live now.
    pub(crate) fn now() -> Live {
        Live {
            allocs: LIVE_ALLOCS.load(Ordering::Relaxed),
            bytes: LIVE_BYTES.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Display for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} allocations, {} bytes", self.allocs, self.bytes)
    }
}

/// The live bytes now.
pub(crate) fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed).max(0) as usize
}

/// Restarts peak tracking from the current live bytes.
pub(crate) fn reset_peak() {
    PEAK_BYTES.store(live_bytes(), Ordering::Relaxed);
}

/// The highest live bytes since the last [`reset_peak`].
pub(crate) fn peak_bytes() -> usize {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// The number of threads of this process (`Threads:` in `/proc/self/status`); `None` where
/// there is no such file (not Linux).
pub(crate) fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}
