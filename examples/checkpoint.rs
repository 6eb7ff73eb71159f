//! Activation checkpointing with `autograd::checkpoint`, PyTorch's
//! `torch.utils.checkpoint.checkpoint`, in both its variants.
//!
//! ```text
//! cargo run --release --example checkpoint         # batch 64
//! cargo run --release --example checkpoint -- 512  # another batch size
//! ```
//!
//! A checkpointed segment of the network keeps none of its activations: the backward pass
//! recomputes them from the segment's input. The *reentrant* variant runs the segment under
//! `no_grad()` and records one node that saves the input; its backward recomputes the segment and
//! runs a reentrant `backward()` through it. The *non-reentrant* variant records the segment as
//! usual, but under saved-tensor hooks that keep a handle instead of each saved tensor; the first
//! unpack recomputes the segment.
//!
//! The example runs forward+backward of a deep tanh MLP five ways — no checkpointing, one
//! checkpoint per block of layers and one per layer, with each variant — checks that the
//! parameter gradients agree, and prints the peak heap memory of each, measured by a counting
//! global allocator defined below.
//!
//! As with PyTorch's reentrant variant, a segment's parameters only receive gradients if the
//! segment's input requires grad (otherwise no node is recorded); the network input is therefore
//! marked `requires_grad`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use autograd::{CheckpointOptions, DType, Result, Tensor, checkpoint};

// ---------------------------------------------------------------------------------------------
// Peak-memory accounting

/// `System`, counting the bytes currently allocated and the highest count since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc` (non-zero-size `layout`).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (hence by `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::realloc`; `ptr` came from `System`.
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

fn current_bytes() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// Restarts peak tracking from the current allocation level.
fn reset_peak() {
    PEAK.store(current_bytes(), Ordering::Relaxed);
}

fn peak_bytes() -> usize {
    PEAK.load(Ordering::Relaxed)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------------------------
// The network

const BLOCKS: usize = 16;
const LAYERS_PER_BLOCK: usize = 4;
const DEFAULT_BATCH: usize = 64;
const WIDTH: usize = 512;

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    /// One checkpoint per block; `true`: the reentrant variant.
    PerBlock(bool),
    /// One checkpoint per layer; `true`: the reentrant variant.
    PerLayer(bool),
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Plain => "no checkpointing",
            Variant::PerBlock(true) => "every block, reentrant",
            Variant::PerLayer(true) => "every layer, reentrant",
            Variant::PerBlock(false) => "every block, non-reentr.",
            Variant::PerLayer(false) => "every layer, non-reentr.",
        }
    }
}

/// `segment(x)` through `autograd::checkpoint`: its activations are recomputed in the backward.
fn checkpointed(
    x: &Tensor,
    reentrant: bool,
    segment: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> Result<Tensor> {
    let mut out = checkpoint(
        move |xs: &[Tensor]| Ok(vec![segment(&xs[0])?]),
        std::slice::from_ref(x),
        CheckpointOptions::new().use_reentrant(reentrant),
    )?;
    Ok(out.remove(0))
}

/// `tanh(h @ w)` for each `w` in turn.
fn layers(weights: &[Tensor], x: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for w in weights {
        h = h.matmul(w)?.tanh()?;
    }
    Ok(h)
}

/// The forward of the whole MLP: `BLOCKS` blocks of `LAYERS_PER_BLOCK` layers `tanh(h @ W)`, and
/// a mean-of-squares loss.
fn forward(blocks: &[Vec<Tensor>], x: &Tensor, variant: Variant) -> Result<Tensor> {
    let mut h = x.clone();
    for block in blocks {
        h = match variant {
            Variant::Plain => layers(block, &h)?,
            Variant::PerBlock(reentrant) => {
                let ws = block.clone();
                checkpointed(&h, reentrant, move |t: &Tensor| layers(&ws, t))?
            }
            Variant::PerLayer(reentrant) => {
                for w in block {
                    let w = w.clone();
                    h = checkpointed(&h, reentrant, move |t: &Tensor| t.matmul(&w)?.tanh())?;
                }
                h
            }
        };
    }
    h.pow(2.0)?.mean()
}

struct Run {
    variant: Variant,
    baseline: usize,
    peak: usize,
    forward: Duration,
    backward: Duration,
    loss: f32,
}

/// One forward+backward; the peak is taken over both, the baseline is what was live before
/// (parameters, their zeroed `.grad` buffers, the input).
fn run(blocks: &[Vec<Tensor>], params: &[&Tensor], x: &Tensor, variant: Variant) -> Result<Run> {
    for p in params.iter().copied().chain([x]) {
        if let Some(g) = p.grad() {
            g.zero_()?;
        }
    }
    let baseline = current_bytes();
    reset_peak();
    let t = Instant::now();
    let loss = forward(blocks, x, variant)?;
    let forward_time = t.elapsed();
    let t = Instant::now();
    loss.backward()?;
    let backward_time = t.elapsed();
    let peak = peak_bytes();
    Ok(Run {
        variant,
        baseline,
        peak,
        forward: forward_time,
        backward: backward_time,
        loss: loss.item::<f32>()?,
    })
}

fn gradients(params: &[&Tensor]) -> Result<Vec<Vec<f32>>> {
    params
        .iter()
        .map(|p| {
            p.grad()
                .expect("every parameter has a gradient")
                .to_vec::<f32>()
        })
        .collect()
}

fn max_abs_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .zip(b)
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0, f32::max)
}

fn main() -> Result<()> {
    let batch = match std::env::args().nth(1) {
        Some(a) => a
            .parse::<usize>()
            .map_err(|e| autograd::Error::msg(format!("batch size {a:?}: {e}")))?,
        None => DEFAULT_BATCH,
    };
    let blocks = (0..BLOCKS)
        .map(|b| {
            (0..LAYERS_PER_BLOCK)
                .map(|l| {
                    let seed = (b * LAYERS_PER_BLOCK + l) as u64 + 1;
                    Tensor::randn_seeded(&[WIDTH, WIDTH], DType::F32, seed)?
                        .mul_scalar(1.0 / (WIDTH as f64).sqrt())?
                        .requires_grad_(true)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let params: Vec<&Tensor> = blocks.iter().flatten().collect();
    let x = Tensor::randn_seeded(&[batch, WIDTH], DType::F32, 0)?.requires_grad_(true)?;

    let act = batch * WIDTH * 4;
    let param_bytes = params.len() * WIDTH * WIDTH * 4;
    println!(
        "activation checkpointing (autograd::checkpoint): {BLOCKS} blocks x {LAYERS_PER_BLOCK} \
         layers tanh(h @ W), batch {batch}, width {WIDTH}, f32"
    );
    println!(
        "  parameters {:.1} MiB (+ as much again in .grad), one activation {:.3} MiB",
        mib(param_bytes),
        mib(act)
    );
    println!();

    let variants = [
        Variant::Plain,
        Variant::PerBlock(true),
        Variant::PerLayer(true),
        Variant::PerBlock(false),
        Variant::PerLayer(false),
    ];
    // Correctness first (this also warms up: allocates every .grad, which later runs accumulate
    // into in place as a training loop with zeroed gradients does, and starts the engine). The
    // copies of the gradients are dropped before any memory is measured.
    let mut diffs = Vec::new();
    {
        let mut reference = None;
        for v in variants {
            run(&blocks, &params, &x, v)?;
            let grads = gradients(&params)?;
            let reference = reference.get_or_insert_with(|| grads.clone());
            let diff = max_abs_diff(reference, &grads);
            assert!(diff <= 1e-5, "{}: gradients differ by {diff}", v.label());
            diffs.push(diff);
        }
    }
    // Measurement: the peak over `REPEATS` runs, the median times.
    const REPEATS: usize = 5;
    let mut runs = Vec::new();
    for v in variants {
        let mut rs = (0..REPEATS)
            .map(|_| run(&blocks, &params, &x, v))
            .collect::<Result<Vec<_>>>()?;
        let peak = rs.iter().map(|r| r.peak).max().unwrap_or(0);
        let baseline = rs.iter().map(|r| r.baseline).min().unwrap_or(0);
        rs.sort_by_key(|r| r.forward);
        let forward = rs[REPEATS / 2].forward;
        rs.sort_by_key(|r| r.backward);
        let mut r = rs.swap_remove(REPEATS / 2);
        (r.peak, r.baseline, r.forward) = (peak, baseline, forward);
        runs.push(r);
    }

    println!(
        "{:<24} {:>12} {:>14} {:>10} {:>10} {:>10} {:>14}",
        "variant", "peak heap", "above baseline", "forward", "backward", "loss", "max |dW diff|"
    );
    for (r, diff) in runs.iter().zip(&diffs) {
        println!(
            "{:<24} {:>8.2} MiB {:>10.2} MiB {:>7.2} ms {:>7.2} ms {:>10.6} {:>14.3e}",
            r.variant.label(),
            mib(r.peak),
            mib(r.peak - r.baseline),
            r.forward.as_secs_f64() * 1e3,
            r.backward.as_secs_f64() * 1e3,
            r.loss,
            diff
        );
    }
    println!("  (peak over {REPEATS} runs; median times; diff against the plain run's gradients)");
    println!();
    let above = |v: Variant| {
        runs.iter()
            .find(|r| r.variant == v)
            .map_or(0, |r| r.peak - r.baseline)
    };
    for reentrant in [true, false] {
        println!(
            "activation memory (peak above baseline), {}: per-block checkpointing uses {:.0}% of \
             the plain run, per-layer {:.0}%",
            if reentrant {
                "reentrant"
            } else {
                "non-reentrant"
            },
            100.0 * above(Variant::PerBlock(reentrant)) as f64 / above(Variant::Plain) as f64,
            100.0 * above(Variant::PerLayer(reentrant)) as f64 / above(Variant::Plain) as f64
        );
    }
    println!(
        "  (a single tanh(h @ W) layer saves only its output, which is also the next checkpoint's \
         input: checkpointing single layers saves nothing and costs a recompute)"
    );
    Ok(())
}
