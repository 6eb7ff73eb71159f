// `max_dim`'s indices exist in the forward only: a derived body may ignore them, and a use is
// reported at the use.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn picks(x: &Tensor) -> Result<Tensor> {
    let (m, indices) = x.max_dim(1, false)?;
    let first = indices.numel() as f64;
    Ok(m * first)
}

fn main() {}
