// A derived function does not take a `#[backward]`: the error points at the derived function's
// name and says to remove one or the other.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable(derive)]
fn double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(2.0)
}

fn main() {}
