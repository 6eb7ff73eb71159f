// `#[original]` in a `#[jvp]` names a `dirty` input, as in a `#[backward]`.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable(dirty(x))]
fn scale_(x: &Tensor, s: &Tensor) -> Result<Tensor> {
    let scaled = x.mul(s)?;
    x.copy_(&scaled)?;
    Ok(x.clone())
}

#[backward(scale_)]
fn scale_backward(grad: &Tensor, s: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
    Ok((grad.mul(s)?, None))
}

#[jvp(scale_)]
fn scale_jvp(x_t: &Tensor, s_t: &Tensor, #[original] s: &Tensor) -> Result<Tensor> {
    x_t.mul(s)?.add(s_t)
}

fn main() {}
