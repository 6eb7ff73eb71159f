// A forward must return `Tensor`, a tuple of tensors or a `Result` of either: the error points at
// `f64`.
use autograd::{differentiable, Tensor};

#[differentiable]
fn total(x: &Tensor) -> f64 {
    x.sum().and_then(|s| s.item::<f64>()).unwrap_or(0.0)
}

fn main() {}
