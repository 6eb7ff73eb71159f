// `result` and `grad` name outputs and incoming gradients in a backward, so a forward parameter may
// not use them: the error points at `result`.
use autograd::{differentiable, Tensor};

#[differentiable]
fn accumulate(x: &Tensor, result: f64) -> Tensor {
    x + result
}

fn main() {}
