//! Fallible hooks: the `try_` form of every hook kind (`autograd::graph`, "Fallible hooks"). An
//! `Err` returned by a hook stops the backward pass as an error raised in a node does in PyTorch
//! (B24, `test_custom_function_exception`): the error reaches the caller unchanged — same variant,
//! same payload — nodes after it do not run, final callbacks do not run, and the engine (its
//! device threads included) stays usable.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

use autograd::*;

type R = Result<()>;

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    t.grad().expect(".grad is set").to_vec::<f64>().unwrap()
}

/// The error a hook below returns through `?`: `item()` on a two-element gradient.
fn is_not_a_scalar(err: &Error) -> bool {
    matches!(err, Error::NotAScalar { numel: 2 })
}

/// Queues a final callback from inside the pass; the flag says whether it ran.
fn queue_flag_callback(ran: &Arc<AtomicBool>) {
    let ran = ran.clone();
    queue_callback(move || {
        ran.store(true, SeqCst);
        Ok(())
    })
    .unwrap();
}

#[test]
fn tensor_hook_error_stops_the_pass_on_cpu_and_device_threads() -> R {
    for device in [Device::Cpu, Device::Virtual(0)] {
        let x = leaf(&[1.0, 2.0]);
        let y = x.to(device)?.mul_scalar(2.0)?;
        let callback_ran = Arc::new(AtomicBool::new(false));
        let c = callback_ran.clone();
        let _ = y.register_hook(move |_| {
            queue_flag_callback(&c);
            None
        })?;
        let hook = y.try_register_hook(|g| {
            let _ = g.item::<f64>()?; // fails: the gradient has two elements
            Ok(None)
        })?;
        let z = y.mul_scalar(3.0)?.sum()?;
        let err = z
            .backward_with(BackwardOptions::new().retain_graph(true))
            .unwrap_err();
        assert!(is_not_a_scalar(&err), "{device}: {err:?}");
        assert_eq!(
            err.to_string(),
            "a Tensor with 2 elements cannot be converted to Scalar"
        );
        assert!(
            x.grad().is_none(),
            "{device}: nodes after the hook never ran"
        );
        assert!(
            !callback_ran.load(SeqCst),
            "{device}: no final callback after an error"
        );
        // The engine (and the device thread) stays usable, and so does the graph.
        hook.remove();
        z.backward()?;
        assert_eq!(grad_vals(&x), [6.0, 6.0], "{device}");
        assert!(callback_ran.load(SeqCst));
    }
    Ok(())
}

#[test]
fn tensor_hook_can_replace_the_gradient_or_fail() -> R {
    let x = leaf(&[1.0, -1.0]);
    let y = x.mul_scalar(2.0)?;
    y.try_register_hook(|g| {
        if g.to_vec::<f64>()?.iter().any(|v| v.is_nan()) {
            return Err(Error::msg("NaN gradient"));
        }
        Ok(Some(g.mul_scalar(10.0)?))
    })?;
    y.sum()?
        .backward_with(BackwardOptions::new().retain_graph(true))?;
    assert_eq!(grad_vals(&x), [20.0, 20.0]);
    let nan = Tensor::from_vec(vec![f64::NAN, 1.0], &[2])?;
    let err = y
        .backward_with(BackwardOptions::new().gradient(nan))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == "NaN gradient"),
        "{err:?}"
    );
    assert_eq!(grad_vals(&x), [20.0, 20.0]);
    Ok(())
}

#[test]
fn leaf_tensor_hook_error_stops_before_accumulation() -> R {
    let x = leaf(&[1.0, 2.0]);
    let h = x.try_register_hook(|g| {
        let _ = g.item::<f64>()?;
        Ok(None)
    })?;
    let err = x.mul_scalar(2.0)?.sum()?.backward().unwrap_err();
    assert!(is_not_a_scalar(&err), "{err:?}");
    assert!(x.grad().is_none());
    h.remove();
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [2.0, 2.0]);
    Ok(())
}

#[test]
fn node_prehook_error_stops_the_pass_before_the_node_runs() -> R {
    let x = leaf(&[1.0, 2.0]);
    let y = x.exp()?;
    let f = y.grad_fn().unwrap();
    let post_calls = Arc::new(AtomicUsize::new(0));
    let p = post_calls.clone();
    f.register_hook(move |_, _| {
        p.fetch_add(1, SeqCst);
        None
    });
    let pre = f.try_register_prehook(|grads| {
        let _ = grads[0].as_ref().map(|g| g.item::<f64>()).transpose()?;
        Ok(None)
    });
    let loss = y.sum()?;
    let err = loss
        .backward_with(BackwardOptions::new().retain_graph(true))
        .unwrap_err();
    assert!(is_not_a_scalar(&err), "{err:?}");
    assert_eq!(post_calls.load(SeqCst), 0, "the node did not run");
    assert!(x.grad().is_none());
    pre.remove();
    loss.backward()?;
    assert_eq!(post_calls.load(SeqCst), 1);
    assert_eq!(grad_vals(&x), [1f64.exp(), 2f64.exp()]);
    Ok(())
}

#[test]
fn node_prehook_can_replace_the_gradients() -> R {
    let x = leaf(&[1.0]);
    let y = x.copy()?;
    y.grad_fn().unwrap().try_register_prehook(|grads| {
        let g = grads[0].as_ref().ok_or_else(|| Error::msg("undefined"))?;
        Ok(Some(vec![Some(g.mul_scalar(2.0)?)]))
    });
    y.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [2.0]);
    Ok(())
}

#[test]
fn node_posthook_error_stops_the_pass_after_the_node_ran() -> R {
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(3.0)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let post = y
        .grad_fn()
        .unwrap()
        .try_register_hook(move |grad_inputs, _| {
            r.fetch_add(1, SeqCst);
            let _ = grad_inputs[0]
                .as_ref()
                .map(|g| g.item::<f64>())
                .transpose()?;
            Ok(None)
        });
    let loss = y.sum()?;
    let err = loss
        .backward_with(BackwardOptions::new().retain_graph(true))
        .unwrap_err();
    assert!(is_not_a_scalar(&err), "{err:?}");
    assert_eq!(ran.load(SeqCst), 1);
    assert!(
        x.grad().is_none(),
        "AccumulateGrad, after the node, never ran"
    );
    post.remove();
    loss.backward()?;
    assert_eq!(grad_vals(&x), [3.0, 3.0]);
    Ok(())
}

#[test]
fn node_posthook_can_replace_the_results() -> R {
    let x = leaf(&[1.0, 2.0]);
    let y = x.mul_scalar(3.0)?;
    y.grad_fn().unwrap().try_register_hook(|grad_inputs, _| {
        let g = grad_inputs[0]
            .as_ref()
            .ok_or_else(|| Error::msg("undefined"))?;
        Ok(Some(vec![Some(g.neg()?)]))
    });
    y.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [-3.0, -3.0]);
    Ok(())
}

#[test]
fn post_accumulate_grad_hook_error_stops_the_pass_after_accumulation() -> R {
    let x = leaf(&[1.0, 2.0]);
    let h = x.try_register_post_accumulate_grad_hook(|t| {
        let _ = t.grad().unwrap().item::<f64>()?;
        Ok(())
    })?;
    let callback_ran = Arc::new(AtomicBool::new(false));
    let y = x.mul_scalar(2.0)?;
    let c = callback_ran.clone();
    let _ = y.register_hook(move |_| {
        queue_flag_callback(&c);
        None
    })?;
    let err = y.sum()?.backward().unwrap_err();
    assert!(is_not_a_scalar(&err), "{err:?}");
    // As in PyTorch the hook runs after `.grad` was updated.
    assert_eq!(grad_vals(&x), [2.0, 2.0]);
    assert!(!callback_ran.load(SeqCst));
    h.remove();
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_vals(&x), [4.0, 4.0]);
    Ok(())
}

#[test]
fn multi_grad_hook_error_stops_the_pass_it_fires_in() -> R {
    let a = leaf(&[1.0]);
    let b = leaf(&[2.0]);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let h =
        try_register_multi_grad_hook(&[a.clone(), b.clone()], MultiGradMode::All, move |grads| {
            c.fetch_add(1, SeqCst);
            let total: f64 = grads
                .iter()
                .flatten()
                .map(|g| g.item::<f64>())
                .sum::<Result<f64>>()?;
            if total > 10.0 {
                return Err(Error::msg(format!("gradient norm {total} too large")));
            }
            Ok(())
        })?;
    let (sa, sb) = (a.mul_scalar(3.0)?, b.mul_scalar(5.0)?);
    sa.add(&sb)?.sum()?.backward()?;
    let (sa, sb) = (a.mul_scalar(30.0)?, b.mul_scalar(5.0)?);
    let err = sa.add(&sb)?.sum()?.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == "gradient norm 35 too large"),
        "{err:?}"
    );
    assert_eq!(calls.load(SeqCst), 2);
    h.remove();
    let (sa, sb) = (a.mul_scalar(30.0)?, b.mul_scalar(5.0)?);
    sa.add(&sb)?.sum()?.backward()?;
    assert_eq!(calls.load(SeqCst), 2);
    Ok(())
}

/// `test_saved_tensor_hooks_custom_error_propagation` (unpack half): the unpack hook's error is
/// the backward's error. On a device thread too: the pass carries its caller's hooks there.
#[test]
fn unpack_hook_error_is_the_backward_error() -> R {
    for device in [Device::Cpu, Device::Virtual(1)] {
        let a = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let out = {
            let _hooks = try_saved_tensors_hooks(
                |t: &Tensor| Ok(t.clone()),
                |_: &Tensor| Err(Error::msg("unpack")),
            );
            a.to(device)?.sin()?
        };
        let err = out.backward().unwrap_err();
        assert!(
            matches!(&err, Error::Message(m) if m == "unpack"),
            "{device}: {err:?}"
        );
        // Usable afterwards.
        a.to(device)?.sin()?.backward()?;
        assert_eq!(a.grad().unwrap().item::<f64>()?, 1f64.cos());
    }
    Ok(())
}

/// `test_saved_tensor_hooks_custom_error_propagation` (pack half): the pack hook's error is
/// raised by the forward op, as in PyTorch, and nothing is recorded.
#[test]
fn pack_hook_error_is_raised_by_the_forward() -> R {
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let err = {
        let _hooks = try_saved_tensors_hooks(
            |t: &Tensor| t.item::<f64>(), // fails: two elements
            |v: &f64| Ok(Tensor::scalar(*v)),
        );
        a.sin().unwrap_err()
    };
    assert!(is_not_a_scalar(&err), "{err:?}");
    // Outside the hooks the op records as usual.
    a.sin()?.sum()?.backward()?;
    assert_eq!(
        a.grad().unwrap().to_vec::<f64>()?,
        vec![1.0f64.cos(), 2.0f64.cos()]
    );
    Ok(())
}

/// A hook that panics still becomes `Error::Panic` naming the node it ran for.
#[test]
fn panicking_try_hook_becomes_a_panic_error() -> R {
    let x = leaf(&[1.0]);
    let y = x.exp()?;
    y.try_register_hook(|_| panic!("hook panicked"))?;
    let err = y.sum()?.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Panic { node: Some(n), message } if n == "ExpBackward0" && message == "hook panicked"),
        "{err:?}"
    );
    Ok(())
}
