// A forward has exactly one backward: the error points at the second `#[backward(double)]`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

#[backward(double)]
fn double_backward_again(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
