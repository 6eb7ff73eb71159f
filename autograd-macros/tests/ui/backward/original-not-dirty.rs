// `#[original]` is the value a `dirty` input had before the forward modified it; `x` is not
// listed in `dirty(..)`.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(double)]
fn double_backward(grad: &Tensor, #[original] x: &Tensor) -> Result<Tensor> {
    let _ = x;
    grad.mul_scalar(2.0)
}

fn main() {}
