//! Intra-op parallelism, PyTorch's `at::parallel_for`: a kernel over `n` elements is cut into
//! fixed chunks of [`GRAIN`] elements that the calling thread and rayon's pool run in any order;
//! below one grain the kernel runs inline on the calling thread.
//!
//! Chunk boundaries depend only on `n`, never on the number of threads, and reductions combine
//! their per-chunk partial results in chunk order on the calling thread. So every kernel gives
//! the same bits for the same input whatever the pool size (PyTorch does not promise this for
//! its reductions; we do, and `reduce/tests.rs` checks it).
//!
//! # The calling thread works too
//!
//! As in PyTorch (the OpenMP team includes the thread that called the op), the calling thread
//! is one of the `num_threads()` threads running the chunks ([`run_chunks`]): it posts
//! `num_threads() - 1` helper jobs to the pool and starts claiming chunks itself at once; helpers
//! claim what is left as they wake. It then waits only for chunks a helper is already running,
//! never for a helper to wake up. Handing the whole loop to the pool instead (rayon's
//! `par_chunks` from outside the pool) made every op wait for two thread wake-ups, one to start
//! and one to report back: 17 us more than the one-thread time for a 65,536-element `add` on 2
//! threads, where PyTorch pays 0.

use std::any::Any;
use std::mem::MaybeUninit;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::sync::atomic::AtomicUsize;
use crate::sync::{Arc, Mutex, Ordering};
use crate::{Error, Result};

/// Elements per chunk: below this a kernel runs inline (PyTorch's `GRAIN_SIZE`, 32,768).
pub(crate) const GRAIN: usize = 32_768;

/// Whether work of `n` elements is worth handing to the pool.
#[inline]
pub(crate) fn is_parallel(n: usize) -> bool {
    n > GRAIN && rayon::current_num_threads() > 1
}

/// The chunks of one [`run_chunks`] call, shared by the caller and its helper jobs.
struct Team {
    /// The next chunk index to claim (grows past `chunks` as late helpers look for work).
    next: AtomicUsize,
    /// Chunks finished (run to completion or panicked).
    done: AtomicUsize,
    chunks: usize,
    /// The caller's `body`, its lifetime erased: dereferenced only for a claimed chunk, and the
    /// caller does not return (so the borrow lives) until every claimed chunk is done.
    body: *const (dyn Fn(usize) + Sync + 'static),
    /// The first panic of a chunk, resumed on the calling thread.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

// SAFETY: `body` points at a `Sync` closure, so calling it from several threads at once is
// allowed; it is dereferenced only while it is alive (see the field). Everything else is
// thread-safe on its own.
unsafe impl Send for Team {}
// SAFETY: as for `Send`.
unsafe impl Sync for Team {}

impl Team {
    /// Claims and runs chunks until none is left.
    fn work(&self) {
        loop {
            // Relaxed: the counter only hands out distinct indices. What a chunk reads was
            // published to a helper by the pool's job queue (the spawn happens after the caller
            // set it up), and the caller reads its own writes.
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.chunks {
                return;
            }
            // SAFETY: chunk `i < chunks` is claimed, so `done` cannot reach `chunks` before this
            // chunk's increment below, and the caller stays in `run_chunks` until it does: the
            // closure `body` points at is alive.
            let body = unsafe { &*self.body };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| body(i))) {
                self.panic.lock().get_or_insert(payload);
            }
            // Release: the chunk's writes happen before the caller's Acquire load sees the count.
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// Runs `body(i)` once for every `i in 0..chunks`, on the calling thread and up to
/// `num_threads() - 1` pool threads (see the module docs); returns when all have run. A panic in
/// any chunk is resumed here once every chunk has finished.
pub(crate) fn run_chunks(chunks: usize, body: &(dyn Fn(usize) + Sync)) {
    let helpers = rayon::current_num_threads().min(chunks).saturating_sub(1);
    if helpers == 0 {
        (0..chunks).for_each(body);
        return;
    }
    let body: *const (dyn Fn(usize) + Sync + '_) = body;
    // SAFETY: only the trait object's lifetime changes (same pointer, same vtable); `Team::work`
    // dereferences it only while this call is still running (see `Team::body`).
    let body = unsafe {
        std::mem::transmute::<
            *const (dyn Fn(usize) + Sync + '_),
            *const (dyn Fn(usize) + Sync + 'static),
        >(body)
    };
    let team = Arc::new(Team {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        chunks,
        body,
        panic: Mutex::new(None),
    });
    for _ in 0..helpers {
        let team = Arc::clone(&team);
        rayon::spawn(move || team.work());
    }
    team.work();
    // The remaining chunks are running on helpers: at most one chunk's time each.
    let mut spins = 0u32;
    // Acquire: pairs with the Release increments, so every chunk's writes are visible here.
    while team.done.load(Ordering::Acquire) < chunks {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let payload = team.panic.lock().take();
    if let Some(payload) = payload {
        resume_unwind(payload);
    }
}

/// A raw pointer to chunked data that [`run_chunks`]'s jobs may carry across threads.
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

impl<T> SendPtr<T> {
    /// The pointer (a method, so that closures capture the whole `SendPtr`, not its field).
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: used only to hand disjoint parts of one exclusively borrowed buffer of `T: Send` (a
// `&mut [T]`'s chunks, a matrix's column blocks) to the threads of one `run_chunks` call, which
// all end before the borrow does.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as for `Send`: each thread writes only through the part it claimed.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// Runs `f(start, chunk)` for every `size`-element chunk of `data` (the last may be shorter),
/// `start` being the chunk's offset in `data`: on the intra-op threads ([`run_chunks`]) when
/// there are several chunks, else inline. For kernels whose natural unit is not one element (rows,
/// column blocks): the caller picks `size` to hold at least a grain of work.
pub(crate) fn for_chunks_of_mut<T: Send>(
    data: &mut [T],
    size: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    assert!(size > 0, "invariant: chunks hold at least one element");
    if data.len() > size && rayon::current_num_threads() > 1 {
        par_chunks_of_mut(data, size, f);
    } else {
        for (i, chunk) in data.chunks_mut(size).enumerate() {
            f(i * size, chunk);
        }
    }
}

/// [`run_chunks`] over the `size`-element chunks of `data`.
fn par_chunks_of_mut<T: Send>(data: &mut [T], size: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    let len = data.len();
    let base = SendPtr(data.as_mut_ptr());
    run_chunks(len.div_ceil(size), &|i| {
        let start = i * size;
        let n = size.min(len - start);
        // SAFETY: `start + n <= len`, chunk `i` is run exactly once, and chunks do not overlap,
        // so this is the only reference to these elements of the exclusively borrowed `data`,
        // which outlives `run_chunks`.
        let chunk = unsafe { std::slice::from_raw_parts_mut(base.get().add(start), n) };
        f(start, chunk);
    });
}

/// A `Vec` of `len` elements written chunk by chunk: `fill(start, chunk)` must initialise every
/// element of `chunk`, which holds the elements `start..start + chunk.len()`. Chunks run on the
/// intra-op threads ([`run_chunks`]) when `len` exceeds one grain. The buffer comes from the
/// buffer cache when it holds one of this size.
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
        par_chunks_of_mut(spare, GRAIN, &fill);
    } else {
        fill(0, spare);
    }
    // SAFETY: the capacity is at least `len`, and the caller promises that `fill` initialised
    // each of the first `len` elements (the chunks above cover `0..len` exactly once).
    unsafe { v.set_len(len) };
    v
}

/// Runs `f(start, chunk)` over `data` in chunks of [`GRAIN`] (on the intra-op threads when there
/// are several). [`for_chunks_of_mut`] with `size = GRAIN`, but generic over `f`, so that the
/// one-chunk path the engine's scalar graphs take is inlined into the kernel.
#[inline]
pub(crate) fn for_chunks_mut<T, F>(data: &mut [T], f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    if is_parallel(data.len()) {
        par_chunks_of_mut(data, GRAIN, &f);
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
        // One slot per chunk, each written by the thread that runs that chunk.
        let mut slots: Vec<Option<R>> = (0..data.len().div_ceil(GRAIN)).map(|_| None).collect();
        par_chunks_of_mut(&mut slots, 1, &|i, slot| {
            slot[0] = Some(reduce(&data[i * GRAIN..data.len().min((i + 1) * GRAIN)]));
        });
        slots
            .into_iter()
            .map(|r| r.expect("invariant: run_chunks ran every chunk"))
            .collect()
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

#[cfg(test)]
mod tests {
    use crate::sync::Ordering::Relaxed;
    use crate::sync::atomic::AtomicUsize;

    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a test pool")
    }

    /// Every chunk runs exactly once whatever the pool size, called from a pool thread or from
    /// outside every pool (the global pool's helpers).
    #[test]
    fn every_chunk_runs_once() {
        let check = |chunks: usize| {
            let counts: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(0)).collect();
            run_chunks(chunks, &|i| {
                counts[i].fetch_add(1, Relaxed);
            });
            let runs: Vec<usize> = counts.iter().map(|c| c.load(Relaxed)).collect();
            assert_eq!(runs, vec![1; chunks]);
        };
        for threads in 1..=4 {
            for chunks in [1, 2, 3, 37, 500] {
                pool(threads).install(|| check(chunks));
            }
        }
        std::thread::spawn(move || {
            for chunks in [1, 2, 37, 500] {
                check(chunks);
            }
        })
        .join()
        .expect("the check passes");
    }

    /// A panic in one chunk reaches the caller only after every other chunk has finished (they
    /// borrow the caller's data), carries its own message, and leaves the pool usable.
    #[test]
    fn a_chunk_panic_is_resumed_after_all_chunks_finish() {
        let pool = pool(3);
        let finished = AtomicUsize::new(0);
        let r = pool.install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                run_chunks(40, &|i| {
                    if i == 7 {
                        panic!("chunk 7 failed");
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    finished.fetch_add(1, Relaxed);
                })
            }))
        });
        let payload = r.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"chunk 7 failed"));
        assert_eq!(finished.load(Relaxed), 39);
        let sum = AtomicUsize::new(0);
        pool.install(|| {
            run_chunks(10, &|i| {
                sum.fetch_add(i, Relaxed);
            })
        });
        assert_eq!(sum.load(Relaxed), 45);
    }

    /// `collect_chunks`, `for_chunks_mut` and `map_chunks` over several grains: each element and
    /// each chunk's result lands where it belongs.
    #[test]
    fn chunked_helpers_cover_every_element() {
        let n = 3 * GRAIN + 5;
        pool(2).install(|| {
            // SAFETY: the closure writes every element of each chunk it gets.
            let v: Vec<usize> = unsafe {
                collect_chunks(n, |start, chunk| {
                    for (j, e) in chunk.iter_mut().enumerate() {
                        e.write(start + j);
                    }
                })
            };
            assert!(v.iter().enumerate().all(|(i, &e)| i == e));
            let mut w = v;
            for_chunks_mut(&mut w, |start, chunk| {
                for (j, e) in chunk.iter_mut().enumerate() {
                    *e = 2 * (start + j);
                }
            });
            assert!(w.iter().enumerate().all(|(i, &e)| 2 * i == e));
            let sums = map_chunks(&w, |c| c.len());
            assert_eq!(sums, vec![GRAIN, GRAIN, GRAIN, 5]);
        });
    }
}
