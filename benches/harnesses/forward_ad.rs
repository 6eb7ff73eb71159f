//! Forward-mode AD figures (issue 37): a Jacobian-vector product of an MLP by forward mode
//! (`forward_ad`), by the double-vjp trick (`functional::jvp`), and the plain forward for scale;
//! and the Hessian of a small network (`functional::hessian`). `benches/forward_ad.py` times the
//! same workloads in PyTorch (`torch.func.jvp`, `torch.autograd.functional.jvp`, `hessian`).
//!
//! ```text
//! cargo run --release -p harnesses --example forward_ad -- --threads 2
//! /tmp/torchenv/bin/python benches/forward_ad.py --threads 2
//! ```
//!
//! The MLP is the main job's shape, `64 → 128 → 128 → 10` with tanh, on a batch of 256 (f32);
//! the tangent is a direction in input space. The Hessian is that of `Σ tanh(x W₁) W₂` with
//! respect to `W₁` (`8 × 16`, so a `128 × 128` Hessian), x a batch of 32 (f64). Each figure is the
//! median of the runs after a warm-up, as `key=value` lines.

use std::time::Instant;

use autograd::functional::{self, JacobianOptions, Options};
use autograd::{DType, Result, Tensor, forward_ad};

fn median_ms(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[runs / 2])
}

struct Mlp {
    layers: Vec<(Tensor, Tensor)>,
}

impl Mlp {
    fn new(sizes: &[usize]) -> Result<Mlp> {
        let layers = sizes
            .windows(2)
            .map(|p| {
                let scale = 1.0 / (p[0] as f64).sqrt();
                Ok((
                    Tensor::randn(&[p[0], p[1]], DType::F32)?.mul_scalar(scale)?,
                    Tensor::randn(&[p[1]], DType::F32)?.mul_scalar(0.1)?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Mlp { layers })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for (i, (w, b)) in self.layers.iter().enumerate() {
            h = h.matmul(w)?.add(b)?;
            if i + 1 < self.layers.len() {
                h = h.tanh()?;
            }
        }
        Ok(h)
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        let n: usize = args[i + 1].parse().expect("--threads N");
        autograd::set_num_threads(n)?;
    }
    autograd::manual_seed(0);
    let mlp = Mlp::new(&[64, 128, 128, 10])?;
    let x = Tensor::randn(&[256, 64], DType::F32)?;
    let v = Tensor::randn(&[256, 64], DType::F32)?;

    let forward = median_ms(50, || mlp.forward(&x).map(drop))?;
    let dual = median_ms(50, || {
        let _level = forward_ad::dual_level()?;
        let y = mlp.forward(&forward_ad::make_dual(&x, &v)?)?;
        drop(forward_ad::unpack_dual(&y)?.tangent);
        Ok(())
    })?;
    let double_vjp = median_ms(50, || {
        functional::jvp(
            |i: &[Tensor]| mlp.forward(&i[0]),
            &x,
            Some(std::slice::from_ref(&v)),
            Options::new(),
        )
        .map(drop)
    })?;
    // The two agree.
    let (_, reverse) = functional::jvp(
        |i: &[Tensor]| mlp.forward(&i[0]),
        &x,
        Some(std::slice::from_ref(&v)),
        Options::new(),
    )?;
    let fwd = {
        let _level = forward_ad::dual_level()?;
        let y = mlp.forward(&forward_ad::make_dual(&x, &v)?)?;
        forward_ad::unpack_dual(&y)?.tangent.expect("a tangent")
    };
    let diff = fwd
        .sub(&reverse[0])?
        .abs()?
        .amax(&[0, 1], false)?
        .item::<f32>()?;
    println!("mlp_forward_ms={forward:.3}");
    println!("mlp_jvp_forward_mode_ms={dual:.3}");
    println!("mlp_jvp_double_vjp_ms={double_vjp:.3}");
    println!("mlp_jvp_max_abs_difference={diff:e}");

    let w1 = Tensor::randn(&[8, 16], DType::F64)?;
    let w2 = Tensor::randn(&[16, 1], DType::F64)?;
    let xs = Tensor::randn(&[32, 8], DType::F64)?;
    let hessian = median_ms(5, || {
        functional::hessian(
            |i: &[Tensor]| xs.matmul(&i[0])?.tanh()?.matmul(&w2)?.sum(),
            &w1,
            JacobianOptions::new(),
        )
        .map(drop)
    })?;
    println!("hessian_128x128_ms={hessian:.3}");
    Ok(())
}
