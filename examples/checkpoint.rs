//! Gradient checkpointing on top of reentrant backward, as PyTorch's reentrant
//! `torch.utils.checkpoint`.
//!
//! ```text
//! cargo run --release --example checkpoint         # batch 64
//! cargo run --release --example checkpoint -- 512  # another batch size
//! ```
//!
//! [`checkpoint`] runs a segment of the network under `no_grad()`, so none of its activations are
//! saved, and records one custom node that saves only the segment's input. When the backward pass
//! reaches that node, the node recomputes the segment with grad mode on and runs a *reentrant*
//! `backward()` through the recomputed graph: that nested pass accumulates into the segment's
//! parameters, and the gradient it leaves in the (detached) input is what the node returns.
//!
//! The example runs forward+backward of a deep tanh MLP three ways — no checkpointing, one
//! checkpoint per block of layers, one checkpoint per layer — checks that the parameter gradients
//! agree, and prints the peak heap memory of each, measured by a counting global allocator
//! defined below.
//!
//! As with PyTorch's reentrant variant, a segment's parameters only receive gradients if the
//! segment's input requires grad (otherwise no node is recorded); the network input is therefore
//! marked `requires_grad`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use autograd::{BackwardOptions, DType, Result, Tensor, backward, differentiable, enable_grad};

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
// Checkpointing

/// A segment of the network: a differentiable function of one tensor that may close over
/// parameters (leaves with `requires_grad`).
type Segment = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// `segment(x)`, computed without saving any of the segment's activations: they are recomputed
/// during backward, which costs one extra forward of the segment. The node keeps only what the
/// backward names: the input `x` (version-checked) and the segment.
#[differentiable(name = "CheckpointFunctionBackward")]
fn checkpoint(x: &Tensor, segment: Segment) -> Result<Tensor> {
    segment(x) // the forward runs with recording off: no activations are saved
}

#[backward(checkpoint)]
fn checkpoint_backward(grad: &Tensor, x: &Tensor, segment: Segment) -> Result<Option<Tensor>> {
    // A fresh leaf over the saved input's data: the recomputed graph ends here, so the nested pass
    // neither walks nor accumulates into the part of the graph before this segment.
    let x = x.detach().requires_grad_(true)?;
    let out = {
        // The outer pass runs with grad mode off (no `create_graph`): record the recompute.
        let _g = enable_grad();
        segment(&x)?
    };
    // Reentrant: runs to completion on this thread (or a pool thread past the depth limit) before
    // this node returns. Parameter gradients accumulate into their `.grad`.
    autograd::backward(&[out], &[Some(grad.clone())], BackwardOptions::new())?;
    Ok(x.grad())
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
    PerBlock,
    PerLayer,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Plain => "no checkpointing",
            Variant::PerBlock => "checkpoint every block",
            Variant::PerLayer => "checkpoint every layer",
        }
    }
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
            Variant::PerBlock => {
                let ws = block.clone();
                checkpoint(&h, Arc::new(move |t: &Tensor| layers(&ws, t)))?
            }
            Variant::PerLayer => {
                for w in block {
                    let w = w.clone();
                    h = checkpoint(&h, Arc::new(move |t: &Tensor| t.matmul(&w)?.tanh()))?;
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
                    Tensor::randn(&[WIDTH, WIDTH], DType::F32, seed)?
                        .mul_scalar(1.0 / (WIDTH as f64).sqrt())?
                        .requires_grad_(true)
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let params: Vec<&Tensor> = blocks.iter().flatten().collect();
    let x = Tensor::randn(&[batch, WIDTH], DType::F32, 0)?.requires_grad_(true)?;

    let act = batch * WIDTH * 4;
    let param_bytes = params.len() * WIDTH * WIDTH * 4;
    println!(
        "gradient checkpointing via reentrant backward: {BLOCKS} blocks x {LAYERS_PER_BLOCK} layers \
         tanh(h @ W), batch {batch}, width {WIDTH}, f32"
    );
    println!(
        "  parameters {:.1} MiB (+ as much again in .grad), one activation {:.3} MiB",
        mib(param_bytes),
        mib(act)
    );
    println!();

    let variants = [Variant::Plain, Variant::PerBlock, Variant::PerLayer];
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
    println!(
        "activation memory (peak above baseline): per-block checkpointing uses {:.0}% of the plain \
         run, per-layer {:.0}%",
        100.0 * above(Variant::PerBlock) as f64 / above(Variant::Plain) as f64,
        100.0 * above(Variant::PerLayer) as f64 / above(Variant::Plain) as f64
    );
    println!(
        "  (a single tanh(h @ W) layer saves only its output, which is also the next checkpoint's \
         input: checkpointing single layers saves nothing and costs a recompute)"
    );
    Ok(())
}
