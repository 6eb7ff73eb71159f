//! Graphs the engine benchmarks and `harnesses/engine_overhead.rs` both measure (the harness
//! includes this file by path), so the two report on the same workloads.
#![allow(dead_code, reason = "each includer uses a part of the workloads")]

use autograd::__private::{next_edges, record_node};
use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::{BackwardOptions, Device, Result, Tensor, no_grad};

/// The factor of every `mul_scalar` in the chains (close to 1, so a 1M-node chain stays finite).
pub(crate) const CHAIN_FACTOR: f64 = 1.000_000_1;

/// Backward options that keep the graph, so one graph serves many timed passes.
pub(crate) fn retain() -> BackwardOptions {
    BackwardOptions::new().retain_graph(true)
}

/// A 0-dim f64 leaf and the end of a chain of `n` `mul_scalar` nodes hanging from it.
pub(crate) fn chain(n: usize) -> Result<(Tensor, Tensor)> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let mut y = x.clone();
    for _ in 0..n {
        y = y.mul_scalar(CHAIN_FACTOR)?;
    }
    Ok((x, y))
}

/// `leaves` 0-dim leaves and the root of a balanced binary `add` tree over them.
pub(crate) fn sum_tree(leaves: usize) -> Result<(Vec<Tensor>, Tensor)> {
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

/// A custom node that runs `inner` in its backward and passes the gradient through.
pub(crate) struct CallInBackward<F: Fn() -> Result<()> + Send + Sync + 'static>(F);

impl<F: Fn() -> Result<()> + Send + Sync + 'static> Backward for CallInBackward<F> {
    const NAME: &'static str = "CallInBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        (self.0)()?;
        Ok(grads)
    }
}

/// `(leaf, y)` where `y = leaf` through a [`CallInBackward`] node running `inner`.
pub(crate) fn through_node(
    inner: impl Fn() -> Result<()> + Send + Sync + 'static,
) -> Result<(Tensor, Tensor)> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = {
        let _g = no_grad();
        x.copy()?
    };
    let edges = next_edges(&[&x]).expect("x requires grad");
    record_node(edges, &[&y], |_| CallInBackward(inner));
    Ok((x, y))
}

/// A chain of `n` nodes (`n` a multiple of 4) alternating CPU and `Virtual(0)`:
/// `y = y.to(Virtual(0)).mul_scalar(c).to(Cpu).mul_scalar(c)`, repeated `n / 4` times.
pub(crate) fn alternating_chain(n: usize) -> Result<(Tensor, Tensor)> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let mut y = x.clone();
    for _ in 0..n / 4 {
        y = y
            .to(Device::Virtual(0))?
            .mul_scalar(CHAIN_FACTOR)?
            .to(Device::Cpu)?
            .mul_scalar(CHAIN_FACTOR)?;
    }
    Ok((x, y))
}

/// The wide element-wise workload of the CPU-kernels issue: `layers` layers of
/// `y = tanh(y * w + b)` over f32 vectors of `width`, every `w` (≈ 1) and `b` (≈ 0) a leaf.
/// Returns the input (no gradient) and the parameters `[w0, b0, w1, b1, ..]`.
pub(crate) fn wide_tanh(width: usize, layers: usize) -> Result<(Tensor, Vec<Tensor>)> {
    let x = Tensor::randn_seeded(&[width], autograd::DType::F32, 0)?;
    let mut params = Vec::with_capacity(2 * layers);
    for l in 0..layers as u64 {
        let w = Tensor::randn_seeded(&[width], autograd::DType::F32, 2 * l + 1)?
            .mul_scalar(0.1)?
            .add_scalar(1.0)?;
        let b = Tensor::randn_seeded(&[width], autograd::DType::F32, 2 * l + 2)?.mul_scalar(0.1)?;
        params.push(w.requires_grad_(true)?);
        params.push(b.requires_grad_(true)?);
    }
    Ok((x, params))
}

/// The sum of [`wide_tanh`]'s output (recording the graph when grad mode is on).
pub(crate) fn wide_tanh_loss(x: &Tensor, params: &[Tensor]) -> Result<Tensor> {
    let mut y = x.clone();
    for wb in params.chunks_exact(2) {
        y = y.mul(&wb[0])?.add(&wb[1])?.tanh()?;
    }
    y.sum()
}
