// Two outputs mean two incoming gradients: the error points at the only one, `grad`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn halves(x: &Tensor) -> (Tensor, Tensor) {
    (x * 0.5, x * 0.5)
}

#[backward(halves)]
fn halves_backward(grad: &Tensor) -> Tensor {
    grad * 0.5
}

fn main() {}
