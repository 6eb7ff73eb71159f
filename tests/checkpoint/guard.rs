//! `is_checkpoint_valid` (PyTorch's `torch.autograd._is_checkpoint_valid()`): false inside a pass
//! that runs only part of the graph, and inside every pass nested in one.

use std::sync::{Arc, Mutex};

use autograd::*;

type R = Result<()>;

/// `x * 2` with a hook that records `is_checkpoint_valid()` when the gradient reaches it.
fn observed(x: &Tensor, seen: &Arc<Mutex<Vec<bool>>>) -> Result<Tensor> {
    let y = x.mul_scalar(2.0)?;
    let s = seen.clone();
    y.register_hook(move |_| {
        s.lock().unwrap().push(is_checkpoint_valid());
        None
    })?;
    y.exp()
}

#[test]
fn valid_outside_backward_and_in_a_full_backward() -> R {
    assert!(is_checkpoint_valid());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    observed(&x, &seen)?.backward()?;
    assert_eq!(*seen.lock().unwrap(), [true]);
    assert!(is_checkpoint_valid());
    Ok(())
}

#[test]
fn invalid_in_grad_and_in_backward_with_inputs() -> R {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    grad(&[observed(&x, &seen)?], &[x.clone()], GradOptions::new())?;
    observed(&x, &seen)?.backward_with(BackwardOptions::new().inputs(&[x.clone()]))?;
    assert_eq!(*seen.lock().unwrap(), [false, false]);
    assert!(is_checkpoint_valid(), "the state does not outlive the pass");
    Ok(())
}

/// A full `backward()` nested in a `grad()` pass is still inside it: PyTorch's guard keeps the
/// outer pass's `false` (`prev_checkpoint_valid_state && can_checkpoint()`).
#[test]
fn a_pass_nested_in_grad_inherits_its_invalidity() -> R {
    for outer_is_grad in [false, true] {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let inner_x = Tensor::scalar(3.0f64).requires_grad_(true)?;
        let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let y = x.mul_scalar(2.0)?;
        let (s, ix) = (seen.clone(), inner_x.clone());
        y.register_hook(move |_| {
            // A reentrant backward over another graph, from inside the outer pass (which runs
            // its nodes with grad mode off: no `create_graph`).
            let _g = enable_grad();
            observed(&ix, &s).unwrap().backward().unwrap();
            None
        })?;
        let out = y.exp()?;
        if outer_is_grad {
            grad(&[out], &[x.clone()], GradOptions::new())?;
        } else {
            out.backward()?;
        }
        assert_eq!(*seen.lock().unwrap(), [!outer_is_grad]);
        assert!(inner_x.grad().is_some());
    }
    Ok(())
}
