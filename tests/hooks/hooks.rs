//! Backward hooks (B17–B21 of `docs/behaviours.md`): tensor hooks, node pre/post hooks,
//! retains_grad, post-accumulate-grad hooks, and their interaction with in-place ops. Values are
//! those asserted by PyTorch's `test_autograd.py`.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use autograd::*;

type R = Result<()>;
type Grads = Option<Vec<Option<Tensor>>>;
type Log = Arc<Mutex<Vec<String>>>;

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v, shape).unwrap();
    t.requires_grad_(true).unwrap()
}

fn scalar_leaf(v: f64) -> Tensor {
    Tensor::scalar(v).requires_grad_(true).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    vals(&t.grad().expect(".grad should be set"))
}

fn grad_item(t: &Tensor) -> f64 {
    t.grad().unwrap().item::<f64>().unwrap()
}

/// Values of the first gradient of a node hook's argument.
fn first(gs: &[Option<Tensor>]) -> Vec<f64> {
    vals(gs[0].as_ref().unwrap())
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        let ok = (a - e).abs() <= 1e-9 * (1.0 + e.abs());
        assert!(ok, "{actual:?} vs {expected:?}");
    }
}

/// Applies `f` to every defined gradient (what a pre-hook returning a new tuple does).
fn map_all(gs: &[Option<Tensor>], f: impl Fn(&Tensor) -> Result<Tensor>) -> Grads {
    Some(
        gs.iter()
            .map(|g| g.as_ref().map(|g| f(g).unwrap()))
            .collect(),
    )
}

fn new_log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn push(log: &Log, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

/// Returns and clears the log.
fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// A tensor hook that logs `"<tag> <grad values>"` and returns `f(grad)`.
fn tensor_hook(
    log: &Log,
    tag: &'static str,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> impl Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static {
    let log = log.clone();
    move |g| {
        push(&log, format!("{tag} {:?}", vals(g)));
        Some(f(g).unwrap())
    }
}

/// A node pre-hook that logs `"<tag> <first grad values>"` and maps every gradient with `f`.
fn pre_hook(
    log: &Log,
    tag: &'static str,
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
) -> impl Fn(&[Option<Tensor>]) -> Grads + Send + Sync + 'static {
    let log = log.clone();
    move |gs| {
        push(&log, format!("{tag} {:?}", first(gs)));
        map_all(gs, &f)
    }
}

fn retain() -> BackwardOptions {
    BackwardOptions::new().retain_graph(true)
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn counting_tensor_hook(
    c: &Arc<AtomicUsize>,
) -> impl Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static + use<> {
    let c = c.clone();
    move |_| {
        c.fetch_add(1, SeqCst);
        None
    }
}

fn counting_prehook(
    c: &Arc<AtomicUsize>,
) -> impl Fn(&[Option<Tensor>]) -> Grads + Send + Sync + 'static + use<> {
    let c = c.clone();
    move |_| {
        c.fetch_add(1, SeqCst);
        None
    }
}

/// The AccumulateGrad node of leaf `a`, reached as `b.grad_fn.next_functions[0]` for `b = f(a)`.
fn acc_node_of(b: &Tensor) -> NodeRef {
    let edge = b.grad_fn().unwrap().next_functions()[0].clone();
    edge.expect("edge to AccumulateGrad").node
}

#[test]
fn b18_test_hooks() -> R {
    let x = Tensor::ones(&[5, 5], DType::F64)?.requires_grad_(true)?;
    let y = Tensor::ones(&[5, 5], DType::F64)?
        .mul_scalar(4.0)?
        .requires_grad_(true)?;
    let count = counter();
    let bw_hook = |inc: usize| {
        let c = count.clone();
        move |_g: &Tensor| {
            c.fetch_add(inc, SeqCst);
            None
        }
    };
    let z = x
        .pow(2.0)?
        .add(&x.mul_scalar(2.0)?)?
        .add(&x.mul(&y)?)?
        .add(&y)?;
    let _ = x.register_hook(bw_hook(0))?;
    let test = z.register_hook(bw_hook(1))?;
    let ones = Tensor::ones(&[5, 5], DType::F64)?;
    let opts = || {
        BackwardOptions::new()
            .gradient(ones.clone())
            .retain_graph(true)
    };
    z.backward_with(opts())?;
    assert_eq!(count.load(SeqCst), 1);

    let test2 = z.register_hook(bw_hook(2))?;
    z.backward_with(opts())?;
    assert_eq!(count.load(SeqCst), 4);

    test2.remove();
    z.backward_with(opts())?;
    assert_eq!(count.load(SeqCst), 5);

    let bw_hook_modify = |g: &Tensor| Some(g.mul_scalar(2.0).unwrap());
    let zero_y_grad = || {
        let _g = no_grad();
        y.grad().unwrap().zero_().map(|_| ())
    };
    test.remove();
    let _ = z.register_hook(bw_hook_modify)?;
    zero_y_grad()?;
    z.backward_with(opts())?;
    assert_close(&grad_vals(&y), &[4.0; 25]); // (x + 1) * 2

    let _ = y.register_hook(bw_hook_modify)?;
    zero_y_grad()?;
    z.backward_with(BackwardOptions::new().gradient(ones))?;
    assert_close(&grad_vals(&y), &[8.0; 25]); // (x + 1) * 4
    Ok(())
}

#[test]
fn b18_tensor_hooks_run_in_registration_order_and_none_keeps_the_gradient() -> R {
    // Non-leaf hooks (stored on the grad_fn) and leaf hooks (run by AccumulateGrad); a hook
    // returning None leaves the gradient unchanged.
    let log = new_log();
    let x = scalar_leaf(1.0);
    let y = x.copy()?;
    let _ = y.register_hook(tensor_hook(&log, "y1", |g| g.mul_scalar(2.0)))?;
    let _ = y.register_hook(|_| None)?;
    let _ = y.register_hook(tensor_hook(&log, "y2", |g| g.add_scalar(1.0)))?;
    let _ = x.register_hook(tensor_hook(&log, "x1", |g| g.add_scalar(1.0)))?;
    let _ = x.register_hook(|_| None)?;
    let _ = x.register_hook(tensor_hook(&log, "x2", |g| g.mul_scalar(10.0)))?;
    y.backward()?;
    assert_eq!(take(&log), ["y1 [1.0]", "y2 [2.0]", "x1 [3.0]", "x2 [4.0]"]);
    assert_eq!(grad_item(&x), 40.0);
    Ok(())
}

#[test]
fn b18_node_hooks_run_in_registration_order_and_see_earlier_modifications() -> R {
    let log = new_log();
    let x = scalar_leaf(1.0);
    let y = x.mul_scalar(3.0)?;
    let f = y.grad_fn().unwrap();
    let _ = f.register_prehook(pre_hook(&log, "pre1", |g| g.mul_scalar(2.0)));
    let _ = f.register_prehook(pre_hook(&log, "pre2", |g| g.add_scalar(1.0)));
    let l = log.clone();
    let _ = f.register_hook(move |gi, go| {
        push(&l, format!("post1 {:?} {:?}", first(gi), first(go)));
        map_all(gi, |g| g.mul_scalar(2.0))
    });
    let l = log.clone();
    let _ = f.register_hook(move |gi, _go| {
        push(&l, format!("post2 {:?}", first(gi)));
        map_all(gi, |g| g.add_scalar(1.0))
    });
    y.backward()?;
    // pre: 1 -> 2 -> 3; apply: 9; post: 9 -> 18 -> 19.
    assert_eq!(
        take(&log),
        [
            "pre1 [1.0]",
            "pre2 [2.0]",
            "post1 [9.0] [3.0]",
            "post2 [18.0]"
        ]
    );
    assert_eq!(grad_item(&x), 19.0);
    Ok(())
}

/// `test_grad_fn_prehooks` (the built-in `x * 2` variant).
#[test]
fn b18_grad_fn_prehooks() -> R {
    let a = leaf(vec![1.0], &[1]);
    let b = a.mul_scalar(2.0)?;
    let (post_counter, pre_counter) = (counter(), counter());
    let log = new_log();
    let f = b.grad_fn().unwrap();
    for _ in 0..2 {
        let (pre, post, l) = (pre_counter.clone(), post_counter.clone(), log.clone());
        let _ = f.register_hook(move |grad_input, grad_output| {
            let (gi, go) = (first(grad_input), first(grad_output));
            push(&l, format!("pre={} out={go:?} in={gi:?}", pre.load(SeqCst)));
            post.fetch_add(1, SeqCst);
            Some(grad_input.to_vec())
        });
    }
    let prehook = || {
        let pre = pre_counter.clone();
        move |gs: &[Option<Tensor>]| {
            pre.fetch_add(1, SeqCst);
            map_all(gs, |g| g.mul_scalar(2.0))
        }
    };
    let _ = f.register_prehook(prehook());
    let _ = f.register_prehook(|_| None);
    let _ = f.register_prehook(prehook());
    let _ = f.register_prehook(prehook());
    let _ = f.register_prehook(|gs| Some(gs.to_vec()));
    let _ = f.register_prehook(|_| None);
    b.sum()?.backward()?;
    assert_eq!(post_counter.load(SeqCst), 2);
    assert_eq!(pre_counter.load(SeqCst), 3);
    assert_eq!(take(&log), ["pre=3 out=[8.0] in=[16.0]"; 2]);
    assert_close(&grad_vals(&a), &[16.0]);

    // A prehook returning None.
    let a = Tensor::randn_seeded(&[3, 3], DType::F64, 7)?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?;
    let f = b.grad_fn().unwrap();
    let _ = f.register_prehook(counting_prehook(&pre_counter));
    b.sum()?.backward()?;
    assert_eq!(pre_counter.load(SeqCst), 4);
    assert_close(&grad_vals(&a), &[2.0; 9]);
    Ok(())
}

/// `test_grad_fn_prehooks_remove_hooks`.
#[test]
fn b18_grad_fn_prehooks_remove_hooks() -> R {
    let a = Tensor::randn_seeded(&[3, 3], DType::F64, 1)?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?;
    let count = counter();
    let f = b.grad_fn().unwrap();
    let handle = f.register_prehook(counting_prehook(&count));
    let _ = f.register_prehook(counting_prehook(&count));
    handle.remove();
    b.sum()?.backward()?;
    assert_close(&grad_vals(&a), &[2.0; 9]);
    assert_eq!(count.load(SeqCst), 1);

    // Removing a hook during backward: hooks registered first run first; the removal does not
    // affect the pass already running.
    let a = Tensor::randn_seeded(&[3, 3], DType::F64, 2)?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?;
    let count = counter();
    let f = b.grad_fn().unwrap();
    let handle2: Arc<Mutex<Option<HookHandle>>> = Arc::new(Mutex::new(None));
    let h2 = handle2.clone();
    let _ = f.register_prehook(move |_| {
        if let Some(h) = h2.lock().unwrap().take() {
            h.remove();
        }
        None
    });
    *handle2.lock().unwrap() = Some(f.register_prehook(counting_prehook(&count)));
    let handle3 = f.register_prehook(counting_prehook(&count));
    handle3.remove();
    b.sum()?.backward()?;
    assert_close(&grad_vals(&a), &[2.0; 9]);
    assert_eq!(count.load(SeqCst), 1);
    Ok(())
}

/// `test_hook_edge_case_when_called_with_grad`: grad() fires the tensor hooks of a captured
/// input's node without running it; node pre/post hooks fire only if the node runs.
#[test]
fn b18_hook_edge_case_when_called_with_grad() -> R {
    let a = scalar_leaf(1.0);
    let b = a.mul_scalar(2.0)?;
    let c = b.mul_scalar(2.0)?;
    let (tensor_hooks, prehooks, posthooks) = (counter(), counter(), counter());
    let posthook = || {
        let p = posthooks.clone();
        move |_: &[Option<Tensor>], _: &[Option<Tensor>]| {
            p.fetch_add(1, SeqCst);
            None
        }
    };
    let _ = a.register_hook(counting_tensor_hook(&tensor_hooks))?;
    let _ = b.register_hook(counting_tensor_hook(&tensor_hooks))?;
    let acc = acc_node_of(&b);
    let _ = acc.register_hook(posthook());
    let _ = acc.register_prehook(counting_prehook(&prehooks));
    let f = b.grad_fn().unwrap();
    let _ = f.register_hook(posthook());
    let _ = f.register_prehook(counting_prehook(&prehooks));
    let swap = |c: &Arc<AtomicUsize>| c.swap(0, SeqCst);
    let counts = || (swap(&tensor_hooks), swap(&posthooks), swap(&prehooks));
    let keep = || GradOptions::new().retain_graph(true);

    grad(&[c.clone()], &[b.clone()], keep())?;
    assert_eq!(counts(), (1, 0, 0));
    grad(&[c.clone()], &[a.clone(), b.clone()], keep())?;
    assert_eq!(counts(), (2, 1, 1));
    c.backward_with(retain())?;
    assert_eq!(counts(), (2, 2, 2));
    let inputs = [a.clone(), b.clone()];
    c.backward_with(BackwardOptions::new().inputs(&inputs).retain_graph(true))?;
    assert_eq!(counts(), (2, 2, 2));
    Ok(())
}

/// `test_accumulate_grad_posthooks_can_observe_tensor_prehook`.
#[test]
fn b18_accumulate_grad_posthooks_can_observe_tensor_prehook() -> R {
    let log = new_log();
    let a = scalar_leaf(1.0);
    let b = a.copy()?;
    let acc = acc_node_of(&b);
    let l = log.clone();
    let _ = acc.register_hook(move |g_in, g_out| {
        push(&l, format!("post {} {:?}", g_in.len(), first(g_out)));
        None
    });
    let l = log.clone();
    let _ = acc.register_prehook(move |gs| {
        push(&l, format!("pre {} {:?}", gs.len(), first(gs)));
        None
    });
    let _ = a.register_hook(|g| Some(g.mul_scalar(2.0).unwrap()))?;
    b.backward()?;
    assert_eq!(take(&log), ["pre 1 [2.0]", "post 0 [2.0]"]);
    Ok(())
}

/// `test_accumulate_grad_posthooks_should_not_execute`.
#[test]
fn b18_accumulate_grad_posthooks_should_not_execute() -> R {
    let a = scalar_leaf(1.0);
    let _ = a.register_hook(|_| panic!("tensor prehook of a must not run"))?;
    let b = scalar_leaf(1.0);
    let c = a.copy()?;
    let acc = acc_node_of(&c);
    let _ = acc.register_hook(|_, _| panic!("posthook of a's AccumulateGrad must not run"));
    let out = a.add(&b)?.add(&c)?;
    let only_b = BackwardOptions::new().inputs(&[b.clone()]);
    out.sum()?.backward_with(only_b)?;
    assert_eq!(grad_item(&b), 1.0);
    assert!(a.grad().is_none());
    Ok(())
}

/// `test_prehook_ordering`: tensor pre-hooks → retains_grad → node pre-hooks (B19).
#[test]
fn b19_prehook_ordering() -> R {
    let log = new_log();
    let hook1 = || tensor_hook(&log, "1", |g| g.mul_scalar(3.0));
    let hook2 = || pre_hook(&log, "2", |g| g.mul_scalar(2.0));
    let order =
        |log: &Log| -> Vec<String> { take(log).iter().map(|e| e[..1].to_string()).collect() };
    let a = scalar_leaf(1.0);
    let b = a.copy()?;
    let _ = b.grad_fn().unwrap().register_prehook(hook2());
    let _ = b.register_hook(hook1())?;
    let _ = b.grad_fn().unwrap().register_prehook(hook2());
    let acc = acc_node_of(&b);
    let _ = a.register_hook(hook1())?;
    let _ = acc.register_prehook(hook2());
    let _ = a.register_hook(hook1())?;

    b.sum()?.backward_with(retain())?;
    assert_eq!(order(&log), ["1", "2", "2", "1", "1", "2"]);
    assert_eq!(grad_item(&a), 216.0);

    // grad() runs the tensor hooks of the AccumulateGrad node but not its pre-hook.
    let g = grad(
        &[b.sum()?],
        &[a.clone()],
        GradOptions::new().retain_graph(true),
    )?;
    assert_eq!(order(&log), ["1", "2", "2", "1", "1"]);
    assert_eq!(g[0].as_ref().unwrap().item::<f64>()?, 108.0);

    let only_b = BackwardOptions::new().inputs(&[b.clone()]);
    b.sum()?.backward_with(only_b)?;
    assert_eq!(order(&log), ["1", "2", "2"]);
    // retains_grad hooks observe tensor pre-hooks but not node pre-hooks.
    assert_eq!(grad_item(&b), 3.0);
    Ok(())
}

/// `test_retains_grad_can_always_observe_tensor_prehook`.
#[test]
fn b19_retains_grad_can_always_observe_tensor_prehook() -> R {
    let tensor_prehook = |g: &Tensor| Some(g.mul_scalar(2.0).unwrap());
    let a = scalar_leaf(1.0);
    let b = a.copy()?;
    let _ = b.register_hook(tensor_prehook)?;
    b.retain_grad()?;
    let _ = b.register_hook(tensor_prehook)?;
    b.copy()?.backward()?;
    assert_eq!(grad_item(&b), 4.0);

    let a = scalar_leaf(1.0);
    let b = a.copy()?;
    b.retain_grad()?;
    let _ = b.register_hook(tensor_prehook)?;
    b.copy()?.backward()?;
    assert_eq!(grad_item(&b), 2.0);
    Ok(())
}

/// `test_retain_grad`.
#[test]
fn b17_retain_grad() -> R {
    let input = leaf(vec![0.3, 0.6, 0.9], &[1, 3]);
    let h1 = input.mul_scalar(3.0)?;
    let out = h1.mul(&h1)?.sum()?;
    // It is possible to call retain_grad() multiple times.
    h1.retain_grad()?;
    h1.retain_grad()?;
    assert!(h1.retains_grad());

    // The gradient is accumulated.
    out.backward_with(retain())?;
    assert_close(&grad_vals(&h1), &vals(&h1.mul_scalar(2.0)?));
    out.backward_with(retain())?;
    assert_close(&grad_vals(&h1), &vals(&h1.mul_scalar(4.0)?));

    {
        let _g = no_grad();
        input.grad().unwrap().zero_()?;
    }
    // A no-op for leaves.
    input.retain_grad()?;
    input.retain_grad()?;
    out.backward()?;
    assert_close(&grad_vals(&input), &vals(&input.mul_scalar(18.0)?));
    Ok(())
}

#[test]
fn b20_post_accumulate_grad_hook_on_non_leaf_errors() -> R {
    let a = leaf(vec![1.0, 2.0], &[2]);
    let b = a.mul_scalar(2.0)?;
    let err = b.register_post_accumulate_grad_hook(|_| {}).unwrap_err();
    assert!(matches!(err, Error::PostAccumulateGradHookOnNonLeaf));
    assert_eq!(
        err.to_string(),
        "post accumulate grad hooks cannot be registered on non-leaf tensors"
    );
    Ok(())
}

/// `test_post_accumulate_grad_hook_multiple_hooks`: hooks run in order, after `.grad` is set.
#[test]
fn b20_post_accumulate_grad_hook_multiple_hooks() -> R {
    let tensor = leaf(vec![0.25, 0.5, 0.75], &[3]);
    let tensor_ref = vals(&tensor);
    let _ = tensor.register_post_accumulate_grad_hook(|t| {
        t.sub_(&t.grad().unwrap()).unwrap();
    })?;
    let _ = tensor.register_post_accumulate_grad_hook(|t| {
        t.mul_(&Tensor::scalar(4.0f64)).unwrap();
    })?;
    tensor.sum()?.backward()?;
    let expected: Vec<f64> = tensor_ref.iter().map(|v| (v - 1.0) * 4.0).collect();
    assert_close(&vals(&tensor), &expected);
    Ok(())
}

/// `test_post_accumulate_grad_hook_ordering`: tensor pre-hook → AccumulateGrad pre-hook →
/// accumulate → post-accumulate-grad hook → AccumulateGrad post-hook: ((1 - 2) / 5 + 0.5) * 10 = 3.
/// (The AccumulateGrad post-hook's `grad_outputs[0]` is the very tensor stored as `.grad`, so the
/// in-place `+ 0.5` of the post-accumulate hook is visible to it.)
#[test]
fn b20_post_accumulate_grad_hook_ordering() -> R {
    let tensor = leaf(vec![0.1, 0.2, 0.3], &[3]);
    let acc_grad = acc_node_of(&tensor.reshape(&[3])?);
    let _ = tensor.register_hook(|g| Some(g.sub_scalar(2.0).unwrap()))?;
    let _ = acc_grad.register_prehook(|gs| map_all(gs, |g| g.div_scalar(5.0)));
    let _ = tensor.register_post_accumulate_grad_hook(|t| {
        t.grad().unwrap().add_(&Tensor::scalar(0.5f64)).unwrap();
    })?;
    let t = tensor.clone();
    let _ = acc_grad.register_hook(move |_grad_in, grad_out| {
        t.set_grad(Some(
            grad_out[0].as_ref().unwrap().mul_scalar(10.0).unwrap(),
        ))
        .unwrap();
        None
    });
    tensor.sum()?.backward()?;
    assert_close(&grad_vals(&tensor), &[3.0, 3.0, 3.0]);
    Ok(())
}
