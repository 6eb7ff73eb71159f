// A derived function's forward derivative comes with its backward: a `#[jvp]` is refused at its name.
use autograd::{Result, Tensor, differentiable, jvp};

#[differentiable(derive)]
fn softsign(x: &Tensor) -> Result<Tensor> {
    x.div(&x.abs()?.add_scalar(1.0)?)
}

#[jvp(softsign)]
fn softsign_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.div(&x.abs()?.add_scalar(1.0)?.pow(2.0)?)
}

fn main() {}
