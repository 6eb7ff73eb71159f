// The gradient for an optional input (`Option<&Tensor>`) is `Option<Tensor>`, `None` when the
// input is absent: the error points at the `Tensor` returned for `bias`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn shift(x: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        Some(b) => x.add(b),
        None => Ok(x.copy()?),
    }
}

#[backward(shift)]
fn shift_backward(grad: &Tensor) -> (Tensor, Tensor) {
    (grad.clone(), grad.clone())
}

fn main() {}
