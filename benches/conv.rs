//! Criterion benchmark of the convolution layers: the main job's small CNN on a batch of 8×8
//! digits, forward and backward.
//!
//! ```text
//! cargo bench --bench conv
//! /tmp/torchenv/bin/python benches/compare_conv.py      # PyTorch on the same net, 2 threads
//! ```
//!
//! * `cnn_8x8/forward_backward`: `conv(1→16, 3×3, pad 1) → relu → maxpool 2 → conv(16→32, 3×3,
//!   pad 1) → relu → maxpool 2 → flatten → sum` on an f32 `[64, 1, 8, 8]` batch, then
//!   `backward` to both layers' weights and biases;
//! * `cnn_8x8/forward`: the same forward under `no_grad`;
//! * `conv_16_32/forward_backward`: the second convolution alone, `[64, 16, 4, 4]` input
//!   requiring grad (im2col, GEMM, col2im);
//! * `resnet_block/forward_backward`: a ResNet basic block without normalisation,
//!   `relu(conv2(relu(conv1(x))) + x)` with two 3×3 convolutions 64→64 (padding 1, bias), on an
//!   f32 `[16, 64, 32, 32]` input requiring grad, summed, then `backward` (issue 38's block).

use std::hint::black_box;
use std::time::Duration;

use autograd::nn::{Conv2d, Flatten, Forward, MaxPool2d, Module};
use autograd::{DType, Result, Tensor, no_grad};
use criterion::{Criterion, criterion_group, criterion_main};

struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    flatten: Flatten,
}

impl Cnn {
    fn new() -> Result<Cnn> {
        Ok(Cnn {
            conv1: Conv2d::new(1, 16, 3)?.padding(1),
            conv2: Conv2d::new(16, 32, 3)?.padding(1),
            pool: MaxPool2d::new(2),
            flatten: Flatten::new(),
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.pool.forward(&self.conv1.forward(x)?.relu()?)?;
        let x = self.pool.forward(&self.conv2.forward(&x)?.relu()?)?;
        self.flatten.forward(&x)
    }

    fn zero_grad(&self) {
        self.conv1.zero_grad();
        self.conv2.zero_grad();
    }
}

fn bench_cnn(c: &mut Criterion) {
    let mut group = c.benchmark_group("cnn_8x8");
    let net = Cnn::new().expect("layers");
    let x = Tensor::randn_seeded(&[64, 1, 8, 8], DType::F32, 7).expect("randn");
    group.bench_function("forward_backward", |b| {
        b.iter(|| {
            net.zero_grad();
            let loss = net.forward(&x).and_then(|y| y.sum()).expect("forward");
            loss.backward().expect("backward");
            black_box(net.conv1.weight().grad());
        })
    });
    group.bench_function("forward", |b| {
        let _g = no_grad();
        b.iter(|| black_box(net.forward(&x).expect("forward")))
    });
    group.finish();

    let mut group = c.benchmark_group("conv_16_32");
    let x = Tensor::randn_seeded(&[64, 16, 4, 4], DType::F32, 8)
        .and_then(|x| x.requires_grad_(true))
        .expect("randn");
    group.bench_function("forward_backward", |b| {
        b.iter(|| {
            net.zero_grad();
            x.set_grad(None).expect("set_grad");
            let y = net
                .conv2
                .forward(&x)
                .and_then(|y| y.sum())
                .expect("forward");
            y.backward().expect("backward");
            black_box(x.grad());
        })
    });
    group.finish();
}

fn bench_resnet_block(c: &mut Criterion) {
    let mut group = c.benchmark_group("resnet_block");
    let conv1 = Conv2d::new(64, 64, 3).expect("conv1").padding(1);
    let conv2 = Conv2d::new(64, 64, 3).expect("conv2").padding(1);
    let x = Tensor::randn_seeded(&[16, 64, 32, 32], DType::F32, 9)
        .and_then(|x| x.requires_grad_(true))
        .expect("randn");
    group.bench_function("forward_backward", |b| {
        b.iter(|| {
            conv1.zero_grad();
            conv2.zero_grad();
            x.set_grad(None).expect("set_grad");
            let y = conv1
                .forward(&x)
                .and_then(|h| h.relu())
                .and_then(|h| conv2.forward(&h))
                .and_then(|h| h.add(&x))
                .and_then(|h| h.relu())
                .and_then(|h| h.sum())
                .expect("forward");
            y.backward().expect("backward");
            black_box(x.grad());
        })
    });
    group.finish();
}

criterion_group! {
    name = conv;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_cnn, bench_resnet_block
}
criterion_main!(conv);
