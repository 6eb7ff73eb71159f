// A call of a free function on a tensor is rejected (its derivative is unknown): the error spans
// the call.
use autograd::{differentiable, Result, Tensor};

fn helper(t: &Tensor) -> Result<Tensor> {
    t.exp()
}

#[differentiable(derive)]
fn calls_helper(x: &Tensor) -> Result<Tensor> {
    let y = helper(x)?;
    Ok(y * 2.0)
}

fn main() {}
