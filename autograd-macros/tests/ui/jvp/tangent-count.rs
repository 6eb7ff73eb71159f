// A jvp returns one tangent per output: two here.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable]
fn product(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul(y)?, x.add(y)?))
}

#[backward(product)]
fn product_backward(grad_0: &Tensor, grad_1: &Tensor, x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((grad_0.mul(y)?.add(grad_1)?, grad_0.mul(x)?.add(grad_1)?))
}

#[jvp(product)]
fn product_jvp(x_t: &Tensor, y_t: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x_t.mul(y)?.add(&x.mul(y_t)?)
}

fn main() {}
