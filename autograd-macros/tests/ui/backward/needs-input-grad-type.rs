// `needs_input_grad` has one flag per tensor input: `[bool; 2]` here (or `&[bool]`).
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn sum2(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.add(b)
}

#[backward(sum2)]
fn sum2_backward(grad: &Tensor, needs_input_grad: [bool; 3]) -> (Tensor, Option<Tensor>) {
    (grad.clone(), needs_input_grad[1].then(|| grad.clone()))
}

fn main() {}
