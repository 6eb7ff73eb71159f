// Attributes (non-tensor parameters): saved by value (a clone) or by reference when the backward
// names them; borrowed and `mut` attributes are fine when the backward does not name them.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn weighted(x: &Tensor, weights: Vec<f64>, mut bias: f64, label: &str) -> autograd::Result<Tensor> {
    assert!(!label.is_empty());
    bias += 0.0;
    let w = Tensor::from_vec(weights, &[x.numel()])?.reshape(x.shape())?;
    x.mul(&w)?.add_scalar(bias)
}

#[backward(weighted)]
fn weighted_backward(grad: &Tensor, x: &Tensor, weights: &Vec<f64>) -> autograd::Result<Tensor> {
    let w = Tensor::from_vec(weights.clone(), &[x.numel()])?.reshape(x.shape())?;
    grad.mul(&w)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Double,
    Triple,
}

#[differentiable]
fn scale_by(mode: Mode, r#in: &Tensor) -> Tensor {
    match mode {
        Mode::Double => r#in * 2.0,
        Mode::Triple => r#in * 3.0,
    }
}

#[backward(scale_by)]
fn scale_by_backward(grad: &Tensor, mode: Mode) -> Tensor {
    match mode {
        Mode::Double => grad * 2.0,
        Mode::Triple => grad * 3.0,
    }
}

fn main() -> autograd::Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let y = weighted(&x, vec![10.0, 20.0], 1.0, "w")?;
    assert_eq!(y.to_vec::<f64>()?, [11.0, 41.0]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [10.0, 20.0]);

    let z = Tensor::scalar(1.0f64).requires_grad_(true)?;
    scale_by(Mode::Triple, &z).backward()?;
    assert_eq!(z.grad().expect("z.grad").item::<f64>()?, 3.0);
    assert_ne!(Mode::Double, Mode::Triple);
    Ok(())
}
