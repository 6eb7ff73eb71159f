// A tensor method without a derivative rule: the DSL's message at the method name, saying what to
// write instead.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn moved(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y.sum_to_shape(&[1, 3])
}

fn main() {}
