// A tangent is a `&Tensor`: the error points at `Tensor` and names the input it is the tangent of.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable]
fn scaled(x: &Tensor, s: f64) -> Result<Tensor> {
    x.mul_scalar(s)
}

#[backward(scaled)]
fn scaled_backward(grad: &Tensor, s: f64) -> Result<Tensor> {
    grad.mul_scalar(s)
}

#[jvp(scaled)]
fn scaled_jvp(x_t: Tensor, s: f64) -> Result<Tensor> {
    x_t.mul_scalar(s)
}

fn main() {}
