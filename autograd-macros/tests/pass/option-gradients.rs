// `Option` on both sides: a backward that returns `None` for an input (its gradient stays
// undefined), and `materialize_grads = false`, where undefined incoming gradients arrive as `None`.
use autograd::{backward, differentiable, Tensor};

#[differentiable]
fn first_only(x: &Tensor, y: &Tensor) -> Tensor {
    x + y * 0.0
}

#[backward(first_only)]
fn first_only_backward(grad: &Tensor) -> (Tensor, Option<Tensor>) {
    (grad.clone(), None)
}

#[differentiable(materialize_grads = false)]
fn pair(x: &Tensor) -> (Tensor, Tensor) {
    (x * 2.0, x * 3.0)
}

#[backward(pair)]
fn pair_backward(grad_0: Option<&Tensor>, grad_1: Option<&Tensor>) -> Option<Tensor> {
    match (grad_0, grad_1) {
        (Some(g0), Some(g1)) => Some(g0 * 2.0 + g1 * 3.0),
        (Some(g0), None) => Some(g0 * 2.0),
        (None, Some(g1)) => Some(g1 * 3.0),
        (None, None) => None,
    }
}

fn main() -> autograd::Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = Tensor::scalar(1.0f64).requires_grad_(true)?;
    first_only(&x, &y).backward()?;
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 1.0);
    assert!(y.grad().is_none());

    let (a, _b) = pair(&x);
    a.backward()?; // only output 0 gets a gradient: grad_1 is None
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 3.0);
    Ok(())
}
