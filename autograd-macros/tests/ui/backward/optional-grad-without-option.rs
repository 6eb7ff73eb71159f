// `Option<&Tensor>` incoming gradients need `materialize_grads = false` on the forward: the error
// points at `Option<&Tensor>`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn double(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(double)]
fn double_backward(grad: Option<&Tensor>) -> Option<Tensor> {
    grad.map(|g| g * 2.0)
}

fn main() {}
