// Optional tensor inputs: `Option<&Tensor>` in the forward, `Option<&Tensor>` (saved when
// present, also with `#[needed_for]`) in the backward, `Option<Tensor>` as their gradient; mixed
// with a `&[Tensor]` input, the edges stay in parameter order.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn weighted_sum(xs: &[Tensor], weight: Option<&Tensor>, scale: f64) -> Result<Tensor> {
    let mut total = xs[0].copy()?;
    for x in &xs[1..] {
        total = total.add(x)?;
    }
    match weight {
        Some(w) => total.mul(w)?.mul_scalar(scale),
        None => total.mul_scalar(scale),
    }
}

#[backward(weighted_sum)]
fn weighted_sum_backward(
    grad: &Tensor,
    xs: &[Tensor],
    #[needed_for(xs)] weight: Option<&Tensor>,
    scale: f64,
    result: &Tensor,
) -> Result<(Vec<Tensor>, Option<Tensor>)> {
    let g = grad.mul_scalar(scale)?;
    let g = match weight {
        Some(w) => g.mul(w)?,
        None => g,
    };
    let gw = match weight {
        Some(w) => Some(grad.mul(result)?.div(w)?),
        None => None,
    };
    Ok((xs.iter().map(|_| g.clone()).collect(), gw))
}

fn main() -> Result<()> {
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let b = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?.requires_grad_(true)?;
    let w = Tensor::from_vec(vec![2.0f64, 0.5], &[2])?.requires_grad_(true)?;
    let y = weighted_sum(&[a.clone(), b.clone()], Some(&w), 2.0)?;
    assert_eq!(y.to_vec::<f64>()?, [16.0, 6.0]);
    assert_eq!(y.grad_fn().expect("grad_fn").next_functions().len(), 3);
    y.sum()?.backward()?;
    assert_eq!(a.grad().expect("a.grad").to_vec::<f64>()?, [4.0, 1.0]);
    assert_eq!(w.grad().expect("w.grad").to_vec::<f64>()?, [8.0, 12.0]);

    let y = weighted_sum(&[a.clone(), b], None, 1.0)?;
    assert!(y.grad_fn().expect("grad_fn").next_functions()[2].is_none());
    Ok(())
}
