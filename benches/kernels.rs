//! Criterion benchmarks of the CPU kernels under the ops, on wide tensors.
//!
//! ```text
//! cargo bench --bench kernels                          # all hardware threads
//! RAYON_NUM_THREADS=1 cargo bench --bench kernels      # intra-op work on one thread
//! ```
//!
//! * `wide_tanh/{forward,backward}`: the workload of the CPU-kernels issue (10 layers of
//!   `y = tanh(y * w + b)` over 2^20 f32 elements, every `w`, `b` a leaf); the forward records
//!   the graph and ends in `sum`, the backward runs on a freshly built graph each iteration;
//! * `unary_2^20/*`: one element-wise op over 2^20 f32 elements (throughput in elements),
//!   `gelu` the exact one (`erf`) as `nn::functional::gelu` composes it, `gelu_fwd_bwd` that
//!   recorded on a leaf and its backward from `sum`;
//! * `reduce_2^20/*`: `sum`, `sum_dims` over rows and columns, `softmax` over rows of a
//!   1024 x 1024 f32 tensor;
//! * `derived_1024x1024/*`: a `#[differentiable(derive)]` element-wise body (tanh-approximate
//!   GELU, one fused kernel each way) on a 1024 x 1024 f32 tensor and on its transpose `x.t()`
//!   (read in memory order, no copy), the forward alone and with its backward from `sum`.
//!
//! `harnesses/cpu_kernels.rs` prints the same wide-tanh and MLP figures as plain numbers, and
//! `benches/pytorch_kernels.py` times PyTorch on them.

use std::hint::black_box;
use std::time::Duration;

use autograd::nn::GeluApproximate;
use autograd::nn::functional::gelu;
use autograd::{DType, Tensor, differentiable, no_grad};
mod workloads;
use workloads::{wide_tanh, wide_tanh_loss};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const WIDTH: usize = 1 << 20;

fn bench_wide_tanh(c: &mut Criterion) {
    let mut group = c.benchmark_group("wide_tanh");
    let (x, params) = wide_tanh(WIDTH, 10).expect("build workload");
    group.bench_function("forward", |b| {
        b.iter(|| black_box(wide_tanh_loss(&x, &params).expect("forward")))
    });
    group.bench_function("backward", |b| {
        b.iter_batched(
            || {
                params
                    .iter()
                    .try_for_each(|p| p.set_grad(None))
                    .expect("set_grad");
                wide_tanh_loss(&x, &params).expect("forward")
            },
            |loss| loss.backward().expect("backward"),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn bench_unary(c: &mut Criterion) {
    let mut group = c.benchmark_group("unary_2^20");
    group.throughput(Throughput::Elements(WIDTH as u64));
    let x = Tensor::randn_seeded(&[WIDTH], DType::F32, 7).expect("randn");
    let guard = no_grad();
    group.bench_function("tanh", |b| b.iter(|| black_box(x.tanh().expect("tanh"))));
    group.bench_function("exp", |b| b.iter(|| black_box(x.exp().expect("exp"))));
    group.bench_function("sigmoid", |b| {
        b.iter(|| black_box(x.sigmoid().expect("sigmoid")))
    });
    group.bench_function("sin", |b| b.iter(|| black_box(x.sin().expect("sin"))));
    group.bench_function("mul", |b| b.iter(|| black_box(x.mul(&x).expect("mul"))));
    group.bench_function("erf", |b| b.iter(|| black_box(x.erf().expect("erf"))));
    group.bench_function("gelu", |b| {
        b.iter(|| black_box(gelu(&x, GeluApproximate::None).expect("gelu")))
    });
    drop(guard);
    let leaf = x.detach().requires_grad_(true).expect("leaf");
    group.bench_function("gelu_fwd_bwd", |b| {
        b.iter(|| {
            let y = gelu(&leaf, GeluApproximate::None).expect("gelu");
            y.sum().expect("sum").backward().expect("backward");
            leaf.set_grad(None).expect("set_grad");
        })
    });
    group.finish();
}

fn bench_reduce(c: &mut Criterion) {
    let mut group = c.benchmark_group("reduce_2^20");
    group.throughput(Throughput::Elements(WIDTH as u64));
    let x = Tensor::randn_seeded(&[1024, 1024], DType::F32, 8).expect("randn");
    let _g = no_grad();
    group.bench_function("sum", |b| b.iter(|| black_box(x.sum().expect("sum"))));
    group.bench_function("sum_dims_0", |b| {
        b.iter(|| black_box(x.sum_dims(&[0], false).expect("sum_dims")))
    });
    group.bench_function("sum_dims_1", |b| {
        b.iter(|| black_box(x.sum_dims(&[1], false).expect("sum_dims")))
    });
    group.bench_function("softmax_1", |b| {
        b.iter(|| black_box(x.softmax(1).expect("softmax")))
    });
    group.finish();
}

/// GELU, tanh approximation, as a derived body: one fused kernel each way.
#[differentiable(derive)]
fn gelu_derived(x: &Tensor) -> autograd::Result<Tensor> {
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * (2.0 / std::f64::consts::PI).sqrt();
    Ok(x * 0.5 * (inner.tanh()? + 1.0))
}

fn bench_derived(c: &mut Criterion) {
    let mut group = c.benchmark_group("derived_1024x1024");
    group.throughput(Throughput::Elements(WIDTH as u64));
    let x = Tensor::randn_seeded(&[1024, 1024], DType::F32, 9).expect("randn");
    let leaf = x.detach().requires_grad_(true).expect("leaf");
    for (name, t) in [("contiguous", x.clone()), ("transposed", x.t().expect("t"))] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(gelu_derived(&t).expect("gelu")))
        });
    }
    for (name, t) in [
        ("contiguous_fwd_bwd", leaf.clone()),
        ("transposed_fwd_bwd", leaf.t().expect("t")),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let y = gelu_derived(&t).expect("gelu");
                y.sum().expect("sum").backward().expect("backward");
                leaf.set_grad(None).expect("set_grad");
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = kernels;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_wide_tanh, bench_unary, bench_reduce, bench_derived
}
criterion_main!(kernels);
