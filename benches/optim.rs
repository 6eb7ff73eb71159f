//! Criterion benchmarks of one Adam step over the parameters of the large MLPs, fused (one
//! parallel pass per group) against op by op (a tensor op per arithmetic step and parameter).
//!
//! ```text
//! RAYON_NUM_THREADS=2 cargo bench --bench optim
//! /tmp/torchenv/bin/python benches/compare_optim.py    # PyTorch's fused and foreach Adam
//! ```
//!
//! * `adam_step/mlp_784_2048_10/{fused,op_by_op}`: weights `[2048, 784]`, `[10, 2048]` and their
//!   biases (1.63 M values, f32);
//! * `adam_step/mlp_1024x3/{fused,op_by_op}`: `1024 → 1024 → 1024` (2.10 M values, f32).
//!
//! The gradients are set once; every iteration is one `step()`.

use std::time::Duration;

use autograd::optim::{Adam, AdamOptions, Optimizer};
use autograd::{DType, Tensor};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The parameter shapes of `in → hidden → out` (PyTorch's `Linear` layout).
fn mlp(sizes: &[usize]) -> Vec<Vec<usize>> {
    sizes
        .windows(2)
        .flat_map(|w| [vec![w[1], w[0]], vec![w[1]]])
        .collect()
}

fn params_with_grads(shapes: &[Vec<usize>]) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let p = Tensor::randn_seeded(s, DType::F32, i as u64)
                .and_then(|p| p.requires_grad_(true))
                .expect("parameter");
            p.set_grad(Some(
                Tensor::randn_seeded(s, DType::F32, 100 + i as u64).expect("gradient"),
            ))
            .expect("set_grad");
            p
        })
        .collect()
}

fn bench_adam(c: &mut Criterion) {
    let mut group = c.benchmark_group("adam_step");
    for (name, sizes) in [
        ("mlp_784_2048_10", vec![784, 2048, 10]),
        ("mlp_1024x3", vec![1024, 1024, 1024]),
    ] {
        let shapes = mlp(&sizes);
        let n: usize = shapes.iter().map(|s| s.iter().product::<usize>()).sum();
        group.throughput(Throughput::Elements(n as u64));
        for (path, fused) in [("fused", true), ("op_by_op", false)] {
            let params = params_with_grads(&shapes);
            let options = AdamOptions::default().lr(1e-4).fused(Some(fused));
            let mut opt = Adam::new(params, options).expect("optimizer");
            group.bench_function(format!("{name}/{path}"), |b| {
                b.iter(|| opt.step().expect("step"))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = optim;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = bench_adam
}
criterion_main!(optim);
