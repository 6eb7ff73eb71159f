// `crate = ".."` points the generated code at another path to the runtime, here a module that
// re-exports it (as `crate = "crate"` does inside the runtime itself).
mod rt {
    pub use autograd::*;
}

use rt::{backward, differentiable, Tensor};

#[differentiable(crate = "crate::rt")]
fn negate(x: &Tensor) -> Tensor {
    -x
}

#[backward(negate)]
fn negate_backward(grad: &Tensor) -> Tensor {
    -grad
}

fn main() -> rt::Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    negate(&x).backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, -1.0);
    Ok(())
}
