// An early `return` in a derived body is rejected: the error spans the `return`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn early(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    return Ok(y);
}

fn main() {}
