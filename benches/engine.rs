//! Criterion benchmarks of the backward engine.
//!
//! ```text
//! cargo bench --bench engine            # run (a few seconds per benchmark)
//! cargo bench --bench engine --no-run   # compile only (what CI does)
//! ```
//!
//! Graphs are built once per benchmark and only the engine call is timed (`retain_graph(true)`),
//! except for the MLP, where forward and backward are timed together. `Throughput::Elements` is
//! the number of graph nodes, so criterion's "elem/s" reads as nodes per second.

use std::hint::black_box;
use std::time::Duration;

use autograd::{grad, BackwardOptions, DType, GradOptions, Result, Tensor};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};

fn retain() -> BackwardOptions {
    BackwardOptions::new().retain_graph(true)
}

/// A 0-dim f64 leaf and the end of a chain of `n` `mul_scalar` nodes hanging from it.
fn chain(n: usize) -> Result<(Tensor, Tensor)> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let mut y = x.clone();
    for _ in 0..n {
        y = y.mul_scalar(1.000_001)?;
    }
    Ok((x, y))
}

/// `leaves` 0-dim leaves and the root of a balanced binary `add` tree over them.
fn sum_tree(leaves: usize) -> Result<(Vec<Tensor>, Tensor)> {
    let xs = (0..leaves)
        .map(|i| Tensor::scalar(i as f64).requires_grad_(true))
        .collect::<Result<Vec<_>>>()?;
    let mut level = xs.clone();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|p| {
                if p.len() == 2 {
                    p[0].add(&p[1])
                } else {
                    Ok(p[0].clone())
                }
            })
            .collect::<Result<Vec<_>>>()?;
    }
    let root = level.pop().expect("at least one leaf");
    Ok((xs, root))
}

fn bench_chain(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_mul_scalar_backward");
    for n in [1_000usize, 10_000] {
        let (x, y) = chain(n).expect("build chain");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                y.backward_with(retain()).expect("backward");
                x.set_grad(None);
            })
        });
    }
    group.finish();
}

fn bench_chain_grad(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_mul_scalar_grad");
    for n in [1_000usize, 10_000] {
        let (x, y) = chain(n).expect("build chain");
        let (outputs, inputs) = ([y], [x]);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    grad(&outputs, &inputs, GradOptions::new().retain_graph(true)).expect("grad"),
                )
            })
        });
    }
    group.finish();
}

fn bench_sum_tree(c: &mut Criterion) {
    let mut group = c.benchmark_group("sum_tree_backward");
    let leaves = 16_384usize;
    let (xs, root) = sum_tree(leaves).expect("build tree");
    // AddBackward0 nodes plus one AccumulateGrad per leaf.
    group.throughput(Throughput::Elements((2 * leaves - 1) as u64));
    group.bench_function(BenchmarkId::from_parameter(leaves), |b| {
        // Clearing 16k leaf gradients is setup, not engine time.
        b.iter_batched(
            || xs.iter().for_each(|x| x.set_grad(None)),
            |()| root.backward_with(retain()).expect("backward"),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn bench_mlp(c: &mut Criterion) {
    let (batch, d_in, d_hidden, d_out) = (64usize, 784usize, 512usize, 10usize);
    let param = |shape: &[usize], fan_in: usize, seed: u64| {
        Tensor::randn(shape, DType::F32, seed)
            .and_then(|t| t.mul_scalar(1.0 / (fan_in as f64).sqrt()))
            .and_then(|t| t.requires_grad_(true))
            .expect("parameter")
    };
    let w1 = param(&[d_in, d_hidden], d_in, 1);
    let w2 = param(&[d_hidden, d_out], d_hidden, 2);
    let b1 = Tensor::zeros(&[d_hidden], DType::F32)
        .and_then(|t| t.requires_grad_(true))
        .expect("b1");
    let b2 = Tensor::zeros(&[d_out], DType::F32)
        .and_then(|t| t.requires_grad_(true))
        .expect("b2");
    let x = Tensor::randn(&[batch, d_in], DType::F32, 3).expect("x");
    let target = Tensor::randn(&[batch, d_out], DType::F32, 4).expect("target");
    let params = [&w1, &b1, &w2, &b2];
    let step = || -> Result<f32> {
        for p in params {
            p.set_grad(None);
        }
        let h = x.matmul(&w1)?.add(&b1)?.relu()?;
        let loss = h.matmul(&w2)?.add(&b2)?.sub(&target)?.pow(2.0)?.mean()?;
        loss.backward()?;
        loss.item::<f32>()
    };

    let mut group = c.benchmark_group("mlp_forward_backward");
    group.throughput(Throughput::Elements(batch as u64));
    group.bench_function(format!("{batch}x{d_in}-{d_hidden}-{d_out}_f32"), |b| {
        b.iter(|| black_box(step().expect("mlp step")))
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(15)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = engine;
    config = config();
    targets = bench_chain, bench_chain_grad, bench_sum_tree, bench_mlp
}
criterion_main!(engine);
