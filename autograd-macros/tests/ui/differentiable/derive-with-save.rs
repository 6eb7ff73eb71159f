// `save(..)` goes with a hand-written `#[backward]`, not with `derive`: the error points at
// `save`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive, save(r))]
fn double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

fn main() {}
