//! The fixed engine workloads whose instruction counts the README reports: count them with
//! callgrind, which gives the same total on every run of the same binary whatever else the
//! machine is doing (wall-clock figures on a shared machine move by ±15%).
//!
//! ```text
//! cargo build --release -p harnesses --example engine_callgrind
//! valgrind --tool=callgrind target/release/examples/engine_callgrind          # backward
//! valgrind --tool=callgrind target/release/examples/engine_callgrind record   # record + backward
//! valgrind --tool=callgrind target/release/examples/engine_callgrind saved    # saved outputs
//! target/release/examples/engine_callgrind split   # wall-clock: forward, backward, drop per op
//! ```
//!
//! * no argument: a chain of 10,000 scalar `mul_scalar` nodes built once, then 5 backward passes
//!   over it (`retain_graph`);
//! * `record`: 5 times, the chain recorded, its backward run (the graph freed by the pass) and
//!   dropped;
//! * `saved`: a chain of 10,000 scalar `tanh` nodes built once, then 5 backward passes over it
//!   (`retain_graph`): each node saves its output, so each pass unpacks 10,000 saved outputs;
//! * `split`: the `record` workload 41 times, printing the median wall-clock time per op of the
//!   forward (recording), the backward and the drop of what is left of the graph.

use std::time::{Duration, Instant};

use autograd::{Result, Tensor};

#[path = "../workloads/mod.rs"]
mod workloads;
use workloads::{chain, retain};

const NODES: usize = 10_000;

fn main() -> Result<()> {
    match std::env::args().nth(1).as_deref() {
        None => {
            let (x, y) = chain(NODES)?;
            for _ in 0..5 {
                x.set_grad(None)?;
                y.backward_with(retain())?;
            }
        }
        Some("record") => {
            for _ in 0..5 {
                let (_x, y) = chain(NODES)?;
                y.backward()?;
            }
        }
        Some("saved") => {
            let (x, y) = tanh_chain(NODES)?;
            for _ in 0..5 {
                x.set_grad(None)?;
                y.backward_with(retain())?;
            }
        }
        Some("split") => split()?,
        Some(other) => {
            eprintln!("unknown mode {other:?}: expected no argument, `record`, `saved` or `split`");
            std::process::exit(2);
        }
    }
    Ok(())
}

/// A 0-dim f64 leaf and the end of a chain of `n` `tanh` nodes hanging from it (each saves its
/// output, `TanhBackward0`'s `result`).
fn tanh_chain(n: usize) -> Result<(Tensor, Tensor)> {
    let x = Tensor::scalar(0.5f64).requires_grad_(true)?;
    let mut y = x.clone();
    for _ in 0..n {
        y = y.tanh()?;
    }
    Ok((x, y))
}

fn split() -> Result<()> {
    const RUNS: usize = 41;
    let (mut forward, mut backward, mut drop_graph) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t0 = Instant::now();
        let (x, y) = chain(NODES)?;
        let t1 = Instant::now();
        y.backward()?;
        let t2 = Instant::now();
        drop((x, y));
        let t3 = Instant::now();
        forward.push(t1 - t0);
        backward.push(t2 - t1);
        drop_graph.push(t3 - t2);
    }
    let per_op = |mut v: Vec<Duration>| {
        v.sort();
        v[RUNS / 2].as_nanos() / NODES as u128
    };
    println!(
        "per op of a {NODES}-node mul_scalar chain (median of {RUNS}): forward {} ns, backward {} ns, drop {} ns",
        per_op(forward),
        per_op(backward),
        per_op(drop_graph)
    );
    Ok(())
}
