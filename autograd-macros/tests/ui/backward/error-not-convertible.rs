// A fallible backward's error must convert into `autograd::Error`: rustc's error points at the
// backward's return type.
use autograd::{backward, differentiable, Tensor};

#[derive(Debug)]
struct MyError;

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: &Tensor) -> Result<Tensor, MyError> {
    Ok(grad * 2.0)
}

fn main() {}
