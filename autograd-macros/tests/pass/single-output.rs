// One `&Tensor` input, one attribute, one output; the backward saves both.
use autograd::{backward, differentiable, Tensor};

/// Docs, visibility and other attributes stay on the public function.
#[differentiable]
#[must_use]
pub fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
    grad * x * (2.0 * scale)
}

fn main() -> autograd::Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3])?.requires_grad_(true)?;
    let y = scaled_square(&x, 0.5);
    assert_eq!(y.to_vec::<f64>()?, [0.5, 2.0, 4.5]);
    assert_eq!(
        y.grad_fn().expect("recorded").name(),
        "ScaledSquareBackward0"
    );
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [1.0, -2.0, 3.0]);

    // Nothing is recorded when no input requires grad, or under `no_grad`.
    let c = Tensor::scalar(2.0f64);
    assert!(scaled_square(&c, 1.0).grad_fn().is_none());
    let _g = autograd::no_grad();
    assert!(scaled_square(&x, 1.0).grad_fn().is_none());
    Ok(())
}
