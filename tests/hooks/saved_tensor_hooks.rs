//! Saved-tensor hooks (B38), with PyTorch's expected values.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::*;

fn randn(n: usize, seed: u64) -> Tensor {
    Tensor::randn_seeded(&[n], DType::F64, seed)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn scaled(t: &Tensor, s: f64) -> Vec<f64> {
    t.to_vec::<f64>()
        .unwrap()
        .into_iter()
        .map(|v| v * s)
        .collect()
}

fn assert_close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-9, "{a:?} vs {b:?}");
    }
}

#[test]
fn b38_unpack_hooks_exec_count() -> Result<()> {
    // test_unpack_hooks_exec_count: pack once in forward, unpack once per use in backward.
    let (packs, unpacks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (p, u) = (packs.clone(), unpacks.clone());
    let a = randn(5, 1);
    let y = {
        let _h = saved_tensors_hooks(
            move |t: &Tensor| {
                p.fetch_add(1, Ordering::SeqCst);
                t.clone()
            },
            move |t: &Tensor| {
                u.fetch_add(1, Ordering::SeqCst);
                t.clone()
            },
        );
        a.exp()?
    };
    assert_eq!(
        (packs.load(Ordering::SeqCst), unpacks.load(Ordering::SeqCst)),
        (1, 0)
    );
    y.sum()?.backward()?;
    assert_eq!(
        (packs.load(Ordering::SeqCst), unpacks.load(Ordering::SeqCst)),
        (1, 1)
    );
    Ok(())
}

#[test]
fn b38_setting_hooks_twice_uses_the_inner_pair() -> Result<()> {
    // test_setting_default_saved_variable_hooks_twice_should_use_inner.
    let (a, b);
    let (y, z);
    {
        let _outer = saved_tensors_hooks(
            |t: &Tensor| t.mul_scalar(3.0).unwrap(),
            |t: &Tensor| t.mul_scalar(3.0).unwrap(),
        );
        b = randn(5, 2);
        {
            let _inner = saved_tensors_hooks(
                |t: &Tensor| t.mul_scalar(5.0).unwrap(),
                |t: &Tensor| t.mul_scalar(5.0).unwrap(),
            );
            a = randn(5, 3);
            y = a.mul(&a)?;
        }
        z = b.mul(&b)?;
    }
    y.sum()?.backward()?;
    z.sum()?.backward()?;
    assert_close(
        &a.grad().unwrap().to_vec::<f64>()?,
        &scaled(&a, 2.0 * 5.0 * 5.0),
    );
    assert_close(
        &b.grad().unwrap().to_vec::<f64>()?,
        &scaled(&b, 2.0 * 3.0 * 3.0),
    );
    Ok(())
}

#[test]
fn b38_default_saved_tensors_hooks_double_backward() -> Result<()> {
    // test_default_saved_tensors_hooks_double_backward (first two blocks).
    let identity = || saved_tensors_hooks(|t: &Tensor| t.clone(), |t: &Tensor| t.clone());
    {
        let _h = identity();
        let a = randn(5, 4);
        let s = a.pow(3.0)?.sum()?;
        let g = grad(&[s], &[a.clone()], GradOptions::new().create_graph(true))?[0]
            .clone()
            .unwrap();
        g.sum()?.backward()?;
        assert_close(&a.grad().unwrap().to_vec::<f64>()?, &scaled(&a, 6.0));
    }
    // Only `a` is saved by the forward (pow), packed as 2a: a factor 2.
    let a = randn(5, 5);
    let s = {
        let _h = saved_tensors_hooks(
            |t: &Tensor| t.mul_scalar(2.0).unwrap(),
            |t: &Tensor| t.clone(),
        );
        a.pow(3.0)?.sum()?
    };
    let g = grad(&[s], &[a.clone()], GradOptions::new().create_graph(true))?[0]
        .clone()
        .unwrap();
    g.sum()?.backward()?;
    assert_close(&a.grad().unwrap().to_vec::<f64>()?, &scaled(&a, 6.0 * 2.0));
    Ok(())
}

const PACK_MODIFIES: &str = "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook.";

/// A pack hook that adds one to what it is given (PyTorch's test's `inc`).
fn incrementing_hooks() -> SavedTensorsHooksGuard {
    saved_tensors_hooks(
        |t: &Tensor| {
            t.add_(&Tensor::scalar(1.0f64)).unwrap();
            t.clone()
        },
        |t: &Tensor| t.clone(),
    )
}

/// `2x`, saving its input, for the custom-function cases.
#[differentiable]
fn saving_double(x: &Tensor) -> Result<Tensor> {
    x.mul_scalar(2.0)
}

#[backward(saving_double)]
fn saving_double_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let _ = x;
    grad.mul_scalar(2.0)
}

/// The same, returning a bare tensor: it cannot report an error.
#[differentiable]
fn saving_double_infallible(x: &Tensor) -> Tensor {
    x * 2.0
}

#[backward(saving_double_infallible)]
fn saving_double_infallible_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    let _ = x;
    grad * 2.0
}

#[test]
fn b38_pack_hook_modifying_its_input_fails_in_the_forward() -> Result<()> {
    // test_pack_hook_with_inplace_modification_should_fail: `torch.exp(a)` under the hooks
    // raises in the forward; checked in PyTorch 2.15 for a saved input (`b * b`) and a custom
    // Function's `save_for_backward` too.
    let a = randn(5, 6);
    {
        let _h = incrementing_hooks();
        // ExpBackward0 saves its result.
        assert_eq!(a.exp().unwrap_err().to_string(), PACK_MODIFIES);
        assert!(matches!(a.exp(), Err(Error::PackHookModifiedInput)));
        // MulBackward0 saves its operands; `b` has been incremented, as in PyTorch.
        let b = a.mul_scalar(1.0)?;
        assert_eq!(b.mul(&b).unwrap_err().to_string(), PACK_MODIFIES);
        assert_eq!(b.version(), 1);
        let err = saving_double(&a.mul_scalar(1.0)?).unwrap_err();
        assert_eq!(err.to_string(), PACK_MODIFIES);
    }
    // Without the hooks the same ops record as usual.
    let y = a.exp()?;
    y.sum()?.backward()?;
    assert_close(&a.grad().unwrap().to_vec::<f64>()?, &y.to_vec::<f64>()?);
    Ok(())
}

#[test]
fn b38_a_forward_returning_a_bare_tensor_reports_it_in_backward() -> Result<()> {
    // It cannot return the error: its node keeps it for the backward, the first use of the
    // tensor the hook modified.
    let a = randn(3, 7);
    let y = {
        let _h = incrementing_hooks();
        saving_double_infallible(&a.mul_scalar(1.0)?)
    };
    assert_eq!(
        y.grad_fn().unwrap().name(),
        "SavingDoubleInfallibleBackward0"
    );
    let err = y.sum()?.backward().unwrap_err();
    assert_eq!(err.to_string(), PACK_MODIFIES);
    Ok(())
}

#[test]
fn b38_hooks_are_thread_local_and_skip_version_checks() -> Result<()> {
    let _h = saved_tensors_hooks(
        |t: &Tensor| t.to_vec::<f64>().unwrap(),
        |v: &Vec<f64>| Tensor::from_vec(v.clone(), &[v.len()]).unwrap(),
    );
    // Another thread saves without hooks.
    std::thread::spawn(|| -> Result<()> {
        let a = Tensor::from_vec(vec![2.0f64], &[1])?.requires_grad_(true)?;
        let b = a.mul_scalar(1.0)?;
        let y = b.mul(&b)?;
        b.add_(&Tensor::scalar(1.0f64))?;
        assert!(matches!(
            y.backward(),
            Err(Error::SavedTensorModified { .. })
        ));
        Ok(())
    })
    .join()
    .unwrap()?;
    // Here the packed copy is used: modifying the original later is no error.
    let a = Tensor::from_vec(vec![2.0f64], &[1])?.requires_grad_(true)?;
    let b = a.mul_scalar(1.0)?;
    let y = b.mul(&b)?;
    {
        let _g = no_grad();
        b.add_(&Tensor::scalar(1.0f64))?;
    }
    y.sum()?.backward()?;
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, vec![4.0]);
    Ok(())
}

/// `SavedVariable::unpack` wraps what the unpack hook returned in a new variable with the saved
/// tensor's history (its grad_fn, or the leaf's grad accumulator): history the hook's result has
/// of its own — here `t * 2`, recorded because a `create_graph` pass runs the hook with grad mode
/// on — is not differentiated through. PyTorch 2.15: g = 12x², then x.grad = 48x (96x if the
/// hook's own `MulBackward0` were kept).
#[test]
fn b38_unpacked_tensor_takes_the_saved_history_not_the_hooks() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let _hooks = saved_tensors_hooks(
        |t: &Tensor| t.clone(),
        |t: &Tensor| t.mul_scalar(2.0).unwrap(),
    );
    let y = x.pow(3.0)?.sum()?;
    let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, vec![12.0, 48.0, 108.0]);
    g.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![48.0, 96.0, 144.0]);
    Ok(())
}

/// B30 with B38: a `create_graph` pass records the nodes of its double-backward graph on the
/// thread that runs each node — a device worker for `Virtual(0)` nodes — and PyTorch runs every
/// node with the caller's thread-local state, saved-tensor hooks included. The unpack hook here
/// doubles what it returns, so every node saved through it changes the result: the values are
/// PyTorch 2.15's for the same program on the CPU
/// (`saved_tensors_hooks(lambda t: t, lambda t: t * 2)` around `x.pow(3).sum()`, `grad` with
/// `create_graph=True`, then `g.sum().backward()`).
#[test]
fn b30_default_hooks_reach_nodes_recorded_on_device_threads() -> Result<()> {
    let run = |device: Device| -> Result<(Vec<f64>, Vec<f64>)> {
        let _hooks = saved_tensors_hooks(
            |t: &Tensor| t.clone(),
            |t: &Tensor| t.mul_scalar(2.0).unwrap(),
        );
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
        let y = x.to(device)?.pow(3.0)?.sum()?;
        let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?[0]
            .clone()
            .unwrap();
        g.sum()?.backward()?;
        Ok((g.to_vec::<f64>()?, x.grad().unwrap().to_vec::<f64>()?))
    };
    let expected = (vec![12.0, 48.0, 108.0], vec![48.0, 96.0, 144.0]);
    assert_eq!(run(Device::Cpu)?, expected);
    assert_eq!(run(Device::Virtual(0))?, expected);
    Ok(())
}

/// The hooks a pass carries are installed only while its nodes run: the device thread saves
/// without hooks again for a later pass started where none are installed, and the caller's own
/// stack is untouched.
#[test]
fn b30_carried_hooks_do_not_outlive_the_pass() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    {
        let _hooks = saved_tensors_hooks(
            |t: &Tensor| t.clone(),
            |t: &Tensor| t.mul_scalar(2.0).unwrap(),
        );
        let y = x.to(Device::Virtual(1))?.pow(3.0)?.sum()?;
        let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?[0]
            .clone()
            .unwrap();
        assert_eq!(g.to_vec::<f64>()?, vec![12.0, 48.0, 108.0]);
    }
    // No hooks here: PyTorch gives 3x² and 6x.
    let y = x.to(Device::Virtual(1))?.pow(3.0)?.sum()?;
    let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, vec![3.0, 12.0, 27.0]);
    g.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![6.0, 12.0, 18.0]);
    Ok(())
}
