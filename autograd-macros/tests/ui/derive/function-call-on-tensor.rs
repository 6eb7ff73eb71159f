// A call of a plain function on a tensor: a derived body can call only `#[differentiable]`
// functions (each has a rule, `__autograd_<name>_rule`, beside it); rustc reports the missing rule
// at the function's name.
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
