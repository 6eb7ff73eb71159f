// A mutable binding in a derived body is rejected: the caret lands on `mut`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn mutable(x: &Tensor) -> Result<Tensor> {
    let mut y = x.exp()?;
    Ok(y)
}

fn main() {}
