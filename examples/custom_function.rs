//! A custom differentiable function: a numerically stable log-sum-exp over the rows of a matrix,
//! with a hand-written backward (the softmax), checked against finite differences and then used as
//! the loss of a tiny softmax regression trained by gradient descent.
//!
//! Run with `cargo run --example custom_function`.

use autograd::{backward, differentiable, gradcheck, gradgradcheck, DType, Error, Result, Tensor};

/// `log Σ_j exp(x[i, j])` for every row `i` of a 2-D `f64` tensor, computed as
/// `m + log Σ_j exp(x[i, j] - m)` with `m` the row maximum, so that large inputs do not overflow.
#[differentiable]
fn logsumexp(x: &Tensor) -> Result<Tensor> {
    let &[rows, cols] = x.shape() else {
        return Err(Error::msg(format!(
            "logsumexp expects a matrix, got shape {:?}",
            x.shape()
        )));
    };
    let values = x.to_vec::<f64>()?;
    let out = values
        .chunks(cols.max(1))
        .take(rows)
        .map(|row| {
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if m.is_infinite() {
                return m;
            }
            m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
        })
        .collect();
    Tensor::from_vec(out, &[rows])
}

/// d lse(x)_i / d x[i, j] = softmax(x)[i, j] = exp(x[i, j] - lse(x)_i). Written with tensor ops,
/// so it is itself differentiable (second derivatives work too).
#[backward(logsumexp)]
fn logsumexp_backward(grad: &Tensor, x: &Tensor, result: &Tensor) -> Result<Tensor> {
    let rows = x.shape()[0];
    let softmax = x.sub(&result.reshape(&[rows, 1])?)?.exp()?;
    grad.reshape(&[rows, 1])?.mul(&softmax)
}

fn check() -> Result<()> {
    let x = Tensor::randn(&[3, 4], DType::F64, 7)?.requires_grad_(true)?;
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
    let noise = Tensor::randn(&[3 * per_class, 2], DType::F64, 42)?.to_vec::<f64>()?;
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

/// Mean cross-entropy of a softmax regression: `mean(lse(logits) - logits[label])`.
fn loss(x: &Tensor, onehot: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let logits = x.matmul(w)?.add(b)?;
    let picked = logits.mul(onehot)?.sum_dims(&[1], false)?;
    logsumexp(&logits)?.sub(&picked)?.mean()
}

fn train() -> Result<()> {
    let (x, onehot) = dataset()?;
    let w = Tensor::zeros(&[2, 3], DType::F64)?.requires_grad_(true)?;
    let b = Tensor::zeros(&[3], DType::F64)?.requires_grad_(true)?;
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
            p.set_grad(None);
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
    train()
}
