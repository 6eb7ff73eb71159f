// With `dirty(..)` the forward must return a `Result` (a leaf that requires grad cannot be
// modified in place): the error points at `dirty`.
use autograd::{differentiable, Tensor};

#[differentiable(dirty(x))]
fn double_(x: &Tensor) -> Tensor {
    x.mul_(&Tensor::scalar(2.0f64)).expect("in place");
    x.clone()
}

fn main() {}
