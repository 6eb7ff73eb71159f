// One output means one incoming gradient: the error points at the extra `grad_1`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, grad_1: &Tensor, x: &Tensor, scale: f64) -> Tensor {
    (grad + grad_1) * x * (2.0 * scale)
}

fn main() {}
