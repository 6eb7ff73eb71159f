// A forward whose node saves a tensor returns the error of a saved-tensor pack hook that
// modifies its input, so its error type must convert from `autograd::Error`: rustc's error
// points at that type in the forward.
use autograd::{backward, differentiable, Tensor};

#[derive(Debug)]
struct MyError;

#[differentiable]
fn square(x: &Tensor) -> Result<Tensor, MyError> {
    Ok(x * x)
}

#[backward(square)]
fn square_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    grad * x * 2.0
}

fn main() {}
