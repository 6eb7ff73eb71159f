// A closure in a derived body is rejected: the error spans the closure.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn via_closure(x: &Tensor) -> Result<Tensor> {
    let _f = |t: &Tensor| t.exp();
    let y = x.tanh()?;
    Ok(y * 2.0)
}

fn main() {}
