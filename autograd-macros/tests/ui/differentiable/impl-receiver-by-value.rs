// `forward` and `backward` take `&self`: the error points at the receiver written.
use autograd::{differentiable, Result, Tensor};

#[derive(Clone)]
struct Scale {
    factor: f64,
}

#[differentiable]
impl Scale {
    fn forward(self, x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(self.factor)
    }

    fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        grad.mul_scalar(self.factor)
    }
}

fn main() {}
