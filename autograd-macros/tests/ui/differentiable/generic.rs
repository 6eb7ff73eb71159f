// Generic forwards are not supported: the error points at `<T: Into<f64>>`.
use autograd::{differentiable, Tensor};

#[differentiable]
fn scale<T: Into<f64>>(x: &Tensor, by: T) -> Tensor {
    x * by.into()
}

fn main() {}
