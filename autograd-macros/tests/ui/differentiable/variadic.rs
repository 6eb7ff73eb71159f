// Variadic forwards are not supported: the error points at `...` (and at `unsafe extern "C"`,
// which Rust requires of a variadic function).
use autograd::{differentiable, Tensor};

#[differentiable]
unsafe extern "C" fn double(x: &Tensor, _: ...) -> Tensor {
    x * 2.0
}

fn main() {}
