// A compound assignment in a derived body is rejected: the error spans `y += x`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn accumulate(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y += x;
    Ok(y)
}

fn main() {}
