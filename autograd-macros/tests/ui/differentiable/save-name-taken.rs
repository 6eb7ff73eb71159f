// A residual's name must not be a parameter's (or a reserved name): the error points at `x` in
// `save(x)`.
use autograd::{backward, differentiable, Tensor};

#[differentiable(save(x))]
fn pick(x: &Tensor) -> (Tensor, usize) {
    (x * 1.0, 0)
}

#[backward(pick)]
fn pick_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

fn main() {}
