// `unsafe fn` forwards are not supported: the error points at `unsafe`.
use autograd::{differentiable, Tensor};

#[differentiable]
unsafe fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

fn main() {}
