// A call of a plain function on a tensor: a derived body can call only `#[differentiable]`
// functions (each has a rule beside it); the DSL's message at the function's name says so and
// what to write instead.
use autograd::{differentiable, Result, Tensor};

fn helper(t: &Tensor) -> Result<Tensor> {
    t.exp()
}

#[differentiable(derive)]
fn calls_helper(x: &Tensor) -> Result<Tensor> {
    let y = helper(x)?;
    Ok(y * 2.0)
}

fn main() {}
