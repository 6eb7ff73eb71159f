//! The GPU figures of the GPU-speed issue, timed the way `benches/pytorch_cuda.py` times PyTorch
//! (medians of 20 runs after 3 warm-ups, each ended by a device synchronisation):
//!
//! * each MLP's and the wide-tanh workload's forward + backward through the engine, beside the
//!   same kernels issued by hand with recording off (the backward written out as the ops the
//!   engine would run); `engine_share` is the difference over the engine's time;
//! * a chain of 10,000 scalar `mul_scalar` on `cuda:0`: recording plus backward per op, and
//!   backward alone per node (the launch cost of one small kernel through the engine).
//!
//! ```text
//! cargo run --release -p harnesses --example cuda_overhead
//! cargo run --release -p harnesses --example cuda_overhead -- mlp_4096   # only the workloads named so
//! python3 benches/compare_pytorch_cuda.py      # the same workloads in PyTorch, side by side
//! ```
//!
//! Prints `key=value` lines; without a GPU it prints `skipped: ...` and exits successfully.

use std::time::Instant;

use autograd::{DType, Device, Result, Tensor, cuda, no_grad};

const WARMUP: usize = 3;
const RUNS: usize = 20;

/// The median wall time of `f` in milliseconds, each run ended by a device synchronisation.
fn time_ms(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..WARMUP {
        f()?;
    }
    cuda::synchronize(0)?;
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        f()?;
        cuda::synchronize(0)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[RUNS / 2])
}

fn param(shape: &[usize], seed: u64, device: Device) -> Result<Tensor> {
    let fan_in = shape[0] as f64;
    Tensor::randn_seeded(shape, DType::F32, seed)?
        .mul_scalar(1.0 / fan_in.sqrt())?
        .to(device)?
        .requires_grad_(true)
}

/// `sum(tanh(x @ w1 + b1) @ w2 + b2)`, backward through the engine vs by hand.
fn mlp(batch: usize, sizes: [usize; 3], device: Device) -> Result<(f64, f64)> {
    let [input, hidden, classes] = sizes;
    let x = Tensor::randn_seeded(&[batch, input], DType::F32, 1)?.to(device)?;
    let (w1, b1) = (
        param(&[input, hidden], 2, device)?,
        param(&[hidden], 3, device)?,
    );
    let (w2, b2) = (
        param(&[hidden, classes], 4, device)?,
        param(&[classes], 5, device)?,
    );
    let engine = time_ms(|| {
        let h = x.matmul(&w1)?.add(&b1)?.tanh()?;
        h.matmul(&w2)?.add(&b2)?.sum()?.backward()?;
        for p in [&w1, &b1, &w2, &b2] {
            p.set_grad(None)?;
        }
        Ok(())
    })?;
    let by_hand = time_ms(|| {
        let _off = no_grad();
        let h = x.matmul(&w1)?.add(&b1)?.tanh()?;
        let logits = h.matmul(&w2)?.add(&b2)?;
        let _loss = logits.sum()?;
        let g = logits.ones_like()?;
        let _gw2 = h.transpose(0, 1)?.matmul(&g)?;
        let _gb2 = g.sum_dims(&[0], false)?;
        let gh = g.matmul(&w2.transpose(0, 1)?)?;
        let gz = gh.mul(&h.mul(&h)?.rsub_scalar(1.0)?)?;
        let _gw1 = x.transpose(0, 1)?.matmul(&gz)?;
        let _gb1 = gz.sum_dims(&[0], false)?;
        Ok(())
    })?;
    Ok((engine, by_hand))
}

/// `layers` of `y = tanh(y * w + b)` on vectors of `width`, backward of `y.sum()`.
fn wide_tanh(width: usize, layers: usize, device: Device) -> Result<(f64, f64)> {
    let x = Tensor::randn_seeded(&[width], DType::F32, 1)?.to(device)?;
    let params = (0..layers)
        .map(|l| {
            let w = Tensor::randn_seeded(&[width], DType::F32, 10 + l as u64)?.to(device)?;
            let b = Tensor::randn_seeded(&[width], DType::F32, 50 + l as u64)?.to(device)?;
            Ok((w.requires_grad_(true)?, b.requires_grad_(true)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let engine = time_ms(|| {
        let mut y = x.clone();
        for (w, b) in &params {
            y = y.mul(w)?.add(b)?.tanh()?;
        }
        y.sum()?.backward()?;
        for (w, b) in &params {
            w.set_grad(None)?;
            b.set_grad(None)?;
        }
        Ok(())
    })?;
    let by_hand = time_ms(|| {
        let _off = no_grad();
        let mut ys = vec![x.clone()];
        for (w, b) in &params {
            let next = ys[ys.len() - 1].mul(w)?.add(b)?.tanh()?;
            ys.push(next);
        }
        let _loss = ys[layers].sum()?;
        let mut g = ys[layers].ones_like()?;
        for l in (0..layers).rev() {
            let gz = g.mul(&ys[l + 1].mul(&ys[l + 1])?.rsub_scalar(1.0)?)?;
            let _gw = gz.mul(&ys[l])?;
            g = gz.mul(&params[l].0)?;
        }
        Ok(())
    })?;
    Ok((engine, by_hand))
}

/// A chain of `n` scalar `mul_scalar` on `device`: (record + backward per op, backward per node),
/// in microseconds, medians of `CHAIN_RUNS` runs after one warm-up.
fn scalar_chain(n: usize, device: Device) -> Result<(f64, f64)> {
    const CHAIN_RUNS: usize = 5;
    let x = Tensor::scalar(1.0f32).to(device)?.requires_grad_(true)?;
    let record = |x: &Tensor| -> Result<Tensor> {
        let mut y = x.clone();
        for _ in 0..n {
            y = y.mul_scalar(1.000_000_1)?;
        }
        Ok(y)
    };
    let (mut both, mut backward) = (Vec::new(), Vec::new());
    for run in 0..=CHAIN_RUNS {
        cuda::synchronize(0)?;
        let start = Instant::now();
        let y = record(&x)?;
        let recorded = Instant::now();
        y.backward()?;
        cuda::synchronize(0)?;
        let end = Instant::now();
        x.set_grad(None)?;
        if run > 0 {
            both.push((end - start).as_secs_f64() * 1e6 / n as f64);
            backward.push((end - recorded).as_secs_f64() * 1e6 / n as f64);
        }
    }
    both.sort_by(f64::total_cmp);
    backward.sort_by(f64::total_cmp);
    Ok((both[CHAIN_RUNS / 2], backward[CHAIN_RUNS / 2]))
}

/// Where a small op's time goes: `n` scalar `mul_scalar` on `device`, per op in microseconds,
/// each phase ended by a synchronisation: without recording (allocation + launch + freeing the
/// previous output), the same keeping every output alive (no frees in the loop) and then
/// dropping them all (the frees alone), and recording (the engine's graph on top).
fn launch_breakdown(n: usize, device: Device) -> Result<Vec<(&'static str, f64)>> {
    let x = Tensor::scalar(1.0f32).to(device)?;
    let per_op = |start: Instant| start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let mut figures = Vec::new();
    // The first round warms the allocator's pool and the caches; the second's figures are kept.
    for _ in 0..2 {
        figures.clear();
        {
            let _off = no_grad();
            cuda::synchronize(0)?;
            let start = Instant::now();
            let mut y = x.clone();
            for _ in 0..n {
                y = y.mul_scalar(1.000_000_1)?;
            }
            cuda::synchronize(0)?;
            figures.push(("op_alloc_launch_free_us", per_op(start)));
            let start = Instant::now();
            let mut kept = Vec::with_capacity(n);
            let mut y = x.clone();
            for _ in 0..n {
                y = y.mul_scalar(1.000_000_1)?;
                kept.push(y.clone());
            }
            cuda::synchronize(0)?;
            figures.push(("op_alloc_launch_us", per_op(start)));
            let start = Instant::now();
            drop(kept);
            drop(y);
            cuda::synchronize(0)?;
            figures.push(("op_free_us", per_op(start)));
        }
        let leaf = x.clone().requires_grad_(true)?;
        cuda::synchronize(0)?;
        let start = Instant::now();
        let mut y = leaf.clone();
        for _ in 0..n {
            y = y.mul_scalar(1.000_000_1)?;
        }
        cuda::synchronize(0)?;
        figures.push(("op_recorded_us", per_op(start)));
        let start = Instant::now();
        drop(y);
        figures.push(("graph_drop_us", per_op(start)));
    }
    Ok(figures)
}

fn report(name: &str, (engine, by_hand): (f64, f64)) {
    println!("{name}_engine_ms={engine:.3}");
    println!("{name}_kernels_alone_ms={by_hand:.3}");
    println!(
        "{name}_engine_share={:.3}",
        ((engine - by_hand) / engine).max(0.0)
    );
}

fn main() -> Result<()> {
    if !cuda::is_available() {
        let why = cuda::unavailable_reason(0).unwrap_or_default();
        println!("skipped: no CUDA device ({why})");
        return Ok(());
    }
    // An argument keeps only the workloads whose names start with it (e.g. for a profiler).
    let only = std::env::args().nth(1).unwrap_or_default();
    let wanted = |name: &str| name.starts_with(&only);
    let device = Device::Cuda(0);
    let mlps: [(&str, usize, [usize; 3]); 4] = [
        ("mlp_4096x784x512x10", 4096, [784, 512, 10]),
        ("mlp_4096x784x2048x10", 4096, [784, 2048, 10]),
        ("mlp_256x1024x1024x1024", 256, [1024, 1024, 1024]),
        ("mlp_64x784x512x10", 64, [784, 512, 10]),
    ];
    for (name, batch, sizes) in mlps {
        if wanted(name) {
            report(name, mlp(batch, sizes, device)?);
        }
    }
    if wanted("wide_tanh_2p20_x10") {
        report("wide_tanh_2p20_x10", wide_tanh(1 << 20, 10, device)?);
    }
    if wanted("scalar_chain") {
        let (both, backward) = scalar_chain(10_000, device)?;
        println!("scalar_chain_record_backward_us_per_op={both:.2}");
        println!("scalar_chain_backward_us_per_node={backward:.2}");
    }
    if wanted("breakdown") {
        for (name, value) in launch_breakdown(10_000, device)? {
            println!("breakdown_{name}={value:.2}");
        }
    }
    Ok(())
}
