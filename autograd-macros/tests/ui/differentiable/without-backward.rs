// A forward without `#[backward(double)]` is rejected: the error points at the name `double`.
use autograd::{differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

fn main() {}
