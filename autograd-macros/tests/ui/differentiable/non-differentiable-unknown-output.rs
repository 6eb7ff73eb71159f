// `non_differentiable(..)` must name outputs (`result_0`, `result_1`): the error points at
// `result_2`.
use autograd::{backward, differentiable, Tensor};

#[differentiable(non_differentiable(result_2))]
fn halves(x: &Tensor) -> (Tensor, Tensor) {
    (x * 0.5, x * 0.5)
}

#[backward(halves)]
fn halves_backward(grad_0: &Tensor, grad_1: &Tensor) -> Tensor {
    (grad_0 + grad_1) * 0.5
}

fn main() {}
