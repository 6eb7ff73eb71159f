//! CPU kernel figures: the wide element-wise workload and the two MLPs of the CPU-kernels issue,
//! timed the way `benches/pytorch_kernels.py` times PyTorch, so the two can be put side by side.
//!
//! ```text
//! cargo run --release -p harnesses --example cpu_kernels                       # all hardware threads
//! cargo run --release -p harnesses --example cpu_kernels -- --threads 1        # intra-op work on one thread
//! cargo run --release -p harnesses --example cpu_kernels -- --peak-mlp         # peak RSS of one large-MLP step
//! cargo run --release -p harnesses --example cpu_kernels -- --cache-limit-mib 0 # without the buffer cache
//! ```
//!
//! What is measured (medians of several runs after a warm-up):
//!
//! * wide tanh: `L = 10` layers of `y = tanh(y * w + b)` on f32 vectors of width 2^20, every `w`
//!   and `b` a leaf. The forward (recording the graph, ending in `sum`) and the backward of the
//!   sum are timed separately;
//! * MLP forward+backward, f32: `relu(x W1 + b1) W2 + b2` with an MSE loss, for
//!   64x784 -> 512 -> 10 and 256x1024 -> 1024 -> 1024;
//! * with `--peak-mlp`: the process's peak resident memory after one training step of the large
//!   MLP (run alone, so the figure is that step's), and how far the step raised it above the
//!   resident memory after setting the model up;
//! * heap allocations (a counting global allocator): per op of the wide-tanh forward, per node of
//!   its backward, and per node of a 10k scalar `mul_scalar` chain's forward and backward.
//!
//! The lines `name=value` are meant for scripts comparing runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use autograd::{DType, Result, Tensor};

/// The system allocator, counting allocations (Relaxed: a plain statistic, read after the
/// measured work has returned on this thread).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the counter has no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made while `f` runs.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let r = f();
    (r, ALLOCATIONS.load(Ordering::Relaxed) - before)
}

/// Allocations per op of the wide-tanh forward and its backward (31 ops: `mul`, `add`, `tanh` per
/// layer, then `sum`; the backward's figure also pays for the 20 `AccumulateGrad` nodes), and per
/// op of a 10k scalar chain's forward and backward.
fn allocation_report() -> Result<()> {
    let (x, params) = wide_tanh(1 << 20, 10)?;
    wide_tanh_loss(&x, &params)?.backward()?; // warm-up: the pool's threads, lazy statics
    params.iter().try_for_each(|p| p.set_grad(None))?;
    let (loss, fwd) = allocations(|| wide_tanh_loss(&x, &params));
    let (r, bwd) = allocations(|| loss?.backward());
    r?;
    let ops = 31.0;
    println!(
        "wide_tanh_allocs_per_forward_op={:.1} wide_tanh_allocs_per_backward_op={:.1}",
        fwd as f64 / ops,
        bwd as f64 / ops
    );
    let n = 10_000;
    let ((x, y), fwd) = allocations(|| workloads::chain(n).expect("chain"));
    let (r, bwd) = allocations(|| y.backward());
    r?;
    assert!(x.grad().is_some());
    println!(
        "scalar_chain_allocs_per_forward_op={:.2} scalar_chain_allocs_per_backward_node={:.2}",
        fwd as f64 / n as f64,
        bwd as f64 / n as f64
    );
    Ok(())
}

#[path = "../workloads/mod.rs"]
mod workloads;
use workloads::{wide_tanh, wide_tanh_loss};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median forward and backward time of the wide tanh workload.
fn time_wide_tanh(runs: usize) -> Result<(Duration, Duration)> {
    let (x, params) = wide_tanh(1 << 20, 10)?;
    let (mut fwd, mut bwd) = (Vec::new(), Vec::new());
    for _ in 0..runs + 1 {
        for p in &params {
            p.set_grad(None)?;
        }
        let t = Instant::now();
        let loss = wide_tanh_loss(&x, &params)?;
        fwd.push(t.elapsed());
        let t = Instant::now();
        loss.backward()?;
        bwd.push(t.elapsed());
        assert!(loss.item::<f32>()?.is_finite());
    }
    Ok((median(fwd.split_off(1)), median(bwd.split_off(1))))
}

/// The two-layer MLP of `benches/pytorch_kernels.py`.
struct Mlp {
    x: Tensor,
    target: Tensor,
    params: [Tensor; 4],
}

impl Mlp {
    fn new(batch: usize, [d_in, d_hidden, d_out]: [usize; 3]) -> Result<Mlp> {
        let w = |fan_in: usize, fan_out: usize, seed| -> Result<Tensor> {
            Tensor::randn_seeded(&[fan_in, fan_out], DType::F32, seed)?
                .mul_scalar(1.0 / (fan_in as f64).sqrt())?
                .requires_grad_(true)
        };
        let b = |n: usize| Tensor::zeros(&[n], DType::F32)?.requires_grad_(true);
        Ok(Mlp {
            x: Tensor::randn_seeded(&[batch, d_in], DType::F32, 3)?,
            target: Tensor::randn_seeded(&[batch, d_out], DType::F32, 4)?,
            params: [
                w(d_in, d_hidden, 1)?,
                b(d_hidden)?,
                w(d_hidden, d_out, 2)?,
                b(d_out)?,
            ],
        })
    }

    fn step(&self) -> Result<f32> {
        let [w1, b1, w2, b2] = &self.params;
        for p in &self.params {
            p.set_grad(None)?;
        }
        let h = self.x.matmul(w1)?.add(b1)?.relu()?;
        let out = h.matmul(w2)?.add(b2)?;
        let loss = out.sub(&self.target)?.pow(2.0)?.mean()?;
        loss.backward()?;
        loss.item::<f32>()
    }

    fn time(&self, runs: usize) -> Result<Duration> {
        let mut times = Vec::new();
        for _ in 0..runs + 1 {
            let t = Instant::now();
            assert!(self.step()?.is_finite());
            times.push(t.elapsed());
        }
        Ok(median(times.split_off(1)))
    }
}

/// A resident-set figure of this process in MiB from `/proc/self/status` (`VmHWM:` the peak,
/// `VmRSS:` now; `None` off Linux).
fn rss_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut peak, mut threads) = (false, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--peak-mlp" => peak = true,
            "--threads" => threads = args.next().and_then(|n| n.parse().ok()),
            "--cache-limit-mib" => {
                let mib: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                autograd::set_cache_limit(mib << 20);
            }
            other => {
                eprintln!(
                    "unknown argument {other:?}; expected --threads N, --cache-limit-mib N or --peak-mlp"
                );
                std::process::exit(2);
            }
        }
    }
    if let Some(n) = threads {
        autograd::set_num_threads(n)?;
    }
    if peak {
        let mlp = Mlp::new(256, [1024, 1024, 1024])?;
        let before = rss_mib("VmRSS:");
        mlp.step()?;
        let (peak, before) = (rss_mib("VmHWM:"), before);
        let show = |m: Option<f64>| m.map_or("n/a".into(), |m| format!("{m:.1}"));
        println!(
            "peak_rss_mib={} step_peak_over_setup_mib={} (one step of 256x1024->1024->1024)",
            show(peak),
            show(peak.zip(before).map(|(p, b)| p - b))
        );
        return Ok(());
    }
    println!(
        "autograd CPU kernels, {} intra-op threads (release build)",
        autograd::num_threads()
    );
    let (fwd, bwd) = time_wide_tanh(11)?;
    println!("wide_tanh_forward_ms={:.2}", ms(fwd));
    println!("wide_tanh_backward_ms={:.2}", ms(bwd));
    let small = Mlp::new(64, [784, 512, 10])?.time(41)?;
    println!("mlp_small_ms={:.3}", ms(small));
    let large = Mlp::new(256, [1024, 1024, 1024])?.time(11)?;
    println!("mlp_large_ms={:.3}", ms(large));
    allocation_report()?;
    Ok(())
}
