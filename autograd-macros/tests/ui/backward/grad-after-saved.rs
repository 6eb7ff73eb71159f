// Incoming gradients come before the saved values: the error points at `grad`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn square(x: &Tensor) -> Tensor {
    x * x
}

#[backward(square)]
fn square_backward(x: &Tensor, grad: &Tensor) -> Tensor {
    grad * x * 2.0
}

fn main() {}
