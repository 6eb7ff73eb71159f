// A tensor method without a derivative rule whose name is also a method of a prelude trait
// (`PartialEq::ne`): still the DSL's message at the method name, not rustc's search of `PartialEq`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn squashed(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y.ne(x)
}

fn main() {}
