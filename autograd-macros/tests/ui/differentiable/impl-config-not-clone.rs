// The configuration is kept by the node: rustc requires it to be `Clone` (through `ToOwned`),
// `Send`, `Sync` and `'static`, at the type of `self`.
use autograd::{differentiable, Result, Tensor};

struct Scale {
    factor: f64,
}

#[differentiable]
impl Scale {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(self.factor)
    }

    fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        grad.mul_scalar(self.factor)
    }
}

fn main() {}
