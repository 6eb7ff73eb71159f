//! dtype conversions (`to_dtype`) of a `[1024, 1024]` tensor, contiguous and strided, for
//! callgrind's instruction counts (the figures of docs/performance.md's Autocast section).
//!
//! ```text
//! cargo build --release -p harnesses --example cast_callgrind
//! valgrind --tool=callgrind target/release/examples/cast_callgrind f32:bf16:t 1
//! valgrind --tool=callgrind target/release/examples/cast_callgrind f32:bf16:t 4
//! target/release/examples/cast_callgrind time      # wall-clock, every case, 1 thread
//! ```
//!
//! `SRC:DST:LAYOUT REPS` converts a `[1024, 1024]` tensor of `SRC` (`f32`, `f64`, `bf16`, `f16`,
//! `i64`) to `DST` `REPS` times; `LAYOUT` is `c` (contiguous), `t` (the transpose: every run of
//! one element) or `n` (the first 512 columns: runs of 512). Setup is the same for every `REPS`,
//! so the instructions of one conversion are (count at 4 - count at 1) / 3. `time` prints the
//! median wall-clock time of each case.

use std::time::Instant;

use autograd::{DType, Result, Tensor, set_num_threads};

const N: usize = 1024;

fn dtype(s: &str) -> DType {
    match s {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "bf16" => DType::BF16,
        "f16" => DType::F16,
        "i64" => DType::I64,
        _ => panic!("unknown dtype {s}"),
    }
}

/// The source tensor of a case, already in its layout.
fn source(src: DType, layout: &str) -> Result<Tensor> {
    autograd::manual_seed(0);
    let base = Tensor::randn(&[N, N], DType::F32)?
        .mul_scalar(100.0)?
        .to_dtype(src)?;
    match layout {
        "c" => Ok(base),
        "t" => base.t(),
        "n" => base.narrow(1, 0, N / 2),
        _ => panic!("unknown layout {layout}"),
    }
}

fn case(spec: &str) -> Result<(Tensor, DType)> {
    let parts: Vec<&str> = spec.split(':').collect();
    let [s, d, l] = parts[..] else {
        panic!("a case is SRC:DST:LAYOUT, got {spec}");
    };
    Ok((source(dtype(s), l)?, dtype(d)))
}

fn main() -> Result<()> {
    set_num_threads(1)?;
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("time") {
        for pair in [
            "f32:bf16", "bf16:f32", "f32:f16", "f16:f32", "f32:f64", "f64:f32", "f64:bf16",
            "i64:f32",
        ] {
            for layout in ["c", "t", "n"] {
                let spec = format!("{pair}:{layout}");
                let (x, to) = case(&spec)?;
                let mut times = Vec::new();
                for _ in 0..9 {
                    let t = Instant::now();
                    drop(x.to_dtype(to)?);
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(f64::total_cmp);
                println!("cast {spec} ms={:.3}", times[times.len() / 2]);
            }
        }
        return Ok(());
    }
    let spec = args
        .get(1)
        .expect("usage: cast_callgrind SRC:DST:LAYOUT REPS | time");
    let reps: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let (x, to) = case(spec)?;
    for _ in 0..reps {
        drop(x.to_dtype(to)?);
    }
    Ok(())
}
