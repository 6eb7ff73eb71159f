// Each gradient is `Tensor` or `Option<Tensor>`: the error points at `f64`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn mul(a: &Tensor, b: &Tensor) -> Tensor {
    a * b
}

#[backward(mul)]
fn mul_backward(grad: &Tensor, a: &Tensor, b: &Tensor) -> (Tensor, f64) {
    let _ = a;
    (grad * b, 0.0)
}

fn main() {}
