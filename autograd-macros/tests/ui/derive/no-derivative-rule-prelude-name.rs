// A tensor method without a derivative rule whose name is also a method of a prelude trait
// (`Ord::max`): still the DSL's message at the method name, not rustc's search of `Ord`.
use autograd::{differentiable, Result, Tensor};

#[differentiable(derive)]
fn squashed(x: &Tensor) -> Result<Tensor> {
    let y = x.exp()?;
    y.max()
}

fn main() {}
