// A `Vec<Tensor>` forward has any number of outputs: its backward takes their gradients as one
// slice, `grad: &[Tensor]`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn halves(x: &Tensor) -> Result<Vec<Tensor>> {
    x.chunk(2, 0)
}

#[backward(halves)]
fn halves_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

fn main() {}
