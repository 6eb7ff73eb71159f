// A list of tensor inputs is borrowed, like a single one: `&[Tensor]`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn concat(parts: Vec<Tensor>) -> Result<Tensor> {
    Tensor::cat(&parts, 0)
}

#[backward(concat)]
fn concat_backward(grad: &Tensor) -> Vec<Tensor> {
    vec![grad.clone()]
}

fn main() {}
