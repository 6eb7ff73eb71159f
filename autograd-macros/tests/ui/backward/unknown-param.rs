// A backward parameter must name a forward parameter or output: the error points at `y` and lists
// the names that would fit.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, y: &Tensor, scale: f64) -> Tensor {
    grad * y * (2.0 * scale)
}

fn main() {}
