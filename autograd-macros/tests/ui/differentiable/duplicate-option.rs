// An option given twice is rejected: the error points at the second `name`.
use autograd::{backward, differentiable, Tensor};

#[differentiable(name = "DoubleBackward", once_differentiable, name = "TwiceBackward")]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
