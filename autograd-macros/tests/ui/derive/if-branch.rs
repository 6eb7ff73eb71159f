// A branch in a derived body is rejected, even on a non-tensor parameter: the caret lands on `if`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn maybe_exp(x: &Tensor, apply: bool) -> Result<Tensor> {
    let y = if apply { x.exp()? } else { x.log()? };
    Ok(y)
}

fn main() {}
