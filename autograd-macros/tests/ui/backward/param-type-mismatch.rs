// A saved parameter must have the forward's type (or a reference to it): the error points at
// `f32`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f32) -> Tensor {
    grad * x * (2.0 * f64::from(scale))
}

fn main() {}
