// `dirty(..)` must name `&Tensor` inputs: the error points at `scale`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(dirty(scale))]
fn scale_(x: &Tensor, scale: f64) -> Result<Tensor> {
    x.mul_(&Tensor::scalar(scale))?;
    Ok(x.clone())
}

fn main() {}
