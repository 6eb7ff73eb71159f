// The generated code's locals are hygienic (mixed-site): parameters named like them (`__edges`,
// `__output`, `__out0`, `__save`, `__n`, `__e`, ..) neither shadow nor are shadowed by them.
use autograd::{backward, differentiable, Result, Tensor};

#[allow(clippy::too_many_arguments)]
#[differentiable]
fn scaled(
    __edges: &Tensor,
    __output: f64,
    __out0: f64,
    __inputs: f64,
    __weak: f64,
    __save: f64,
    __n: f64,
    __e: f64,
    __v: f64,
    _no_grad: f64,
) -> Result<Tensor> {
    let k = __output + __out0 + __inputs + __weak + __save + __n + __e + __v + _no_grad;
    __edges.mul_scalar(k)
}

#[allow(clippy::too_many_arguments)]
#[backward(scaled)]
fn scaled_backward(
    grad: &Tensor,
    __edges: &Tensor,
    __output: f64,
    __out0: &f64,
    __weak: f64,
    __save: f64,
    __n: f64,
    __e: f64,
) -> Result<Tensor> {
    assert_eq!(__edges.shape(), [2]);
    grad.mul_scalar(__output + __out0 + __weak + __save + __n + __e + 3.0)
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let y = scaled(&x, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)?;
    assert_eq!(y.to_vec::<f64>()?, [9.0, 18.0]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [9.0, 9.0]);
    Ok(())
}
