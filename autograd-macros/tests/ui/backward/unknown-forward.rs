// `#[backward(..)]` must name a `#[differentiable]` function: the error points at `doubel`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(doubel)]
fn double_backward(grad: &Tensor) -> Tensor {
    grad * 2.0
}

fn main() {}
