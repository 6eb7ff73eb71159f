// Generic backwards are not supported: the error points at `<T>`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward<T>(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
