// A saved attribute is owned by the node, which may run on another thread: rustc's error points
// at the attribute's type in the forward, `Rc<f64>`.
use std::rc::Rc;

use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn scale(x: &Tensor, k: Rc<f64>) -> Tensor {
    x * *k
}

#[backward(scale)]
fn scale_backward(grad: &Tensor, k: Rc<f64>) -> Tensor {
    grad * *k
}

fn main() {}
