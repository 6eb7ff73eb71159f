// Assigning to a value in a derived body is rejected: the error spans the assignment.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn reassign(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y = y.log()?;
    Ok(y)
}

fn main() {}
