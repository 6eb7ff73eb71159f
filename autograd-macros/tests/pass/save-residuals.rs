// `save(..)`: the body returns its outputs then the residuals; the public function returns the
// outputs only (one, or a tuple; in a `Result` or not), and the backward names the residuals
// like saved parameters, by value or by reference, or not at all.
use autograd::{backward, differentiable, Result, Tensor};

#[differentiable(save(factor))]
fn scaled(x: &Tensor) -> (Tensor, f64) {
    let factor = 3.0;
    (x * factor, factor)
}

#[backward(scaled)]
fn scaled_backward(grad: &Tensor, factor: f64) -> Tensor {
    grad * factor
}

#[differentiable(save(sign, unused))]
fn pair(x: &Tensor) -> Result<(Tensor, Tensor, Vec<f64>, String)> {
    let sign = x.to_vec::<f64>()?.iter().map(|v| v.signum()).collect();
    Ok((x.abs()?, x.neg()?, sign, String::from("not saved")))
}

#[backward(pair)]
fn pair_backward(grad_0: &Tensor, grad_1: &Tensor, x: &Tensor, sign: &[f64]) -> Result<Tensor> {
    let sign = Tensor::from_vec(sign.to_vec(), x.shape())?;
    grad_0.mul(&sign)?.sub(grad_1)
}

fn main() -> Result<()> {
    let x = Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let y: Tensor = scaled(&x);
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [3.0, 3.0]);

    let z = Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (a, b): (Tensor, Tensor) = pair(&z)?;
    a.sum()?.add(&b.sum()?)?.backward()?;
    assert_eq!(z.grad().expect("z.grad").to_vec::<f64>()?, [-2.0, 0.0]);
    Ok(())
}
