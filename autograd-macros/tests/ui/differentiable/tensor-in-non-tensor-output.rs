// Non-tensor outputs are not differentiable, so a tensor may not hide inside one: the error
// points at `Vec<Tensor>`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn pieces(x: &Tensor) -> Result<(Tensor, Vec<Tensor>)> {
    Ok((x.copy()?, vec![x.copy()?]))
}

#[backward(pieces)]
fn pieces_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

fn main() {}
