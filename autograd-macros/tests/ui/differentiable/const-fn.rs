// `const fn` forwards are not supported: the error points at `const`.
use autograd::{differentiable, Tensor};

#[differentiable]
const fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

fn main() {}
