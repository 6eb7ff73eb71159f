//! One function three ways: GELU (tanh approximation) with a derived backward
//! (`#[differentiable(derive)]`), with a hand-written one (`#[differentiable]` + `#[backward]`),
//! and recorded op by op. The example checks that all three give the same values and gradients
//! (to rounding), and that both single-node versions pass gradcheck and gradgradcheck. It then
//! prints, for each: the nodes per call, the elements its graph saves, and the median backward
//! time on a small and on a 2^20-element tensor.
//!
//! Then the main job's loss, softmax cross-entropy, derived against its hand-written closed
//! form (`(softmax(z) - t) / N`, in `examples/train_mlp/src/loss.rs`), on the main job's batch shape.
//!
//! With a CUDA device, last: GELU's forward + backward on `cuda:0`, where the derived body runs
//! as one generated kernel each way (`src/fusion/`), against the same derived body run op by
//! op (the fused path turned off), the hand-written pair and the recording; and the kernels
//! launched per call, counted by the fused path's own counter.
//!
//! ```text
//! cargo run --release --example derive_side_by_side
//! ```

use std::time::{Duration, Instant};

use autograd::{
    BackwardOptions, DType, NodeRef, Result, Tensor, backward, differentiable, gradcheck,
    gradgradcheck,
};

/// √(2/π), the constant inside GELU's tanh approximation.
const K: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient inside GELU's tanh approximation.
const C: f64 = 0.044_715;

// ----- derived: write the forward, get the backward ---------------------------------------------

/// `0.5 x (1 + tanh(k (x + c x³)))`. The macro derives the backward from this body: one node,
/// `GeluDerivedBackward0`, that keeps what the rules of `pow`, `tanh` and `mul` read.
#[differentiable(derive)]
fn gelu_derived(x: &Tensor) -> Result<Tensor> {
    let inner = (x + &(x.pow(3.0)? * C)) * K;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

// ----- hand-written: the same forward, and its derivative worked out by hand ---------------------

/// The same function as a hand-written pair, saving `x` only (the backward recomputes `tanh`).
#[differentiable]
fn gelu_by_hand(x: &Tensor) -> Result<Tensor> {
    let t = ((x + &(x.pow(3.0)? * C)) * K).tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

/// d/dx = 0.5 (1 + t) + 0.5 x (1 - t²) k (1 + 3 c x²), with `t = tanh(k (x + c x³))`.
#[backward(gelu_by_hand)]
fn gelu_by_hand_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let x2 = x * x;
    let t = ((x + &(&x2 * x * C)) * K).tanh()?;
    let outer = (&t + 1.0) * 0.5;
    let dinner = (x2 * (3.0 * C) + 1.0) * K;
    let sech2 = 1.0 - &t * &t;
    Ok(grad * &(outer + x * 0.5 * sech2 * dinner))
}

// ----- recorded op by op: no DSL at all ---------------------------------------------------------

/// The same body with no annotation: every op records its own node.
fn gelu_recorded(x: &Tensor) -> Result<Tensor> {
    let inner = (x + &(x.pow(3.0)? * C)) * K;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

// ----- softmax cross-entropy: derived, and the closed form the main job uses ---------------------

/// Mean cross-entropy of logits `[N, C]` against one-hot targets, derived: `log_softmax`'s rule
/// keeps its result, `mul`'s keeps the targets.
#[differentiable(derive)]
fn cross_entropy_derived(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let picked = (logits.log_softmax(1)? * targets).sum()?;
    Ok(picked * (-1.0 / n))
}

/// The same, with the closed-form gradient written by hand.
#[differentiable]
fn cross_entropy_by_hand(logits: &Tensor, targets: &Tensor, n: f64) -> Result<Tensor> {
    let picked = (logits.log_softmax(1)? * targets).sum()?;
    Ok(picked * (-1.0 / n))
}

/// `d loss / d z = (softmax(z) - t) / N`, scaled by the incoming gradient.
#[backward(cross_entropy_by_hand)]
fn cross_entropy_by_hand_backward(
    grad: &Tensor,
    logits: &Tensor,
    targets: &Tensor,
    n: f64,
) -> Result<(Tensor, Option<Tensor>)> {
    let dz = (logits.softmax(1)? - targets) * (1.0 / n);
    Ok((dz.mul(grad)?, None))
}

type Gelu = fn(&Tensor) -> Result<Tensor>;

const VERSIONS: [(&str, Gelu); 3] = [
    ("derived", gelu_derived),
    ("hand-written", gelu_by_hand),
    ("recorded", gelu_recorded),
];

/// The nodes of `y`'s graph other than the inputs' `AccumulateGrad`s, and the elements its saved
/// tensors address (each distinct saved tensor once; a dimension of stride 0 counts once, and
/// the derived node's shape-only stand-ins, which alias one shared zero, count 0).
fn graph_size(y: &Tensor) -> Result<(usize, usize)> {
    let stand_in = autograd::__private::keep_ref(y, autograd::__private::Read::Shape)?;
    let mut seen: Vec<NodeRef> = Vec::new();
    let mut stack: Vec<NodeRef> = y.grad_fn().into_iter().collect();
    let mut saved: Vec<Tensor> = Vec::new();
    let mut error = None;
    while let Some(node) = stack.pop() {
        if seen.iter().any(|n| n.ptr_eq(&node)) {
            continue;
        }
        node.visit_saved_tensors(&mut |_, s| match s.get() {
            Ok(t) if !saved.iter().any(|u| u.is_same(&t)) => saved.push(t),
            Ok(_) => {}
            Err(e) => error = Some(e),
        });
        stack.extend(node.next_functions().into_iter().flatten().map(|e| e.node));
        seen.push(node);
    }
    if let Some(e) = error {
        return Err(e);
    }
    let nodes = seen.iter().filter(|n| n.name() != "AccumulateGrad").count();
    let elements = saved
        .iter()
        .filter(|t| !(t.dtype() == stand_in.dtype() && t.shares_storage(&stand_in)))
        .map(|t| {
            let addressed: usize = t
                .shape()
                .iter()
                .zip(t.strides())
                .filter(|&(_, &s)| s != 0)
                .map(|(&n, _)| n)
                .product();
            if t.numel() == 0 { 0 } else { addressed }
        })
        .sum();
    Ok((nodes, elements))
}

/// Median time of `runs` calls of `pass`, after one warm-up call.
fn median_time(pass: impl Fn() -> Result<()>, runs: usize) -> Result<Duration> {
    pass()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        pass()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Median backward time of `f` on a leaf of `n` elements (graph built once, `retain_graph`).
fn backward_time(f: Gelu, n: usize, runs: usize) -> Result<Duration> {
    let x = Tensor::randn_seeded(&[n], DType::F32, 5)?.requires_grad_(true)?;
    let y = f(&x)?;
    let ones = Tensor::ones(&[n], DType::F32)?;
    let options = || {
        BackwardOptions::new()
            .gradient(ones.clone())
            .retain_graph(true)
    };
    median_time(|| y.backward_with(options()), runs)
}

type CrossEntropy = fn(&Tensor, &Tensor, f64) -> Result<Tensor>;

/// Median backward time of a cross-entropy on `[n, c]` logits (graph built once).
fn cross_entropy_time(f: CrossEntropy, n: usize, c: usize, runs: usize) -> Result<Duration> {
    let z = Tensor::randn_seeded(&[n, c], DType::F32, 8)?.requires_grad_(true)?;
    let mut onehot = vec![0.0f32; n * c];
    for i in 0..n {
        onehot[i * c + (i * 7) % c] = 1.0;
    }
    let t = Tensor::from_vec(onehot, &[n, c])?;
    let loss = f(&z, &t, n as f64)?;
    median_time(
        || loss.backward_with(BackwardOptions::new().retain_graph(true)),
        runs,
    )
}

/// Median time of one forward + backward of `f` on `n` elements of `cuda:0` (f32), the device
/// synchronised after each.
fn gpu_step_time(f: Gelu, n: usize, runs: usize) -> Result<Duration> {
    let dev = autograd::Device::Cuda(0);
    let x = Tensor::randn_seeded(&[n], DType::F32, 5)?
        .to(dev)?
        .requires_grad_(true)?;
    let ones = Tensor::ones(&[n], DType::F32)?.to(dev)?;
    median_time(
        || {
            let y = f(&x)?;
            y.backward_with(BackwardOptions::new().gradient(ones.clone()))?;
            x.set_grad(None)?;
            autograd::cuda::synchronize(0)
        },
        runs,
    )
}

/// GELU on `cuda:0`: fused, op by op, hand-written and recorded (see the module docs).
fn on_the_gpu() -> Result<()> {
    use autograd::__private::fusion;
    // The fused kernels on the device give the CPU's values and gradients.
    let x = Tensor::randn_seeded(&[4, 5], DType::F64, 1)?.requires_grad_(true)?;
    let xg = x
        .detach()
        .to(autograd::Device::Cuda(0))?
        .requires_grad_(true)?;
    let before = fusion::runs();
    let yg = gelu_derived(&xg)?;
    let gg = autograd::grad(&[yg.sum()?], &[xg.clone()], autograd::GradOptions::new())?[0]
        .clone()
        .expect("grad");
    let launched = fusion::runs() - before;
    let y = gelu_recorded(&x)?;
    let g = autograd::grad(&[y.sum()?], &[x.clone()], autograd::GradOptions::new())?[0]
        .clone()
        .expect("grad");
    let host = |t: &Tensor| t.to(autograd::Device::Cpu);
    let (dv, dg) = (
        max_abs_diff(&host(&yg)?, &y)?,
        max_abs_diff(&host(&gg)?, &g)?,
    );
    assert!(dv < 1e-12 && dg < 1e-12, "cuda:0: {dv} {dg}");
    println!(
        "\non cuda:0: the derived GELU ran {launched} generated kernels (forward, backward); \
         values and gradients match the CPU (max diff {dg:.1e})"
    );
    println!(
        "{:<22} {:>22} {:>22}",
        "version", "fwd+bwd n=16", "fwd+bwd n=2^20"
    );
    let versions: [(&str, Gelu, bool); 4] = [
        ("derived, fused", gelu_derived, true),
        ("derived, op by op", gelu_derived, false),
        ("hand-written", gelu_by_hand, true),
        ("recorded", gelu_recorded, true),
    ];
    for (name, f, fuse) in versions {
        fusion::set_enabled(fuse);
        let small = gpu_step_time(f, 16, 2001);
        let large = gpu_step_time(f, 1 << 20, 201);
        fusion::set_enabled(true);
        println!(
            "{name:<22} {:>19.2} µs {:>19.3} ms",
            small?.as_secs_f64() * 1e6,
            large?.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let (a, b) = (a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    Ok(a.iter().zip(&b).fold(0.0, |m, (x, y)| m.max((x - y).abs())))
}

fn main() -> Result<()> {
    // Same values and gradients, in f64.
    let x = Tensor::randn_seeded(&[4, 5], DType::F64, 1)?.requires_grad_(true)?;
    let reference = gelu_recorded(&x)?;
    let reference_grad = autograd::grad(
        &[reference.sum()?],
        &[x.clone()],
        autograd::GradOptions::new(),
    )?[0]
        .clone()
        .expect("grad");
    for (name, f) in VERSIONS {
        let y = f(&x)?;
        let g = autograd::grad(&[y.sum()?], &[x.clone()], autograd::GradOptions::new())?[0]
            .clone()
            .expect("grad");
        let (dv, dg) = (
            max_abs_diff(&y, &reference)?,
            max_abs_diff(&g, &reference_grad)?,
        );
        assert!(dv < 1e-12 && dg < 1e-12, "{name}: {dv} {dg}");
        println!("{name}: values and gradients match the op-by-op recording (max diff {dg:.1e})");
    }
    // One node for the derived version, and no more kept than the op-by-op graph saves.
    let (derived_nodes, derived_saved) = graph_size(&gelu_derived(&x)?)?;
    let (_, recorded_saved) = graph_size(&gelu_recorded(&x)?)?;
    assert!(derived_nodes == 1 && derived_saved <= recorded_saved);
    for f in [gelu_derived as Gelu, gelu_by_hand] {
        gradcheck(|t| f(&t[0]), std::slice::from_ref(&x))?;
        gradgradcheck(|t| f(&t[0]), std::slice::from_ref(&x))?;
    }
    println!("derived and hand-written: gradcheck and gradgradcheck passed\n");

    println!(
        "{:<13} {:>6} {:>15} {:>17} {:>17}",
        "version", "nodes", "saved elements", "backward n=16", "backward n=2^20"
    );
    // The derived body is element-wise: one generated kernel each way (`src/fusion/`), the
    // op-by-op path's bits; "op by op" is the same node with those kernels turned off.
    let rows = [
        ("derived", gelu_derived as Gelu, true),
        ("  op by op", gelu_derived, false),
        ("hand-written", gelu_by_hand, true),
        ("recorded", gelu_recorded, true),
    ];
    for (name, f, fuse) in rows {
        autograd::__private::fusion::set_enabled(fuse);
        let (nodes, saved) = graph_size(&f(&x)?)?;
        let small = backward_time(f, 16, 2001)?;
        let large = backward_time(f, 1 << 20, 21)?;
        autograd::__private::fusion::set_enabled(true);
        println!(
            "{name:<13} {nodes:>6} {saved:>15} {:>14.2} µs {:>14.2} ms",
            small.as_secs_f64() * 1e6,
            large.as_secs_f64() * 1e3
        );
    }

    // Softmax cross-entropy, checked and timed on the main job's batch (64 x 10) and a wide one.
    let z = Tensor::randn_seeded(&[6, 4], DType::F64, 2)?.requires_grad_(true)?;
    let t = Tensor::from_vec(
        (0..24)
            .map(|i| f64::from(u8::from(i % 4 == (i / 4) % 4)))
            .collect(),
        &[6, 4],
    )?;
    let derived = cross_entropy_derived(&z, &t, 6.0)?;
    let by_hand = cross_entropy_by_hand(&z, &t, 6.0)?;
    let gd = autograd::grad(&[derived], &[z.clone()], autograd::GradOptions::new())?[0]
        .clone()
        .expect("grad");
    let gh = autograd::grad(&[by_hand], &[z.clone()], autograd::GradOptions::new())?[0]
        .clone()
        .expect("grad");
    let d = max_abs_diff(&gd, &gh)?;
    assert!(d < 1e-12, "{d}");
    println!("\nsoftmax cross-entropy: derived and closed-form gradients match (max diff {d:.1e})");
    println!(
        "{:<13} {:>17} {:>17}",
        "version", "backward 64x10", "backward 4096x1000"
    );
    for (name, f) in [
        ("derived", cross_entropy_derived as CrossEntropy),
        ("closed form", cross_entropy_by_hand),
    ] {
        let small = cross_entropy_time(f, 64, 10, 2001)?;
        let large = cross_entropy_time(f, 4096, 1000, 11)?;
        println!(
            "{name:<13} {:>14.2} µs {:>14.2} ms",
            small.as_secs_f64() * 1e6,
            large.as_secs_f64() * 1e3
        );
    }
    if autograd::cuda::is_available() {
        on_the_gpu()?;
    } else {
        let why = autograd::cuda::unavailable_reason(0).unwrap_or_default();
        println!("\nno CUDA device ({why}): the fused GPU kernels were not timed");
    }
    Ok(())
}
