// A `match` in a derived body is rejected: the caret lands on `match`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn pick(x: &Tensor, which: u8) -> Result<Tensor> {
    let s = match which {
        0 => 1.0,
        _ => 2.0,
    };
    Ok(x * s)
}

fn main() {}
