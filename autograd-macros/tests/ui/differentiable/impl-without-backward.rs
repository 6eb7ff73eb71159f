// A `#[differentiable]` impl block defines both `forward` and `backward`: the error points at the
// end of the block.
use autograd::{differentiable, Result, Tensor};

#[derive(Clone)]
struct Scale {
    factor: f64,
}

#[differentiable]
impl Scale {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(self.factor)
    }
}

fn main() {}
