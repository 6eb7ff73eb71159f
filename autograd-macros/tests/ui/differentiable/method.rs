// A method cannot be `#[differentiable]`: the error points at `&self`.
use autograd::{differentiable, Tensor};

struct Layer;

impl Layer {
    #[differentiable]
    fn forward(&self, x: &Tensor) -> Tensor {
        x.clone()
    }
}

fn main() {}
