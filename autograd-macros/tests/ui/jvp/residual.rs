// A residual of `save(..)` is named after the tangents, by reference; its type is checked by
// rustc against the jvp's declaration.
use autograd::{Result, Tensor, backward, differentiable, jvp};

#[differentiable(save(signs))]
fn magnitude(x: &Tensor) -> Result<(Tensor, Vec<f64>)> {
    let signs = x.to_vec::<f64>()?.iter().map(|v| v.signum()).collect();
    Ok((x.abs()?, signs))
}

#[backward(magnitude)]
fn magnitude_backward(grad: &Tensor, signs: &[f64]) -> Result<Tensor> {
    grad.mul(&Tensor::from_vec(signs.to_vec(), grad.shape())?)
}

#[jvp(magnitude)]
fn magnitude_jvp(x_t: &Tensor, signs: Vec<f64>) -> Result<Tensor> {
    x_t.mul(&Tensor::from_vec(signs, x_t.shape())?)
}

#[differentiable(save(signs))]
fn magnitude2(x: &Tensor) -> Result<(Tensor, Vec<f64>)> {
    let signs = x.to_vec::<f64>()?.iter().map(|v| v.signum()).collect();
    Ok((x.abs()?, signs))
}

#[backward(magnitude2)]
fn magnitude2_backward(grad: &Tensor, signs: &[f64]) -> Result<Tensor> {
    grad.mul(&Tensor::from_vec(signs.to_vec(), grad.shape())?)
}

#[jvp(magnitude2)]
fn magnitude2_jvp(x_t: &Tensor, signs: &[f32]) -> Result<Tensor> {
    x_t.mul_scalar(f64::from(signs[0]))
}

fn main() {}
