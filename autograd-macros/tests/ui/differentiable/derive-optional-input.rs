// `#[differentiable(derive)]` does not take optional inputs (a hand-written `#[backward]` does):
// the error points at `Option<&Tensor>`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn shift(x: &Tensor, _bias: Option<&Tensor>) -> Result<Tensor> {
    x.exp()
}

fn main() {}
