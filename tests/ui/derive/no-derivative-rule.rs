// A tensor method without a derivative rule is an error from rustc at the method name, naming
// `DerivativeRules`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn moved(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y.transpose(0, 1)
}

fn main() {}
