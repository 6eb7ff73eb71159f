// An attribute whose type borrows cannot be saved for the backward pass: the error points at
// `dims` in the backward.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn sum_over(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    x.sum_dims(dims, true)
}

#[backward(sum_over)]
fn sum_over_backward(grad: &Tensor, x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let _ = dims;
    grad.expand(x.shape())
}

fn main() {}
