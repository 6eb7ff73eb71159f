//! `matmul` of a batch against a matrix folds the batch into one `mm`, as PyTorch's
//! `should_fold` does: the graph is PyTorch's (`UnsafeViewBackward0` over `MmBackward0`) and the
//! values and gradients are PyTorch's. Expected values from PyTorch 2.15:
//!
//! ```python
//! x = (torch.arange(24., dtype=torch.float64).reshape(2, 3, 4) / 10).requires_grad_()
//! w = (torch.arange(20., dtype=torch.float64).reshape(4, 5) / 10 - 0.5).requires_grad_()
//! y = x @ w; (y * y).sum().backward()
//! y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()  # UnsafeViewBackward0 MmBackward0
//! ```

use autograd::*;

fn inputs() -> Result<(Tensor, Tensor)> {
    let x: Vec<f64> = (0..24).map(|i| f64::from(i) / 10.0).collect();
    let w: Vec<f64> = (0..20).map(|i| f64::from(i) / 10.0 - 0.5).collect();
    Ok((
        Tensor::from_vec(x, &[2, 3, 4])?.requires_grad_(true)?,
        Tensor::from_vec(w, &[4, 5])?.requires_grad_(true)?,
    ))
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

#[test]
fn a_batch_against_a_matrix_records_pytorchs_folded_graph_and_gradients() -> Result<()> {
    let (x, w) = inputs()?;
    let y = x.matmul(&w)?;
    assert_eq!(y.shape(), &[2, 3, 5]);
    assert!(
        !y.is_view(),
        "the fold's result is an _unsafe_view, not a view"
    );
    let node = y.grad_fn().expect("recorded");
    assert_eq!(node.name(), "UnsafeViewBackward0");
    let under = node.next_functions()[0]
        .clone()
        .expect("an edge to the product");
    assert_eq!(under.node.name(), "MmBackward0");

    y.mul(&y)?.sum()?.backward()?;
    #[rustfmt::skip]
    let w_grad = [
        22.4, 30.16, 37.92, 45.68, 53.44, 24.08, 32.392, 40.704, 49.016, 57.328,
        25.76, 34.624, 43.488, 52.352, 61.216, 27.44, 36.856, 46.272, 55.688, 65.104,
    ];
    assert_close(
        "w.grad",
        &w.grad().expect("w.grad").to_vec::<f64>()?,
        &w_grad,
    );
    let x_grad = x.grad().expect("x.grad").to_vec::<f64>()?;
    assert_close(
        "x.grad[..8]",
        &x_grad[..8],
        &[-1.44, 1.16, 3.76, 6.36, -3.28, 2.92, 9.12, 15.32],
    );
    Ok(())
}

#[test]
fn a_batch_that_does_not_fold_as_a_view_against_a_constant_matrix_stays_batched() -> Result<()> {
    // PyTorch's should_fold: the matrix does not require grad and the transposed batch's leading
    // dims do not fold without a copy, so no fold (PyTorch runs a bmm); same values either way.
    let (x, w) = inputs()?;
    let w = w.detach();
    let xt = x.transpose(0, 1)?;
    let y = xt.matmul(&w)?;
    assert_eq!(y.shape(), &[3, 2, 5]);
    assert_ne!(y.grad_fn().expect("recorded").name(), "UnsafeViewBackward0");
    let folded = xt.contiguous()?.matmul(&w)?;
    assert_close("values", &y.to_vec::<f64>()?, &folded.to_vec::<f64>()?);
    Ok(())
}
