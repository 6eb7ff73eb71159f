// A value saved only when needed may be missing: it must be taken as `Option<&Tensor>`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.mul(b)
}

#[backward(product)]
fn product_backward(
    grad: &Tensor,
    #[needed_for(b)] a: &Tensor,
    b: &Tensor,
) -> Result<(Tensor, Tensor)> {
    Ok((grad.mul(b)?, grad.mul(a)?))
}

fn main() {}
