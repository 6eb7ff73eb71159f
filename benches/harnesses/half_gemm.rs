//! Half-precision matrix products beside f32 on the CPU: `matmul` of two square matrices in f32,
//! f16 and bf16, medians of several runs after a warm-up, and the same for PyTorch with
//! `benches/half_gemm.py`.
//!
//! ```text
//! cargo run --release -p harnesses --example half_gemm                 # all hardware threads
//! cargo run --release -p harnesses --example half_gemm -- --threads 2
//! ```
//!
//! A half `matmul` converts both operands to f32, runs the f32 GEMM and rounds the product once
//! (PyTorch's CPU half GEMM accumulates in f32 too, so the values agree); the conversions are
//! O(n²) beside the O(n³) product. Each line is `half_gemm n=.. dtype=.. ms=.. gflops=..`.

use std::time::Instant;

use autograd::{DType, Result, Tensor, set_num_threads};

fn median_ms(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?; // warm-up: the buffer cache and the thread pool
    let mut times = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        let n = args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .expect("--threads takes a number");
        set_num_threads(n)?;
    }
    autograd::manual_seed(0);
    for n in [256usize, 512, 1024] {
        let a = Tensor::randn(&[n, n], DType::F32)?;
        let b = Tensor::randn(&[n, n], DType::F32)?;
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            let (x, y) = (a.to_dtype(dtype)?, b.to_dtype(dtype)?);
            let ms = median_ms(|| x.matmul(&y).map(drop))?;
            let gflops = 2.0 * (n as f64).powi(3) / (ms * 1e6);
            println!("half_gemm n={n} dtype={dtype} ms={ms:.3} gflops={gflops:.1}");
        }
    }
    Ok(())
}
