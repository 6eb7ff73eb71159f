//! `#[differentiable(derive)]` against the same body recorded op by op: backward time per call
//! of a 12-op element-wise body, on a small and on a 2^20-element tensor.
//!
//! ```text
//! cargo run --release --example derive_vs_recorded
//! ```
//!
//! The graph is built once per variant; only `backward` (with `retain_graph`) is timed, median of
//! several runs after a warm-up. Output is `key=value` lines: `<variant>_<size>_backward_us`, and
//! `speedup_<size>` (recorded / derived).

use std::time::{Duration, Instant};

use autograd::{differentiable, BackwardOptions, DType, Result, Tensor};

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
    let x = Tensor::randn(&[n], DType::F32, 7)?;
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

fn main() -> Result<()> {
    for (label, n, runs) in [("small", 16, 2001), ("1m", 1 << 20, 21)] {
        let derived = backward_time(body_derived, n, runs)?;
        let recorded = backward_time(body_recorded, n, runs)?;
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!("derived_{label}_backward_us={:.2}", us(derived));
        println!("recorded_{label}_backward_us={:.2}", us(recorded));
        println!("speedup_{label}={:.2}", us(recorded) / us(derived));
    }
    Ok(())
}
