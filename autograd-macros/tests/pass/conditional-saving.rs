// What PyTorch's formulas use: `needs_input_grad`, an input's `InputMetadata` instead of its data,
// tensors saved only when another input needs its gradient (`#[needed_for]`), and attributes by
// reference through `Deref` (`&[usize]` for a `Vec<usize>`).
use autograd::graph::InputMetadata;
use autograd::{backward, differentiable, Result, Tensor};

/// Each operand is saved only if the other one needs its gradient (B14).
#[differentiable]
fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.mul(b)
}

#[backward(product)]
fn product_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    #[needed_for(b)] a: Option<&Tensor>,
    #[needed_for(a)] b: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    assert_eq!(needs_input_grad, [b.is_some(), a.is_some()]);
    Ok((
        b.map(|b| grad.mul(b)).transpose()?,
        a.map(|a| grad.mul(a)).transpose()?,
    ))
}

/// Sums over `dims`, keeping them; the backward needs only the input's shape.
#[differentiable]
fn sum_kept(x: &Tensor, dims: Vec<usize>) -> Result<Tensor> {
    x.sum_dims(&dims, true)
}

#[backward(sum_kept)]
fn sum_kept_backward(grad: &Tensor, x: &InputMetadata, dims: &[usize]) -> Result<Tensor> {
    assert!(!dims.is_empty());
    assert_eq!(x.dtype(), autograd::DType::F64);
    grad.expand(x.shape())
}

fn main() -> Result<()> {
    // Only `z` requires grad: `z` is not saved, so modifying it in place before backward is fine.
    let leaf = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let z = leaf.mul_scalar(1.0)?;
    let y = Tensor::scalar(5.0f64);
    let w = product(&z, &y)?;
    z.add_(&Tensor::scalar(1.0f64))?;
    w.backward()?;
    assert_eq!(leaf.grad().expect("leaf.grad").item::<f64>()?, 5.0);

    // With both requiring grad, both are saved and the in-place change is reported.
    let a = leaf.mul_scalar(1.0)?;
    let b = leaf.mul_scalar(1.0)?;
    let w = product(&a, &b)?;
    a.add_(&Tensor::scalar(1.0f64))?;
    let err = w.backward().unwrap_err();
    assert!(err.to_string().contains("modified by an inplace operation"), "{err}");

    let x = Tensor::ones(&[2, 3], autograd::DType::F64)?.requires_grad_(true)?;
    let s = sum_kept(&x, vec![1])?;
    x.detach().fill_(7.0)?; // only the shape was saved: no version check
    s.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [1.0; 6]);
    Ok(())
}
