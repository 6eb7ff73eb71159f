// A saved tensor input is `&Tensor` in the backward, as in the forward: the error points at
// `Tensor`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn square(x: &Tensor) -> Tensor {
    x * x
}

#[backward(square)]
fn square_backward(grad: &Tensor, x: Tensor) -> Tensor {
    grad * &x * 2.0
}

fn main() {}
