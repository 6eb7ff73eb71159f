// A misspelt option is rejected, listing the valid ones: the error points at `nmae`.
use autograd::{backward, differentiable, Tensor};

#[differentiable(nmae = "DoubleBackward")]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
