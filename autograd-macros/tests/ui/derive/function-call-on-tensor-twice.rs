// A plain function called twice and a differentiable one beside it: one message per plain call,
// each at its own call, and none for the `#[differentiable]` function.
use autograd::{differentiable, Result, Tensor};

fn helper(t: &Tensor) -> Result<Tensor> {
    t.exp()
}

#[differentiable(derive)]
fn double(t: &Tensor) -> Result<Tensor> {
    Ok(t * 2.0)
}

#[differentiable(derive)]
fn calls_helper(x: &Tensor) -> Result<Tensor> {
    let y = helper(x)?;
    let z = double(&y)?;
    let w = helper(&z)?;
    Ok(w + y)
}

fn main() {}
