//! `#[differentiable(derive)]` against the same body recorded op by op, for a 12-op element-wise
//! body on a small and on a 2^20-element tensor: backward time per call, the engine's share of
//! it, and peak memory.
//!
//! ```text
//! cargo run --release -p harnesses --example derive_vs_recorded
//! ```
//!
//! The graph is built once per variant; only `backward` (with `retain_graph`) is timed, median of
//! several runs after a warm-up. The engine's time is the backward's wall time less the time the
//! nodes' own `apply` ran (from `autograd::profiler`, whose timestamps add a little to both).
//! Peak memory is counted by a global allocator wrapper, with the CPU backend's buffer cache off:
//! the most bytes live at once during one forward and backward, above what was live before. Output is `key=value` lines:
//! `<variant>_<size>_backward_us`, `<variant>_small_engine_us`, `<variant>_1m_peak_mib`, and
//! `speedup_<size>` / `engine_speedup_small` (recorded / derived). The derived body is
//! element-wise, so it runs as one generated kernel each way (`src/fusion/`);
//! `derived_op_by_op_<size>_backward_us` times it with those kernels turned off (its rules one
//! by one), and `fusion_speedup_<size>` is that time over the fused one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use autograd::__private::fusion;
use autograd::{BackwardOptions, DType, Result, Tensor, differentiable, profiler};

/// The system allocator, counting the bytes live and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s contract;
// the counters are statistics only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            // Relaxed: the counters order nothing; the peak is read after the threads that
            // allocate have handed their results back (a happens-before edge of its own).
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `dealloc`'s contract, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Twelve element-wise ops; the derived version records one node per call.
#[differentiable(derive)]
fn body_derived(x: &Tensor) -> Result<Tensor> {
    let a = x.tanh()?;
    let b = &a * x;
    let c = b.sigmoid()?;
    let d = &c + 1.0;
    let e = d.log()?;
    let f = &e * &a;
    let g = f.exp()?;
    let h = &g - x;
    let i = h.mul_scalar(0.5)?;
    let j = i.sin()?;
    let k = &j * &j;
    k.add_scalar(0.1)
}

/// The same body, recorded op by op (twelve nodes per call).
fn body_recorded(x: &Tensor) -> Result<Tensor> {
    let a = x.tanh()?;
    let b = &a * x;
    let c = b.sigmoid()?;
    let d = &c + 1.0;
    let e = d.log()?;
    let f = &e * &a;
    let g = f.exp()?;
    let h = &g - x;
    let i = h.mul_scalar(0.5)?;
    let j = i.sin()?;
    let k = &j * &j;
    k.add_scalar(0.1)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median backward time of `f` on a fresh leaf of `n` elements.
fn backward_time(f: fn(&Tensor) -> Result<Tensor>, n: usize, runs: usize) -> Result<Duration> {
    let x = Tensor::randn_seeded(&[n], DType::F32, 7)?;
    x.set_requires_grad(true)?;
    let y = f(&x)?;
    let ones = Tensor::ones(&[n], DType::F32)?;
    let pass = || {
        y.backward_with(
            BackwardOptions::new()
                .gradient(ones.clone())
                .retain_graph(true),
        )
    };
    pass()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        pass()?;
        times.push(start.elapsed());
    }
    Ok(median(times))
}

/// Median time the engine spends per backward of `f` on `n` elements outside the nodes' `apply`.
fn engine_time(f: fn(&Tensor) -> Result<Tensor>, n: usize, runs: usize) -> Result<Duration> {
    let x = Tensor::randn_seeded(&[n], DType::F32, 7)?.requires_grad_(true)?;
    let y = f(&x)?;
    let ones = Tensor::ones(&[n], DType::F32)?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (result, prof) = profiler::profile(|| {
            y.backward_with(
                BackwardOptions::new()
                    .gradient(ones.clone())
                    .retain_graph(true),
            )
        });
        result?;
        let nodes: Duration = prof.events().iter().map(|e| e.duration).sum();
        times.push(prof.wall_time().saturating_sub(nodes));
    }
    Ok(median(times))
}

/// Peak bytes above the starting level during one forward and backward of `f` on `n` elements.
fn peak_bytes(f: fn(&Tensor) -> Result<Tensor>, n: usize) -> Result<usize> {
    let x = Tensor::randn_seeded(&[n], DType::F32, 7)?.requires_grad_(true)?;
    let ones = Tensor::ones(&[n], DType::F32)?;
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f(&x)?.backward_with(BackwardOptions::new().gradient(ones))?;
    Ok(PEAK.load(Ordering::Relaxed) - base)
}

fn main() -> Result<()> {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for (label, n, runs) in [("small", 16, 2001), ("1m", 1 << 20, 21)] {
        let derived = backward_time(body_derived, n, runs)?;
        let recorded = backward_time(body_recorded, n, runs)?;
        // The same derived body with its generated kernels turned off: rule by rule.
        fusion::set_enabled(false);
        let op_by_op = backward_time(body_derived, n, runs)?;
        fusion::set_enabled(true);
        println!("derived_{label}_backward_us={:.2}", us(derived));
        println!("derived_op_by_op_{label}_backward_us={:.2}", us(op_by_op));
        println!("recorded_{label}_backward_us={:.2}", us(recorded));
        println!("speedup_{label}={:.2}", us(recorded) / us(derived));
        println!("fusion_speedup_{label}={:.2}", us(op_by_op) / us(derived));
    }
    let derived = engine_time(body_derived, 16, 2001)?;
    let recorded = engine_time(body_recorded, 16, 2001)?;
    println!("derived_small_engine_us={:.2}", us(derived));
    println!("recorded_small_engine_us={:.2}", us(recorded));
    println!("engine_speedup_small={:.2}", us(recorded) / us(derived));
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    // Every buffer from the allocator, none from the CPU backend's cache of freed ones.
    autograd::set_cache_limit(0);
    // The derived body first, then the recorded one: each starts from the same live level.
    let derived = peak_bytes(body_derived, 1 << 20)?;
    let recorded = peak_bytes(body_recorded, 1 << 20)?;
    println!("derived_1m_peak_mib={:.1}", mib(derived));
    println!("recorded_1m_peak_mib={:.1}", mib(recorded));
    Ok(())
}
