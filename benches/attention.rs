//! Criterion benchmark of a transformer's attention block (issue 38's third real-model
//! workload), forward and backward, beside PyTorch's on the same shapes.
//!
//! ```text
//! cargo bench --bench attention
//! /tmp/torchenv/bin/python benches/compare_attention.py   # PyTorch on the same block
//! ```
//!
//! * `attention_block/forward_backward`: `y = x + mha(ln(x))` (pre-norm self-attention:
//!   `LayerNorm(256)`, then `MultiheadAttention(256, 4 heads, batch_first)` with its fused QKV
//!   projection and output projection, no weights returned), on an f32 `[8, 128, 256]` input
//!   requiring grad, summed, then `backward` to the input and every parameter;
//! * `attention_block/forward`: the same forward under `no_grad`.

use std::hint::black_box;
use std::time::Duration;

use autograd::nn::{
    Forward, LayerNorm, Module, MultiheadAttention, MultiheadAttentionConfig,
    MultiheadAttentionForwardOptions,
};
use autograd::{DType, Result, Tensor, no_grad};
use criterion::{Criterion, criterion_group, criterion_main};

struct Block {
    norm: LayerNorm,
    attn: MultiheadAttention,
}

impl Block {
    fn new() -> Result<Block> {
        let cfg = MultiheadAttentionConfig {
            batch_first: true,
            ..Default::default()
        };
        Ok(Block {
            norm: LayerNorm::new(&[256])?,
            attn: MultiheadAttention::with_config(256, 4, cfg)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.norm.forward(x)?;
        let opts = MultiheadAttentionForwardOptions {
            need_weights: false,
            ..Default::default()
        };
        let (a, _) = self.attn.forward(&h, &h, &h, &opts)?;
        x.add(&a)
    }

    fn zero_grad(&self) {
        self.norm.zero_grad();
        self.attn.zero_grad();
    }
}

fn bench_attention_block(c: &mut Criterion) {
    let mut group = c.benchmark_group("attention_block");
    let block = Block::new().expect("block");
    let x = Tensor::randn_seeded(&[8, 128, 256], DType::F32, 11)
        .and_then(|x| x.requires_grad_(true))
        .expect("randn");
    group.bench_function("forward_backward", |b| {
        b.iter(|| {
            block.zero_grad();
            x.set_grad(None).expect("set_grad");
            let y = block.forward(&x).and_then(|y| y.sum()).expect("forward");
            y.backward().expect("backward");
            black_box(x.grad());
        })
    });
    group.bench_function("forward", |b| {
        b.iter(|| {
            let _no_grad = no_grad();
            black_box(block.forward(&x).expect("forward"));
        })
    });
    group.finish();
}

criterion_group! {
    name = attention;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_attention_block
}
criterion_main!(attention);
