//! Errors inside a backward pass (B24) and final callbacks (B25). Anomaly mode (B23) is in
//! `tests/modes/anomaly.rs`: it is process-wide, so its tests run apart.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use autograd::__private::{Backward, GradVec, record_node, smallvec};
use autograd::*;

type R = Result<()>;

const SIMULATED: &str = "Simulate error on backward pass";

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn scalar_leaf(v: f64) -> Tensor {
    Tensor::scalar(v).requires_grad_(true).unwrap()
}

/// A node whose backward fails, like PyTorch's `SimulateBackwardError` custom Function.
struct SimulateBackwardError;

impl Backward for SimulateBackwardError {
    const NAME: &'static str = "SimulateBackwardErrorBackward";
    fn backward(&self, _meta: &NodeMeta, _grads: GradVec) -> Result<GradVec> {
        Err(Error::msg(SIMULATED))
    }
}

/// Identity in forward; its backward node returns `Error::msg(SIMULATED)`. `x` must have a grad_fn.
fn simulate_error(x: &Tensor) -> Result<Tensor> {
    let out = Tensor::from_vec(x.to_vec::<f64>()?, x.shape())?;
    let edge = Edge::new(x.grad_fn().expect("non-leaf input"), x.output_nr());
    record_node(smallvec::smallvec![Some(edge)], &[&out], |_| {
        SimulateBackwardError
    });
    Ok(out)
}

type Log = Arc<Mutex<Vec<String>>>;

fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn push(log: &Log, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

// ----- B24 errors ---------------------------------------------------------------------------------

/// `test_custom_function_exception`: the node's error reaches the caller unchanged; nodes after it
/// never run, so no leaf `.grad` is written; final callbacks do not run.
#[test]
fn b24_error_from_node_reaches_caller_unchanged() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let out = simulate_error(&x.mul_scalar(2.0)?)?;
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let _ = out.register_hook(move |_| {
        let r = r.clone();
        queue_callback(move || {
            r.store(true, SeqCst);
            Ok(())
        })
        .unwrap();
        None
    })?;
    let loss = out.sum()?;
    let err = loss
        .backward_with(BackwardOptions::new().retain_graph(true))
        .unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == SIMULATED),
        "{err:?}"
    );
    assert_eq!(err.to_string(), SIMULATED);
    assert!(x.grad().is_none());
    assert!(
        !ran.load(SeqCst),
        "final callbacks must not run after an error"
    );

    let err = grad(&[loss], &[x.clone()], GradOptions::new()).unwrap_err();
    assert_eq!(err.to_string(), SIMULATED);
    Ok(())
}

/// A panic in a hook stops the pass and becomes `Error::Panic`; the engine stays usable.
#[test]
fn b24_panicking_hook_becomes_error_and_engine_stays_usable() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0)?;
    let _ = y
        .grad_fn()
        .unwrap()
        .register_prehook(|_| panic!("{SIMULATED}"));
    let err = y.sum()?.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Panic { message, .. } if message.contains(SIMULATED)),
        "{err:?}"
    );
    assert!(x.grad().is_none());

    let z = x.mul_scalar(3.0)?;
    let _ = z.register_hook(|_| panic!("{SIMULATED}"))?;
    let err = z.sum()?.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Panic { message, .. } if message.contains(SIMULATED)),
        "{err:?}"
    );
    assert!(x.grad().is_none());

    // The same thread (and its ready queue) runs later passes normally.
    for _ in 0..3 {
        x.mul(&x)?.sum()?.backward()?;
    }
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![6.0, 12.0]);
    Ok(())
}

// ----- B25 final callbacks ------------------------------------------------------------------------

#[test]
fn b25_queue_callback_outside_backward_errors() {
    let err = queue_callback(|| Ok(())).unwrap_err();
    assert!(matches!(err, Error::CallbackOutsideBackward));
    assert_eq!(
        err.to_string(),
        "Final callbacks can only be installed during backward pass."
    );
}

#[test]
fn b25_callbacks_run_once_in_fifo_order_after_all_nodes() -> R {
    let log = new_log();
    let x = scalar_leaf(1.0);
    let l = log.clone();
    let _ = x.register_post_accumulate_grad_hook(move |_| push(&l, "acc"))?;
    let y = x.mul_scalar(2.0)?;
    let l = log.clone();
    let xc = x.clone();
    let queued = Arc::new(AtomicBool::new(false));
    let q = queued.clone();
    let _ = y.register_hook(move |_| {
        push(&l, "hook");
        if !q.swap(true, SeqCst) {
            let (l1, l2, xc) = (l.clone(), l.clone(), xc.clone());
            queue_callback(move || {
                push(&l1, format!("cb1 {}", xc.grad().unwrap().item::<f64>()?));
                Ok(())
            })
            .unwrap();
            queue_callback(move || {
                push(&l2, "cb2");
                Ok(())
            })
            .unwrap();
        }
        None
    })?;
    let z = y.mul_scalar(3.0)?;
    z.backward_with(BackwardOptions::new().retain_graph(true))?;
    assert_eq!(entries(&log), vec!["hook", "acc", "cb1 6", "cb2"]);
    // Callbacks belong to the pass they were queued in: they do not run again.
    z.backward()?;
    assert_eq!(
        entries(&log),
        vec!["hook", "acc", "cb1 6", "cb2", "hook", "acc"]
    );
    Ok(())
}

/// B30: final callbacks run with the pass's thread-local state, grad mode = `create_graph`, as
/// its nodes and hooks do — on the CPU and when the last node ran on a device thread. PyTorch
/// 2.15 logs `[('hook', False), False]` for a plain `backward()` and `[('hook', True), True]` for
/// `grad(.., create_graph=True)` called under `no_grad()`.
#[test]
fn b25_callbacks_run_with_the_pass_grad_mode() -> R {
    for device in [Device::Cpu, Device::Virtual(2)] {
        let run = |create_graph: bool| -> Result<Vec<String>> {
            let log = new_log();
            let x = leaf(vec![1.0, 1.0], &[2]);
            let xd = x.to(device)?;
            let l = log.clone();
            let _ = xd.register_hook(move |_| {
                push(&l, format!("hook {}", is_grad_enabled()));
                let l = l.clone();
                queue_callback(move || {
                    push(&l, format!("callback {}", is_grad_enabled()));
                    Ok(())
                })
                .unwrap();
                None
            })?;
            let y = xd.mul_scalar(2.0)?.sum()?;
            if create_graph {
                let _no_grad = no_grad();
                grad(&[y], &[x], GradOptions::new().create_graph(true))?;
                assert!(
                    !is_grad_enabled(),
                    "the caller's grad mode is its own again"
                );
            } else {
                y.backward()?;
                assert!(is_grad_enabled());
            }
            Ok(entries(&log))
        };
        assert_eq!(run(false)?, ["hook false", "callback false"], "{device}");
        assert_eq!(run(true)?, ["hook true", "callback true"], "{device}");
    }
    Ok(())
}

/// `test_callback_adds_callback`: called == 2, order backward → adds → final.
#[test]
fn b25_callback_adds_callback() -> R {
    let called = Arc::new(AtomicUsize::new(0));
    let log = new_log();
    let a = leaf(vec![0.1; 9], &[3, 3]);
    let b = a.copy()?;
    let (c, l) = (called.clone(), log.clone());
    let _ = b.grad_fn().unwrap().register_prehook(move |_| {
        push(&l, "backward");
        let (c, l) = (c.clone(), l.clone());
        queue_callback(move || {
            c.fetch_add(1, SeqCst);
            push(&l, "adds");
            let (c, l) = (c.clone(), l.clone());
            queue_callback(move || {
                c.fetch_add(1, SeqCst);
                push(&l, "final");
                Ok(())
            })
        })
        .unwrap();
        None
    });
    b.sum()?.backward()?;
    assert_eq!(called.load(SeqCst), 2);
    assert_eq!(entries(&log), vec!["backward", "adds", "final"]);
    Ok(())
}

#[test]
fn b25_callbacks_do_not_run_when_the_pass_errors() -> R {
    let x = leaf(vec![1.0], &[1]);
    let y = x.mul_scalar(2.0)?;
    let w = y.mul_scalar(3.0)?;
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let _ = w.register_hook(move |_| {
        let r = r.clone();
        queue_callback(move || {
            r.store(true, SeqCst);
            Ok(())
        })
        .unwrap();
        None
    })?;
    let _ = y
        .grad_fn()
        .unwrap()
        .register_prehook(|_| panic!("{SIMULATED}"));
    assert!(w.sum()?.backward().is_err());
    assert!(!ran.load(SeqCst));
    Ok(())
}

#[test]
fn b25_callback_error_is_returned_by_backward() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0)?;
    let second = Arc::new(AtomicBool::new(false));
    let s = second.clone();
    let _ = y.register_hook(move |_| {
        queue_callback(|| Err(Error::msg("callback failed"))).unwrap();
        let s = s.clone();
        queue_callback(move || {
            s.store(true, SeqCst);
            Ok(())
        })
        .unwrap();
        None
    })?;
    let err = y.sum()?.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == "callback failed"),
        "{err:?}"
    );
    // Callbacks run after every node: the leaf was already accumulated.
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 2.0]);
    // The exception propagates out of the callback loop: later callbacks are skipped.
    assert!(!second.load(SeqCst));
    Ok(())
}

#[test]
fn b25_callbacks_run_in_grad_before_it_returns() -> R {
    let x = scalar_leaf(2.0);
    let y = x.mul(&x)?;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let _ = y.register_hook(move |_| {
        let r = r.clone();
        queue_callback(move || {
            r.fetch_add(1, SeqCst);
            Ok(())
        })
        .unwrap();
        None
    })?;
    let g = grad(&[y], &[x], GradOptions::new())?;
    assert_eq!(g[0].as_ref().unwrap().item::<f64>()?, 4.0);
    assert_eq!(ran.load(SeqCst), 1);
    Ok(())
}
