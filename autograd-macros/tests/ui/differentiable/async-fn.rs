// `async fn` forwards are not supported: the error points at `async`.
use autograd::{differentiable, Tensor};

#[differentiable]
async fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

fn main() {}
