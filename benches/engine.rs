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
//!
//! Threading benchmarks (the `threads` group below):
//!
//! * `backward_threads/{1,2,4}`: that many threads each run backward over their own 1k-node scalar
//!   chain at once; elem/s is the total node rate over all threads;
//! * `reentrant_call/*`: one outer pass whose single custom node does nothing (`noop_node`) or
//!   calls backward on a tiny prebuilt graph (`nested_inline`, and `nested_pool` where the depth
//!   limit is 0 so every nested call is handed to a pool thread); `top_level_tiny` runs that tiny
//!   graph's backward from outside the engine. `nested_inline - noop_node` is the cost of one
//!   reentrant call;
//! * `device_alternating/*`: a 1k-node chain alternating `to(Virtual(0))`, `mul_scalar` on the
//!   device, `to(Cpu)`, `mul_scalar` on the CPU (two thread hops per 4 nodes), against an all-CPU
//!   `mul_scalar` chain of the same length.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use autograd::{DType, Engine, GradOptions, Result, Tensor, enable_grad, grad};
mod workloads;
use workloads::{alternating_chain, chain, retain, sum_tree, through_node};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn bench_chain(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_mul_scalar_backward");
    for n in [1_000usize, 10_000] {
        let (x, y) = chain(n).expect("build chain");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                y.backward_with(retain()).expect("backward");
                x.set_grad(None).expect("set_grad");
            })
        });
    }
    group.finish();
}

/// Recording a chain of scalar multiplications and running its backward (graph freed): the
/// forward + backward cost per op.
fn bench_chain_record(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain_mul_scalar_record_and_backward");
    let n = 10_000usize;
    group.throughput(Throughput::Elements(n as u64));
    group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
        b.iter(|| {
            let (x, y) = chain(n).expect("build chain");
            y.backward().expect("backward");
            black_box(x)
        })
    });
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
            || {
                xs.iter()
                    .try_for_each(|x| x.set_grad(None))
                    .expect("set_grad")
            },
            |()| root.backward_with(retain()).expect("backward"),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn bench_mlp(c: &mut Criterion) {
    let (batch, d_in, d_hidden, d_out) = (64usize, 784usize, 512usize, 10usize);
    let param = |shape: &[usize], fan_in: usize, seed: u64| {
        Tensor::randn_seeded(shape, DType::F32, seed)
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
    let x = Tensor::randn_seeded(&[batch, d_in], DType::F32, 3).expect("x");
    let target = Tensor::randn_seeded(&[batch, d_out], DType::F32, 4).expect("target");
    let params = [&w1, &b1, &w2, &b2];
    let step = || -> Result<f32> {
        for p in params {
            p.set_grad(None)?;
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

/// Runs `iters` retained backward passes over `(leaf, root)` on each of `graphs.len()` threads at
/// once and returns the wall time from the common start to the last thread's end (thread start-up
/// excluded).
fn backward_on_threads(graphs: &[(Tensor, Tensor)], iters: u64) -> Duration {
    let start = Barrier::new(graphs.len() + 1);
    std::thread::scope(|s| {
        for (x, y) in graphs {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for _ in 0..iters {
                    y.backward_with(retain()).expect("backward");
                    x.set_grad(None).expect("set_grad");
                }
            });
        }
        start.wait();
        // Leaving the scope joins every thread, so elapsed() below covers all their passes.
        Instant::now()
    })
    .elapsed()
}

fn bench_threads(c: &mut Criterion) {
    let n = 1_000usize;
    let mut group = c.benchmark_group("backward_threads");
    for threads in [1usize, 2, 4] {
        let graphs = (0..threads)
            .map(|_| chain(n))
            .collect::<Result<Vec<_>>>()
            .expect("build chains");
        group.throughput(Throughput::Elements((threads * n) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(threads), &threads, |b, _| {
            b.iter_custom(|iters| backward_on_threads(&graphs, iters))
        });
    }
    group.finish();
}

/// A tiny graph: a leaf and `leaf * 2` (one `MulBackward0` and one `AccumulateGrad`).
fn tiny() -> Result<(Tensor, Tensor)> {
    let t = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let y = {
        let _g = enable_grad();
        t.mul_scalar(2.0)?
    };
    Ok((t, y))
}

fn bench_reentrant(c: &mut Criterion) {
    let mut group = c.benchmark_group("reentrant_call");
    let default = Engine::get_default().clone();
    let pooled = Engine::new().max_recursion_depth(0);
    let nested = |engine: Engine| {
        let (t, y) = tiny().expect("tiny graph");
        through_node(move || {
            engine.backward(std::slice::from_ref(&y), &[], retain())?;
            t.set_grad(None)?;
            Ok(())
        })
        .expect("outer graph")
    };
    let cases = [
        (
            "noop_node",
            default.clone(),
            through_node(|| Ok(())).expect("graph"),
        ),
        ("nested_inline", default.clone(), nested(default.clone())),
        ("nested_pool", pooled.clone(), nested(pooled.clone())),
    ];
    for (name, engine, (x, y)) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| {
                engine
                    .backward(std::slice::from_ref(y), &[], retain())
                    .expect("backward");
                x.set_grad(None).expect("set_grad");
            })
        });
    }
    let (t, y) = tiny().expect("tiny graph");
    group.bench_function("top_level_tiny", |b| {
        b.iter(|| {
            y.backward_with(retain()).expect("backward");
            t.set_grad(None).expect("set_grad");
        })
    });
    group.finish();
    pooled.shutdown();
}

fn bench_device_alternating(c: &mut Criterion) {
    let n = 1_000usize;
    let mut group = c.benchmark_group("device_alternating");
    group.throughput(Throughput::Elements(n as u64));
    for (name, (x, y)) in [
        (
            "cpu_virtual",
            alternating_chain(n).expect("alternating chain"),
        ),
        ("all_cpu", chain(n).expect("chain")),
    ] {
        group.bench_function(BenchmarkId::new(name, n), |b| {
            b.iter(|| {
                y.backward_with(retain()).expect("backward");
                x.set_grad(None).expect("set_grad");
            })
        });
    }
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
    targets = bench_chain, bench_chain_record, bench_chain_grad, bench_sum_tree, bench_mlp
}
criterion_group! {
    name = threads;
    config = config()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = bench_threads, bench_reentrant, bench_device_alternating
}
criterion_main!(engine, threads);
