// A tensor method without a derivative rule is an error from rustc at the method name, naming
// `DerivativeRules`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn moved(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y.sum_to_shape(&[1, 3])
}

fn main() {}
