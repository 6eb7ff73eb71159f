// After the tangents, a jvp names the forward's parameters and outputs: `scale` is none of them.
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
fn scaled_jvp(x_t: &Tensor, scale: f64) -> Result<Tensor> {
    x_t.mul_scalar(scale)
}

fn main() {}
