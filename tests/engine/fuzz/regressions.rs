//! Minimal programs from bugs the random-graph fuzzer found, one test each.

use autograd::{Result, Tensor};

/// `transpose(0, 0)` of a 0-dim tensor returned an alias with no autograd history, so the
/// result neither required grad nor reached the input (PyTorch records `TransposeBackward0`).
/// Found as: leaf `[]`, `neg`, `transpose(0, 0)`, `neg`, then `grad()` said "element 0 of
/// tensors does not require grad and does not have a grad_fn".
#[test]
fn transpose_of_a_0_dim_tensor_keeps_its_history() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let t = x.neg()?.transpose(0, 0)?;
    assert!(t.requires_grad());
    assert_eq!(t.grad_fn().unwrap().name(), "TransposeBackward0");
    t.mul_scalar(3.0)?.backward()?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, -3.0);
    // A leaf's 0-dim transpose is a view of it that requires grad.
    let y = x.transpose(0, 0)?;
    assert!(y.requires_grad() && y.is_view());
    Ok(())
}
