// `builtin`: PyTorch's generated-node semantics. The node skips its backward when every incoming
// gradient is undefined (a custom function's runs anyway, on zeros), and `dirty` inputs are
// checked before the forward runs, with the built-in errors, so a refused op changes nothing.
// `#[original]` gives the backward a dirty input's value from before the op.
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::{backward, differentiable, Error, Result, Tensor};

static BUILTIN_RUNS: AtomicUsize = AtomicUsize::new(0);
static CUSTOM_RUNS: AtomicUsize = AtomicUsize::new(0);

#[differentiable(builtin)]
fn double_builtin(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(double_builtin)]
fn double_builtin_backward(grad: &Tensor) -> Result<Tensor> {
    BUILTIN_RUNS.fetch_add(1, Ordering::SeqCst);
    grad.mul_scalar(2.0)
}

#[differentiable]
fn double_custom(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(double_custom)]
fn double_custom_backward(grad: &Tensor) -> Result<Tensor> {
    CUSTOM_RUNS.fetch_add(1, Ordering::SeqCst);
    grad.mul_scalar(2.0)
}

/// Passes values through but sends no gradient back (`None`: undefined).
#[differentiable]
fn stop(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(1.0)
}

#[backward(stop)]
fn stop_backward(_grad: &Tensor) -> Option<Tensor> {
    None
}

/// `x *= other` in place, saving `x` from before the op only if `other` needs its gradient.
#[differentiable(builtin, dirty(x), name = "MyMulBackward0")]
fn scale_(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    x.mul_(other)?;
    Ok(x.clone())
}

#[backward(scale_)]
fn scale_backward(
    grad: &Tensor,
    #[needed_for(x)] other: Option<&Tensor>,
    #[original]
    #[needed_for(other)]
    x: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((
        other.map(|o| grad.mul(o)).transpose()?,
        x.map(|x| grad.mul(x)).transpose()?,
    ))
}

fn main() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    stop(&double_builtin(&x)?)?.backward()?;
    assert_eq!(BUILTIN_RUNS.load(Ordering::SeqCst), 0, "skipped");
    assert!(x.grad().is_none());
    stop(&double_custom(&x)?)?.backward()?;
    assert_eq!(CUSTOM_RUNS.load(Ordering::SeqCst), 1, "runs on zeros");
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 0.0);

    // A refused in-place op: the built-in error, before anything changed.
    let other = Tensor::scalar(3.0f64);
    assert!(matches!(scale_(&x, &other), Err(Error::LeafInPlace)));
    assert_eq!((x.item::<f64>()?, x.version()), (1.0, 0));
    let v = x.reshape(&[1])?;
    assert!(matches!(scale_(&v, &other), Err(Error::ViewOfLeafInPlace)));

    // On a non-leaf: history rebased; `w`'s gradient uses `h` from before the op (2, not 6).
    let w = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let h = x.mul_scalar(2.0)?;
    let out = scale_(&h, &w)?;
    assert!(out.is_same(&h) && h.version() == 1 && h.item::<f64>()? == 6.0);
    assert_eq!(h.grad_fn().expect("rebased").name(), "MyMulBackward0");
    h.backward()?;
    assert_eq!(w.grad().expect("w.grad").item::<f64>()?, 2.0);
    assert_eq!(x.grad().expect("x.grad").item::<f64>()?, 6.0);
    Ok(())
}
