// A loop in a derived body is rejected: the caret lands on `for`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn repeated(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    for _ in 0..3 {}
    Ok(y)
}

fn main() {}
