//! Anomaly mode (B23): the NaN check, forward traces, and the version-counter error's hint (B14).
//!
//! The mode is process-wide, as PyTorch's (`torch.autograd.set_detect_anomaly` flips one static):
//! a test that turns it on changes what every other running test sees. So the tests here run one
//! at a time ([`serial`]), and no other test binary turns it on.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use autograd::__private::{Backward, GradVec, record_node, smallvec};
use autograd::*;

type R = Result<()>;

const PREFIX: &str = "one of the variables needed for gradient computation has been modified by an inplace operation: ";
const HINT: &str = " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd::set_detect_anomaly(true, false).";
const ANOMALY_HINT: &str = " Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!";

/// Holds every other test of this file off while one runs (anomaly mode is global).
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn scalar_leaf(v: f64) -> Tensor {
    Tensor::scalar(v).requires_grad_(true).unwrap()
}

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn req(t: Tensor) -> Tensor {
    t.requires_grad_(true).unwrap()
}

fn err_text(r: Result<()>) -> String {
    r.unwrap_err().to_string()
}

// ----- B23 NaN check -------------------------------------------------------------------------------

#[test]
fn b23_anomaly_nan_error_names_node_and_output() -> R {
    let _serial = serial();
    let x = scalar_leaf(-1.0);
    let _anomaly = detect_anomaly();
    let y = x.sqrt()?;
    let err = y.backward().unwrap_err();
    assert!(
        matches!(&err, Error::NanInGradient { node, index: 0 } if node == "SqrtBackward0"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "Function 'SqrtBackward0' returned nan values in its 0th output."
    );
    assert!(x.grad().is_none(), "the pass stopped before AccumulateGrad");
    Ok(())
}

#[test]
fn b23_anomaly_nan_in_1th_output() -> R {
    let _serial = serial();
    let a = scalar_leaf(f64::NAN);
    let b = scalar_leaf(2.0);
    let _anomaly = detect_anomaly();
    let err = a.mul(&b)?.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Function 'MulBackward0' returned nan values in its 1th output."
    );
    Ok(())
}

#[test]
fn b23_no_nan_error_without_check_nan_or_outside_anomaly_mode() -> R {
    let _serial = serial();
    let x = scalar_leaf(-1.0);
    x.sqrt()?.backward()?;
    assert!(x.grad().unwrap().item::<f64>()?.is_nan());

    let x = scalar_leaf(-1.0);
    let _anomaly = set_detect_anomaly(true, false);
    assert!(is_anomaly_enabled());
    x.sqrt()?.backward()?;
    assert!(x.grad().unwrap().item::<f64>()?.is_nan());
    Ok(())
}

/// `test_anomaly_mode_no_check_nan`: guards nest and restore.
#[test]
fn b23_anomaly_mode_no_check_nan_nested() -> R {
    let _serial = serial();
    let inp = leaf(vec![-1.0, 4.0], &[2]);
    let out = inp.sqrt()?.sum()?;
    let retain = || BackwardOptions::new().retain_graph(true);
    {
        let _outer = set_detect_anomaly(true, false);
        out.backward_with(retain())?;
        {
            let _inner = set_detect_anomaly(true, true);
            let err = out.backward_with(retain()).unwrap_err();
            assert_eq!(
                err.to_string(),
                "Function 'SqrtBackward0' returned nan values in its 0th output."
            );
        }
        out.backward_with(retain())?;
    }
    assert!(!is_anomaly_enabled());
    out.backward()?;
    Ok(())
}

/// C++ `AutogradAPITests.AnomalyMode`: double backward of `x.pow(1.5)` at 0 with grad_output 0
/// gives `0 * inf` in PowBackward0.
#[test]
fn b23_pow_double_backward_nan() -> R {
    let _serial = serial();
    let double_backward_produce_nan = |should_throw: bool| -> R {
        let x = leaf(vec![0.0], &[1]);
        let y = x.pow(1.5)?;
        let gr = grad(
            &[y],
            &[x.clone()],
            GradOptions::new().retain_graph(true).create_graph(true),
        )?;
        let go = Tensor::from_vec(vec![0.0f64], &[1])?;
        let res = grad(
            &[gr[0].clone().unwrap()],
            &[x],
            GradOptions::new().grad_outputs(vec![Some(go)]),
        );
        if should_throw {
            let err = res.unwrap_err();
            assert_eq!(
                err.to_string(),
                "Function 'PowBackward0' returned nan values in its 0th output."
            );
        } else {
            assert!(res?[0].as_ref().unwrap().to_vec::<f64>()?[0].is_nan());
        }
        Ok(())
    };
    let _anomaly = detect_anomaly();
    double_backward_produce_nan(true)?;
    {
        let _no_nan = set_detect_anomaly(true, false);
        double_backward_produce_nan(false)?;
        {
            let _nan = set_detect_anomaly(true, true);
            double_backward_produce_nan(true)?;
        }
    }
    double_backward_produce_nan(true)
}

// ----- B14 hint ------------------------------------------------------------------------------------

#[test]
fn b14_anomaly_mode_changes_the_hint() {
    let _serial = serial();
    let x = req(f32s(&[1.0; 5], &[5]));
    let a = f32s(&[2.0; 5], &[5]);
    let y = x.mul(&a).unwrap().sum().unwrap();
    a.mul_(&f32s(&[3.0], &[])).unwrap();
    let _anomaly = set_detect_anomaly(true, false);
    assert_eq!(
        err_text(y.backward()),
        format!("{PREFIX}[f32 [5]] is at version 1; expected version 0 instead.{ANOMALY_HINT}")
    );
}

/// A node that runs on a device worker thread is checked in the mode of the pass: the hint of the
/// version-counter error is the anomaly-mode one.
#[test]
fn b14_device_thread_node_gets_the_anomaly_hint() -> R {
    let _serial = serial();
    let v = Device::Virtual(0);
    let fail = || -> Result<String> {
        let x = req(f32s(&[1.0; 5], &[5]));
        let a = f32s(&[2.0; 5], &[5]).to(v)?;
        let y = x.to(v)?.mul(&a)?.sum()?; // MulBackward0 runs on `autograd-device-0`
        a.mul_(&f32s(&[3.0], &[]).to(v)?)?;
        Ok(err_text(y.backward()))
    };
    let expected = |hint: &str| {
        format!("{PREFIX}[f32 [5]] is at version 1; expected version 0 instead.{hint}")
    };
    assert_eq!(fail()?, expected(HINT));
    let _anomaly = set_detect_anomaly(true, false);
    assert_eq!(fail()?, expected(ANOMALY_HINT));
    Ok(())
}

/// Nodes that a `create_graph` pass records on a device worker thread remember their forward
/// trace in anomaly mode, as those recorded on the caller's thread do.
#[test]
fn b23_nodes_recorded_on_device_threads_keep_their_forward_trace() -> R {
    let _serial = serial();
    let first_order_grad_fn = || -> Result<NodeRef> {
        let x = leaf(vec![1.0, 2.0], &[2]);
        let y = x.to(Device::Virtual(0))?.exp()?.sum()?;
        let g = grad(&[y], &[x], GradOptions::new().create_graph(true))?[0]
            .clone()
            .unwrap();
        assert_eq!(g.device(), Device::Cpu);
        // The copy back to the CPU, recorded by the copy node's backward on the device thread.
        Ok(g.grad_fn().unwrap())
    };
    assert!(first_order_grad_fn()?.meta().forward_trace().is_none());
    let _anomaly = detect_anomaly();
    let node = first_order_grad_fn()?;
    assert!(node.meta().forward_trace().is_some(), "{node:?}");
    Ok(())
}

/// PyTorch's anomaly mode is one static, not a thread-local: another thread sees it, and
/// dropping the guard turns it off for every thread.
#[test]
fn b23_anomaly_mode_is_process_wide() {
    let _serial = serial();
    assert!(!is_anomaly_enabled());
    {
        let _anomaly = detect_anomaly();
        assert!(std::thread::spawn(is_anomaly_enabled).join().unwrap());
    }
    assert!(!std::thread::spawn(is_anomaly_enabled).join().unwrap());
    assert!(!is_anomaly_enabled());
}

/// `test_anomaly_grad_warnings`-style: a node that fails on a device worker thread is reported
/// with the trace of the forward call that created it.
#[test]
fn b23_error_on_a_device_thread_warns_with_the_forward_trace() -> R {
    let _serial = serial();
    struct Fails;
    impl Backward for Fails {
        const NAME: &'static str = "FailsBackward";
        fn backward(&self, _meta: &NodeMeta, _grads: GradVec) -> Result<GradVec> {
            Err(Error::msg("failed on purpose"))
        }
    }
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warnings.clone();
    set_warning_handler(Some(Box::new(move |m: &str| {
        w.lock().unwrap().push(m.to_string())
    })));
    let result = (|| -> R {
        let _anomaly = detect_anomaly();
        let x = leaf(vec![1.0, 2.0], &[2]);
        let xv = x.to(Device::Virtual(0))?.exp()?;
        let out = Tensor::from_vec(vec![0.0f64; 2], &[2])?.to(Device::Virtual(0))?;
        let edge = Edge::new(xv.grad_fn().unwrap(), xv.output_nr());
        record_node(smallvec::smallvec![Some(edge)], &[&out], |_| Fails);
        let err = out.sum()?.backward().unwrap_err();
        assert_eq!(err.to_string(), "failed on purpose");
        Ok(())
    })();
    set_warning_handler(None);
    result?;
    let warnings = warnings.lock().unwrap();
    let report = warnings
        .iter()
        .find(|m| m.starts_with("Error detected in FailsBackward."))
        .expect("the failing node is reported");
    assert!(report.starts_with(
        "Error detected in FailsBackward. Traceback of forward call that caused the error:\n"
    ));
    Ok(())
}

// ----- Parent traces of nodes created by a create_graph backward ----------------------------------

/// PyTorch's `MyFunc` of `test_nested_anomaly_detect_nan`: `inp.sum(0, keepdim=True)`, whose
/// backward calls `MyFunc2` (recorded when the backward runs with `create_graph`).
struct MyFunc {
    inp: Tensor,
    fail_0th: bool,
    /// Dropped with the node: tells a test whether the node is still alive.
    _alive: Arc<()>,
}

impl Backward for MyFunc {
    const NAME: &'static str = "MyFuncBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].as_ref().unwrap().expand(self.inp.shape())?;
        let gi = my_func2_apply(&g.mul(&self.inp)?, &g.add(&self.inp)?, self.fail_0th)?;
        Ok(smallvec::smallvec![Some(gi)])
    }
}

/// `MyFunc2`: `inp1 * 2 + inp2`, whose backward returns a NaN in its first (`fail_0th`) or second
/// gradient.
struct MyFunc2 {
    fail_0th: bool,
}

impl Backward for MyFunc2 {
    const NAME: &'static str = "MyFunc2Backward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let go = grads[0].as_ref().unwrap().to_vec::<f64>()?;
        let with_nan_first = |nan: bool| -> Result<Tensor> {
            let mut v = go.clone();
            v[0] = if nan { f64::NAN } else { 0.0 };
            Tensor::from_vec(v, &[go.len()])
        };
        Ok(smallvec::smallvec![
            Some(with_nan_first(self.fail_0th)?),
            Some(with_nan_first(!self.fail_0th)?)
        ])
    }
}

fn my_func_apply(inp: &Tensor, fail_0th: bool) -> Result<Tensor> {
    Ok(my_func_apply_tracked(inp, fail_0th)?.0)
}

/// [`my_func_apply`], and a weak handle that dies with the node.
fn my_func_apply_tracked(inp: &Tensor, fail_0th: bool) -> Result<(Tensor, std::sync::Weak<()>)> {
    let alive = Arc::new(());
    let weak = Arc::downgrade(&alive);
    let out = {
        let _g = no_grad();
        inp.sum_dims(&[0], true)?
    };
    if let Some(edges) = autograd::__private::next_edges(&[inp]) {
        record_node(edges, &[&out], |_| MyFunc {
            inp: inp.clone(),
            fail_0th,
            _alive: alive,
        });
    }
    Ok((out, weak))
}

fn my_func2_apply(inp1: &Tensor, inp2: &Tensor, fail_0th: bool) -> Result<Tensor> {
    let out = {
        let _g = no_grad();
        inp1.mul_scalar(2.0)?.add(inp2)?
    };
    if let Some(edges) = autograd::__private::next_edges(&[inp1, inp2]) {
        record_node(edges, &[&out], |_| MyFunc2 { fail_0th });
    }
    Ok(out)
}

/// Runs `f` with a warning handler that collects the warnings.
fn collecting_warnings(f: impl FnOnce() -> R) -> Result<Vec<String>> {
    let warnings = Arc::new(Mutex::new(Vec::<String>::new()));
    let w = warnings.clone();
    set_warning_handler(Some(Box::new(move |m: &str| {
        w.lock().unwrap().push(m.to_string())
    })));
    let result = f();
    set_warning_handler(None);
    result?;
    Ok(warnings.lock().unwrap().clone())
}

/// PyTorch's `test_nested_anomaly_detect_nan`: the node that fails in the second pass was created
/// by the first pass's `MyFuncBackward`; the warnings give the failing node's forward trace and
/// then, as its parent's, the trace of `MyFunc`'s forward.
#[test]
fn b23_nested_anomaly_detect_nan() -> R {
    let _serial = serial();
    let size = 10;
    let rand = |seed| {
        Tensor::rand_seeded(&[size], DType::F64, seed)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };

    // Without anomaly mode the NaN goes through.
    let inp = rand(1);
    let out = my_func_apply(&inp, true)?;
    let ginp = grad(
        &[out],
        &[inp.clone()],
        GradOptions::new().create_graph(true),
    )?;
    ginp[0].clone().unwrap().sum()?.backward()?;

    // Anomaly mode only for the second pass: the nodes carry no forward trace.
    let inp = rand(2);
    let out = my_func_apply(&inp, true)?;
    let ginp = grad(
        &[out],
        &[inp.clone()],
        GradOptions::new().create_graph(true),
    )?;
    let gsum = ginp[0].clone().unwrap().sum()?;
    let w = collecting_warnings(|| {
        let _anomaly = detect_anomaly();
        let err = gsum.backward().unwrap_err();
        assert_eq!(
            err.to_string(),
            "Function 'MyFunc2Backward' returned nan values in its 0th output."
        );
        Ok(())
    })?;
    // Created with anomaly mode off, the failing node has no trace and no parent link (PyTorch
    // assigns parents in anomaly mode only): one warning besides the mode's own.
    assert_eq!(w.len(), 2, "{w:#?}");
    assert!(w[1].contains("No forward pass information"), "{}", w[1]);
    assert_eq!(
        w[1],
        "Error detected in MyFunc2Backward. No forward pass information available. Enable detect \
         anomaly during forward pass for more information."
    );

    // Anomaly mode throughout: both forward traces, one warning each.
    let inp = rand(3);
    let w = collecting_warnings(|| {
        let _anomaly = detect_anomaly();
        let out = my_func_apply(&inp, false)?;
        let ginp = grad(
            &[out],
            &[inp.clone()],
            GradOptions::new().create_graph(true),
        )?;
        let err = ginp[0].clone().unwrap().sum()?.backward().unwrap_err();
        assert_eq!(
            err.to_string(),
            "Function 'MyFunc2Backward' returned nan values in its 1th output."
        );
        Ok(())
    })?;
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(w[1].starts_with(
        "Error detected in MyFunc2Backward. Traceback of forward call that caused the error:\n"
    ));
    assert!(w[1].contains("my_func2_apply"), "{}", w[1]);
    assert!(w[2].starts_with(
        "\n\nPrevious calculation was induced by MyFuncBackward. Traceback of forward call that \
         induced the previous calculation:\n"
    ));
    assert!(w[2].contains("my_func_apply"), "{}", w[2]);
    assert!(!w[2].contains("my_func2_apply"), "{}", w[2]);

    // Anomaly mode from the first backward on: the failing node has a trace, its parent (created
    // by the forward, with the mode off) has none, which PyTorch's `_print_stack` reports so.
    let inp = rand(4);
    let out = my_func_apply(&inp, true)?;
    let w = collecting_warnings(|| {
        let _anomaly = detect_anomaly();
        let ginp = grad(
            &[out],
            &[inp.clone()],
            GradOptions::new().create_graph(true),
        )?;
        assert!(ginp[0].clone().unwrap().sum()?.backward().is_err());
        Ok(())
    })?;
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(w[1].contains("my_func2_apply"), "{}", w[1]);
    assert_eq!(
        w[2],
        "Error detected in MyFuncBackward. No forward pass information available. Enable detect \
         anomaly during forward pass for more information."
    );
    Ok(())
}

/// PyTorch's `test_nested_anomaly_printstack_cleanup`: the parent links keep no node alive once
/// the graphs are gone (no cycle through the parents).
#[test]
fn b23_nested_anomaly_printstack_cleanup() -> R {
    let _serial = serial();
    let (w, node) = {
        let mut node = None;
        let w = collecting_warnings(|| {
            let _anomaly = detect_anomaly();
            let inp = Tensor::rand_seeded(&[4], DType::F64, 9)?.requires_grad_(true)?;
            let (out, alive) = my_func_apply_tracked(&inp, true)?;
            node = Some(alive);
            let ginp = grad(&[out], &[inp], GradOptions::new().create_graph(true))?;
            let err = ginp[0].clone().unwrap().sum()?.backward().unwrap_err();
            assert!(err.to_string().contains("MyFunc2Backward"));
            Ok(())
        })?;
        (w, node.unwrap())
    };
    assert!(w[1].contains("my_func2_apply") && w[2].contains("my_func_apply"));
    assert!(
        node.upgrade().is_none(),
        "MyFuncBackward outlived its graphs"
    );
    Ok(())
}
