//! Ops without a forward derivative: a built-in op without a `#[jvp]` computes its tangent
//! through its backward (the double-vjp trick), which fails with PyTorch's "not implemented"
//! error when that backward cannot be differentiated (`once_differentiable`, or computed
//! outside autograd), rather than giving a wrong tangent; a backward that is a constant (zero)
//! still gives the zero tangent.

use autograd::{Result, Tensor, backward, differentiable, forward_ad};

fn not_implemented(op: &str) -> String {
    format!(
        "Trying to use forward AD with {op} that does not support it because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml"
    )
}

/// `2x`, whose backward leaves autograd (`detach`): it cannot be differentiated.
#[differentiable(builtin, name = "DetachedDoubleBackward0")]
fn detached_double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(detached_double)]
fn detached_double_backward(grad: &Tensor) -> Result<Tensor> {
    grad.detach().mul_scalar(2.0)
}

/// `2x` with a `once_differentiable` backward.
#[differentiable(builtin, once_differentiable, name = "OnceDoubleBackward0")]
fn once_double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(once_double)]
fn once_double_backward(grad: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(2.0)
}

/// A step function: its backward is a constant zero, so its tangent is zero (as `sign`'s).
#[differentiable(builtin, name = "StepBackward0")]
fn step(x: &Tensor) -> Result<Tensor> {
    x.gt_scalar(0.0)?.to_dtype(x.dtype())
}

#[backward(step)]
fn step_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

fn vec(values: &[f64]) -> Result<Tensor> {
    Tensor::from_vec(values.to_vec(), &[values.len()])
}

#[test]
fn a_backward_that_cannot_be_differentiated_gives_pytorchs_error() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&vec(&[1.0, -2.0])?, &vec(&[1.0, 1.0])?)?;
    // The op returns it, as PyTorch raises it at the op.
    assert_eq!(
        detached_double(&d).unwrap_err().to_string(),
        not_implemented("detached_double")
    );
    assert_eq!(
        once_double(&d).unwrap_err().to_string(),
        not_implemented("once_double")
    );
    // Without a dual input nothing changes: reverse mode is not affected.
    let x = vec(&[1.0, -2.0])?.requires_grad_(true)?;
    detached_double(&x)?.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [2.0, 2.0]);
    Ok(())
}

#[test]
fn a_constant_backward_gives_a_zero_tangent() -> Result<()> {
    let _serial = crate::serial();
    let _level = forward_ad::dual_level()?;
    let d = forward_ad::make_dual(&vec(&[1.0, -2.0, 3.0])?, &vec(&[5.0, 6.0, 7.0])?)?;
    let y = step(&d)?;
    assert_eq!(y.to_vec::<f64>()?, [1.0, 0.0, 1.0]);
    let t = forward_ad::unpack_dual(&y)?.tangent.expect("a tangent");
    assert_eq!(t.to_vec::<f64>()?, [0.0, 0.0, 0.0]);
    Ok(())
}
