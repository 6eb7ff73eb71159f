// Incoming gradients are `&Tensor`: the error points at `Tensor`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
