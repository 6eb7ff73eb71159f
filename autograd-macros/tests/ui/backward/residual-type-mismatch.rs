// A residual is received as the backward's parameter type says, and rustc checks it: the error
// points at `Vec<u32>`.
use autograd::{backward, differentiable, Tensor};

#[differentiable(save(argmax))]
fn pick(x: &Tensor) -> (Tensor, Vec<usize>) {
    (x * 1.0, vec![0])
}

#[backward(pick)]
fn pick_backward(grad: &Tensor, argmax: Vec<u32>) -> Tensor {
    assert!(!argmax.is_empty());
    grad.clone()
}

fn main() {}
