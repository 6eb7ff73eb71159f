// A `&[Tensor]` input gets one gradient per tensor: a `Vec`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn concat(parts: &[Tensor]) -> Result<Tensor> {
    Tensor::cat(parts, 0)
}

#[backward(concat)]
fn concat_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

fn main() {}
