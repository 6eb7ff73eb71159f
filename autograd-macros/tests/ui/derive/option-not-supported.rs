// Options that only make sense with a hand-written backward are rejected with `derive`: the
// caret lands on `once_differentiable`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive, once_differentiable)]
fn once(x: &Tensor) -> Result<Tensor> {
    x.exp()
}

fn main() {}
