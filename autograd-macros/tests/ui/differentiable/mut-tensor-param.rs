// `&mut Tensor` parameters are rejected (in-place inputs use `dirty(..)`): the error points at the
// type.
use autograd::{differentiable, Tensor};

#[differentiable]
fn double_(x: &mut Tensor) -> Tensor {
    x.clone()
}

fn main() {}
