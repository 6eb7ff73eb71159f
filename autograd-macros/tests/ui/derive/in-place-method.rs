// An in-place method in a derived body is rejected: the caret lands on `add_`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn bump(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let z = x.exp()?;
    z.add_(y)?;
    Ok(z)
}

fn main() {}
