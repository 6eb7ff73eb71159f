// A backward returns the gradients: the error points after the parameter list.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: &Tensor) {
    let _ = grad;
}

fn main() {}
