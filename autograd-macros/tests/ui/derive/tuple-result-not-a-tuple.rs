// A derived function that returns a tuple ends its body with a tuple of tensors; the error spans
// the tail that is not one.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn pair(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let y = x.exp()?;
    Ok(y)
}

fn main() {}
