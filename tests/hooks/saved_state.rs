//! State computed in the forward and kept for the backward: `#[differentiable(save(..))]`
//! (PyTorch's `ctx.save_for_backward(intermediate)` / `ctx.attr = ..`). The body returns its
//! output followed by the residuals; the public function returns the output only; the backward
//! names the residuals like saved parameters, and nothing is computed twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use autograd::{DType, Result, Tensor, backward, differentiable, gradcheck, no_grad};

static FORWARD_RUNS: AtomicUsize = AtomicUsize::new(0);
/// Held by every test that calls `row_max`: the tests run in parallel, and the count must see
/// one test's forward runs only (wherever the engine runs them).
static ROW_MAX: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ROW_MAX
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The largest element of each row, keeping where it was (the residual `argmax`) and the row
/// length (`cols`) for the backward.
#[differentiable(save(argmax, cols))]
fn row_max(x: &Tensor) -> Result<(Tensor, Vec<usize>, usize)> {
    FORWARD_RUNS.fetch_add(1, Ordering::Relaxed);
    let (rows, cols) = (x.shape()[0], x.shape()[1]);
    let data = x.to_vec::<f64>()?;
    let mut values = Vec::with_capacity(rows);
    let mut argmax = Vec::with_capacity(rows);
    for row in data.chunks(cols) {
        let (at, v) = row
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |best, (i, &v)| {
                if v > best.1 { (i, v) } else { best }
            });
        values.push(v);
        argmax.push(at);
    }
    Ok((Tensor::from_vec(values, &[rows])?, argmax, cols))
}

#[backward(row_max)]
fn row_max_backward(grad: &Tensor, argmax: &[usize], cols: usize) -> Result<Tensor> {
    let g = grad.to_vec::<f64>()?;
    let mut out = vec![0.0; argmax.len() * cols];
    for (row, (&at, g)) in argmax.iter().zip(g).enumerate() {
        out[row * cols + at] = g;
    }
    Tensor::from_vec(out, &[argmax.len(), cols])
}

#[test]
fn the_backward_reads_the_residuals_the_forward_computed_once() -> Result<()> {
    let _serial = serial();
    let x =
        Tensor::from_vec(vec![1.0f64, 5.0, 2.0, 7.0, 3.0, 4.0], &[2, 3])?.requires_grad_(true)?;
    let before = FORWARD_RUNS.load(Ordering::Relaxed);
    let y = row_max(&x)?;
    assert_eq!(y.to_vec::<f64>()?, [5.0, 7.0]);
    assert_eq!(y.grad_fn().expect("grad_fn").name(), "RowMaxBackward0");
    y.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(FORWARD_RUNS.load(Ordering::Relaxed) - before, 1);
    assert_eq!(
        x.grad().expect("x.grad").to_vec::<f64>()?,
        [0.0, 2.0, 0.0, 2.0, 0.0, 0.0]
    );
    Ok(())
}

#[test]
fn without_a_node_the_residuals_are_dropped() -> Result<()> {
    let _serial = serial();
    let x = Tensor::from_vec(vec![1.0f64, 5.0], &[1, 2])?;
    assert_eq!(row_max(&x)?.to_vec::<f64>()?, [5.0]);
    let x = x.requires_grad_(true)?;
    let _g = no_grad();
    let y = row_max(&x)?;
    assert!(y.grad_fn().is_none());
    assert_eq!(y.to_vec::<f64>()?, [5.0]);
    Ok(())
}

#[test]
fn gradcheck_through_the_residuals() -> Result<()> {
    let _serial = serial();
    let x = Tensor::randn_seeded(&[3, 4], DType::F64, 7)?.requires_grad_(true)?;
    gradcheck(|i| row_max(&i[0]), &[x])
}

#[test]
fn max_dim_keeps_the_positions_its_kernel_found() -> Result<()> {
    // The runtime's `max_dim` is declared with `save(argmax)`: one kernel finds values and
    // positions; the node keeps the positions (and `x`'s shape), not `x`, so changing `x` in
    // place afterwards does not invalidate the backward.
    let x =
        Tensor::from_vec(vec![1.0f64, 9.0, 3.0, 7.0, 2.0, 8.0], &[2, 3])?.requires_grad_(true)?;
    let y = x.mul_scalar(1.0)?;
    let (values, indices) = y.max_dim(1, false)?;
    assert_eq!(
        (values.to_vec::<f64>()?, indices.to_vec::<i64>()?),
        (vec![9.0, 8.0], vec![1, 2])
    );
    let node = values.grad_fn().expect("grad_fn");
    assert_eq!(node.name(), "MaxBackward0");
    y.mul_(&Tensor::scalar(0.0f64))?;
    values.sum()?.backward()?;
    assert_eq!(
        x.grad().expect("x.grad").to_vec::<f64>()?,
        [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    Ok(())
}
