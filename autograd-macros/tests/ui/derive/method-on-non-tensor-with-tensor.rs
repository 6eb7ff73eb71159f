// A method of a non-tensor value that takes a tensor cannot be classified: the error spans the
// call.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn scaled(x: &Tensor, scale: f64) -> Result<Tensor> {
    let y = scale.max(x);
    Ok(x * y)
}

fn main() {}
