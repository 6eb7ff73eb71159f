// Attribute types are checked by rustc, not compared as tokens: a path or an alias for the
// forward's type, `&'static str`, and a function pointer whose type contains `&` can all be saved.
use autograd::{backward, differentiable, Result, Tensor};

type Dims = Vec<usize>;

#[differentiable]
fn sum_over(
    x: &Tensor,
    dims: std::vec::Vec<usize>,
    label: &'static str,
    weight: fn(&Tensor) -> f64,
) -> Result<Tensor> {
    assert!(!label.is_empty());
    x.mul_scalar(weight(x))?.sum_dims(&dims, true)
}

#[backward(sum_over)]
fn sum_over_backward(
    grad: &Tensor,
    x: &Tensor,
    dims: Dims,
    label: &'static str,
    weight: fn(&Tensor) -> f64,
) -> Result<Tensor> {
    assert_eq!((dims.as_slice(), label), (&[0usize][..], "rows"));
    grad.expand(x.shape())?.mul_scalar(weight(x))
}

fn three(_: &Tensor) -> f64 {
    3.0
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let y = sum_over(&x, vec![0], "rows", three)?;
    assert_eq!(y.to_vec::<f64>()?, [12.0, 18.0]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [3.0; 4]);
    Ok(())
}
