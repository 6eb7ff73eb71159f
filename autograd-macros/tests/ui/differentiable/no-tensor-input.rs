// A forward needs at least one `&Tensor` parameter: the error points at the parameter list.
use autograd::{differentiable, Tensor};

#[differentiable]
fn constant(value: f64) -> Tensor {
    Tensor::scalar(value)
}

fn main() {}
