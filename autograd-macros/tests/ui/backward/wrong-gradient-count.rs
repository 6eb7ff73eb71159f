// One gradient per `&Tensor` input: `mul` has two, so the error points at the return type `Tensor`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn mul(a: &Tensor, b: &Tensor) -> Tensor {
    a * b
}

#[backward(mul)]
fn mul_backward(grad: &Tensor, b: &Tensor) -> Tensor {
    grad * b
}

fn main() {}
