// A saved tensor taken as `Option<&Tensor>` needs `#[needed_for(..)]` to say when it is saved.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.mul(b)
}

#[backward(product)]
fn product_backward(
    grad: &Tensor,
    a: Option<&Tensor>,
    b: &Tensor,
) -> Result<(Tensor, Option<Tensor>)> {
    Ok((grad.mul(b)?, a.map(|a| grad.mul(a)).transpose()?))
}

fn main() {}
