// Lists of tensors: a `&[Tensor]` input (one next edge per tensor, a `Vec` of gradients back) and
// a `Vec<Tensor>` output (any number of outputs; the backward takes a slice of gradients).
use autograd::graph::InputMetadata;
use autograd::{backward, differentiable, Result, Tensor};

/// `scale * Σ xs`, all of the same shape.
#[differentiable]
fn scaled_total(scale: &Tensor, xs: &[Tensor]) -> Result<Tensor> {
    let mut total = xs[0].clone();
    for x in &xs[1..] {
        total = total.add(x)?;
    }
    total.mul(scale)
}

#[backward(scaled_total)]
fn scaled_total_backward(
    grad: &Tensor,
    needs_input_grad: &[bool],
    scale: &Tensor,
    xs: &[Tensor],
    result: &Tensor,
) -> Result<(Tensor, Vec<Option<Tensor>>)> {
    assert_eq!(needs_input_grad.len(), 1 + xs.len());
    let g_scale = grad.mul(result)?.div(scale)?;
    let g_x = grad.mul(scale)?;
    let g_xs = needs_input_grad[1..]
        .iter()
        .map(|&needed| needed.then(|| g_x.clone()))
        .collect();
    Ok((g_scale, g_xs))
}

/// One output per row.
#[differentiable(materialize_grads = false)]
fn rows(x: &Tensor) -> Result<Vec<Tensor>> {
    x.chunk(x.shape()[0], 0)
}

#[backward(rows)]
fn rows_backward(
    grad: &[Option<Tensor>],
    x: &InputMetadata,
    result: &[Tensor],
) -> Result<Tensor> {
    assert_eq!(grad.len(), result.len());
    let parts = grad
        .iter()
        .zip(result)
        .map(|(g, r)| g.clone().map_or_else(|| r.zeros_like(), Ok))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&parts, 0)?.reshape(x.shape())
}

/// `Vec<Tensor>` gradients for a slice, materialised incoming gradients.
#[differentiable]
fn pairs(xs: &[Tensor]) -> Result<Vec<Tensor>> {
    xs.iter().map(|x| x.mul_scalar(2.0)).collect()
}

#[backward(pairs)]
fn pairs_backward(grad: &[Tensor]) -> Result<Vec<Tensor>> {
    grad.iter().map(|g| g.mul_scalar(2.0)).collect()
}

fn main() -> Result<()> {
    let scale = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let b = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?;
    let y = scaled_total(&scale, &[a.clone(), b.clone()])?;
    let next = y.grad_fn().expect("recorded").next_functions();
    assert_eq!(next.len(), 3);
    assert!(next[2].is_none(), "b needs no gradient");
    y.sum()?.backward()?;
    assert_eq!(scale.grad().expect("scale.grad").item::<f64>()?, 10.0);
    assert_eq!(a.grad().expect("a.grad").to_vec::<f64>()?, [2.0, 2.0]);

    let m = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let parts = rows(&m)?;
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[1].output_nr(), 1);
    parts[1].sum()?.backward()?; // parts[0]'s gradient stays undefined
    assert_eq!(m.grad().expect("m.grad").to_vec::<f64>()?, [0.0, 0.0, 1.0, 1.0]);

    let p = pairs(&[a.clone(), scale.clone()])?;
    p[0].sum()?.add(&p[1])?.backward()?;
    assert_eq!(a.grad().expect("a.grad").to_vec::<f64>()?, [4.0, 4.0]);
    Ok(())
}
