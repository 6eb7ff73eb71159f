// A backward receives an optional input as `Option<&Tensor>` (`None` when it was absent): the
// error points at `&Tensor`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn shift(x: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        Some(b) => x.add(b),
        None => Ok(x.copy()?),
    }
}

#[backward(shift)]
fn shift_backward(grad: &Tensor, bias: &Tensor) -> (Tensor, Option<Tensor>) {
    (grad.clone(), Some(grad.mul(bias).expect("same shape")))
}

fn main() {}
