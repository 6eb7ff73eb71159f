//! `Option<&Tensor>` inputs of a `#[differentiable]` function (an optional bias): one next edge
//! each, `None` when the input is absent; the backward receives the saved input as
//! `Option<&Tensor>` and returns its gradient as `Option<Tensor>`.

use autograd::{DType, Result, Tensor, backward, differentiable, gradcheck};

/// `x @ wᵀ + bias` (PyTorch's `F.linear`), the bias optional.
#[differentiable]
fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let y = x.matmul(&w.transpose(0, 1)?)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}

#[backward(linear)]
fn linear_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 3],
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(Tensor, Tensor, Option<Tensor>)> {
    let gx = grad.matmul(w)?;
    let gw = grad.transpose(0, 1)?.matmul(x)?;
    let gb = match bias {
        Some(_) if needs_input_grad[2] => Some(grad.sum_dims(&[0], false)?),
        _ => None,
    };
    Ok((gx, gw, gb))
}

fn randn(shape: &[usize], seed: u64) -> Result<Tensor> {
    Tensor::randn_seeded(shape, DType::F64, seed)?.requires_grad_(true)
}

#[test]
fn gradcheck_with_and_without_bias() -> Result<()> {
    let (x, w, b) = (randn(&[4, 3], 1)?, randn(&[2, 3], 2)?, randn(&[2], 3)?);
    gradcheck(
        |i| linear(&i[0], &i[1], Some(&i[2])),
        &[x.clone(), w.clone(), b],
    )?;
    gradcheck(|i| linear(&i[0], &i[1], None), &[x, w])?;
    Ok(())
}

#[test]
fn an_absent_input_is_a_none_edge() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?.requires_grad_(true)?;
    let w = Tensor::from_vec(vec![3.0f64, 4.0, 5.0, 6.0], &[2, 2])?.requires_grad_(true)?;
    let y = linear(&x, &w, None)?;
    assert_eq!(y.to_vec::<f64>()?, [11.0, 17.0]);
    let node = y.grad_fn().expect("grad_fn");
    assert_eq!(node.name(), "LinearBackward0");
    let edges = node.next_functions();
    assert_eq!(edges.len(), 3);
    assert!(edges[0].is_some() && edges[1].is_some() && edges[2].is_none());
    y.sum()?.backward()?;
    assert_eq!(x.grad().expect("x.grad").to_vec::<f64>()?, [8.0, 10.0]);
    assert_eq!(
        w.grad().expect("w.grad").to_vec::<f64>()?,
        [1.0, 2.0, 1.0, 2.0]
    );
    Ok(())
}

#[test]
fn a_present_bias_gets_its_gradient_only_if_it_requires_grad() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let w = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
    let b = Tensor::from_vec(vec![10.0f64, 20.0], &[2])?.requires_grad_(true)?;
    let y = linear(&x, &w, Some(&b))?;
    assert_eq!(y.to_vec::<f64>()?, [11.0, 22.0, 13.0, 24.0]);
    y.sum()?.backward()?;
    assert_eq!(b.grad().expect("b.grad").to_vec::<f64>()?, [2.0, 2.0]);
    assert!(w.grad().is_none());

    // A bias that does not require grad: no gradient computed for it, none stored.
    let fixed = Tensor::from_vec(vec![10.0f64, 20.0], &[2])?;
    let y = linear(&x, &w, Some(&fixed))?;
    assert!(y.grad_fn().expect("grad_fn").next_functions()[2].is_none());
    y.sum()?.backward()?;
    assert!(fixed.grad().is_none());
    Ok(())
}

#[test]
fn nothing_is_recorded_when_no_present_input_requires_grad() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
    let w = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2])?;
    let y = linear(&x, &w, None)?;
    assert!(y.grad_fn().is_none() && !y.requires_grad());
    Ok(())
}
