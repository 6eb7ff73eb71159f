// `#[needed_for(..)]` names the tensor inputs whose gradients need the value: the error points
// at the name that is not one and lists those that are.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn product(a: &Tensor, b: &Tensor, k: f64) -> Result<Tensor> {
    a.mul(b)?.mul_scalar(k)
}

#[backward(product)]
fn product_backward(
    grad: &Tensor,
    #[needed_for(k)] a: Option<&Tensor>,
    b: &Tensor,
    k: f64,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((Some(grad.mul(b)?.mul_scalar(k)?), a.map(|a| grad.mul(a)).transpose()?))
}

fn main() {}
