//! `topk` along the last dim of a wide tensor, medians of several runs after a warm-up, beside
//! PyTorch's (the Python lines in the module doc of `docs/performance.md`'s topk section).
//!
//! ```text
//! cargo run --release -p harnesses --example topk
//! cargo run --release -p harnesses --example topk -- --threads 2
//! ```
//!
//! Each line is `topk shape=RxN k=.. dtype=.. ms=..`: `x.topk(k, -1, true, true)` of a
//! `randn` tensor (seed 0), values and indices, no autograd.

use std::time::Instant;

use autograd::{DType, Result, Tensor, manual_seed, set_num_threads};

fn median_ms(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?; // warm-up
    let mut times = Vec::new();
    for _ in 0..15 {
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
        let n = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(1);
        set_num_threads(n)?;
    }
    manual_seed(0);
    for (rows, n, k, dtype) in [
        (64usize, 32768usize, 10usize, DType::F32),
        (64, 32768, 1000, DType::F32),
        (64, 32768, 10, DType::F64),
        (1, 1 << 20, 100, DType::F32),
    ] {
        let x = Tensor::randn(&[rows, n], dtype)?;
        let ms = median_ms(|| {
            let (v, i) = x.topk(k, -1, true, true)?;
            std::hint::black_box((v, i));
            Ok(())
        })?;
        println!("topk shape={rows}x{n} k={k} dtype={dtype:?} ms={ms:.3}");
    }
    Ok(())
}
