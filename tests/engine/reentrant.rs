//! Reentrant backward (B25–B27): backward called from inside a backward node.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::*;

/// A custom node whose backward runs `inner` (which may call backward) and passes the gradient
/// through unchanged.
struct Reentrant<F: Fn() -> Result<()> + Send + Sync + 'static> {
    inner: F,
}

impl<F: Fn() -> Result<()> + Send + Sync + 'static> Backward for Reentrant<F> {
    const NAME: &'static str = "ReentrantBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        (self.inner)()?;
        Ok(grads)
    }
}

/// `y = x` through a node whose backward runs `inner`.
fn reentrant_identity<F: Fn() -> Result<()> + Send + Sync + 'static>(
    x: &Tensor,
    inner: F,
) -> Result<Tensor> {
    let y = {
        let _g = no_grad();
        x.copy()?
    };
    let edges = __private::next_edges(&[x]).expect("x requires grad");
    __private::record_node(edges, &[&y], |_| Reentrant { inner });
    Ok(y)
}

#[test]
fn b26_simple_reentrant_gradient_flows() -> Result<()> {
    // test_simple_reentrant: the inner backward accumulates into a different leaf.
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let w = Tensor::scalar(5.0f64).requires_grad_(true)?;
    let w2 = w.clone();
    let y = reentrant_identity(&x, move || {
        let _g = enable_grad();
        w2.mul(&w2)?.backward()
    })?;
    y.mul_scalar(3.0)?.backward()?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 3.0);
    assert_eq!(w.grad().unwrap().item::<f64>()?, 10.0);
    Ok(())
}

#[test]
fn b26_grad_mode_inside_is_the_nested_create_graph_and_is_restored() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let inner_leaf = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = reentrant_identity(&x, move || {
        s.lock().unwrap().push(is_grad_enabled()); // outer pass: create_graph = true
        let l = {
            let _g = enable_grad();
            inner_leaf.mul_scalar(2.0)?
        };
        let s2 = s.clone();
        l.register_hook(move |_| {
            s2.lock().unwrap().push(is_grad_enabled()); // nested pass: create_graph = false
            None
        })?;
        l.backward()?;
        s.lock().unwrap().push(is_grad_enabled()); // restored
        Ok(())
    })?;
    y.backward_with(BackwardOptions::new().create_graph(true))?;
    assert_eq!(*seen.lock().unwrap(), vec![true, false, true]);
    Ok(())
}

#[test]
fn b26_reentrant_priority_runs_deeper_tasks_first() -> Result<()> {
    // test_reentrant_priority: `v = a * b` where b's backward calls backward 9 levels deep and a's
    // node is ordinary. Both become ready together; every reentrant task runs before a's node,
    // even though a's node has the highest possible sequence number: depth outranks it (B04).
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    fn chain(order: Arc<Mutex<Vec<&'static str>>>, level: usize) -> Result<()> {
        order.lock().unwrap().push("Reentrant");
        if level == 0 {
            return Ok(());
        }
        let t = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let o = order.clone();
        let y = {
            let _g = enable_grad();
            reentrant_identity(&t, move || chain(o.clone(), level - 1))?
        };
        y.backward()
    }
    let o = order.clone();
    let a = reentrant_identity(&Tensor::scalar(6.0f64).requires_grad_(true)?, move || {
        o.lock().unwrap().push("MyFunction");
        Ok(())
    })?;
    a.grad_fn().unwrap().meta().set_sequence_nr(u64::MAX - 2);
    let o = order.clone();
    let b = reentrant_identity(&Tensor::scalar(9.0f64).requires_grad_(true)?, move || {
        chain(o.clone(), 9)
    })?;
    b.grad_fn().unwrap().meta().set_sequence_nr(u64::MAX - 1);
    a.mul(&b)?.backward()?;
    let order = order.lock().unwrap().clone();
    assert_eq!(order.len(), 11, "{order:?}");
    assert_eq!(order.iter().filter(|s| **s == "Reentrant").count(), 10);
    assert_eq!(order[10], "MyFunction", "{order:?}");
    Ok(())
}

fn deep_reentrant(engine: &Engine, depth: usize, calls: Arc<AtomicUsize>) -> Result<()> {
    fn level(engine: Engine, remaining: usize, calls: Arc<AtomicUsize>) -> Result<()> {
        calls.fetch_add(1, Ordering::SeqCst);
        if remaining == 0 {
            return Ok(());
        }
        let t = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let e = engine.clone();
        let c = calls.clone();
        let y = {
            let _g = enable_grad();
            reentrant_identity(&t, move || level(e.clone(), remaining - 1, c.clone()))?
        };
        engine.backward(&[y], &[], BackwardOptions::new())
    }
    level(engine.clone(), depth, calls)
}

#[test]
fn b27_deep_reentrancy_moves_to_pool_threads_without_overflow() -> Result<()> {
    // CustomAutogradTest.DeepReentrant: 8193 levels must not overflow any stack.
    let engine = Engine::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let e = engine.clone();
    let c = calls.clone();
    // A small stack for the caller proves the depth limit bounds recursion per thread.
    std::thread::Builder::new()
        .stack_size(8 * 1024 * 1024)
        .spawn(move || deep_reentrant(&e, 8193, c))
        .unwrap()
        .join()
        .unwrap()?;
    assert_eq!(calls.load(Ordering::SeqCst), 8194);
    assert!(engine.pool_threads() >= 8193 / (DEFAULT_MAX_RECURSION_DEPTH + 1));
    engine.shutdown();
    Ok(())
}

#[test]
fn b27_depth_limit_is_configurable() -> Result<()> {
    let engine = Engine::new().max_recursion_depth(2);
    let calls = Arc::new(AtomicUsize::new(0));
    deep_reentrant(&engine, 10, calls.clone())?;
    assert_eq!(calls.load(Ordering::SeqCst), 11);
    assert!(
        engine.pool_threads() >= 3,
        "pool threads: {}",
        engine.pool_threads()
    );
    engine.shutdown();
    Ok(())
}

#[test]
fn b24_error_in_reentrant_child_surfaces_in_parent() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = reentrant_identity(&x, || {
        let t = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let child = {
            let _g = enable_grad();
            reentrant_identity(&t, || Err(Error::msg("Simulate error on backward pass")))?
        };
        child.backward()
    })?;
    let err = y.backward().unwrap_err();
    assert_eq!(err.to_string(), "Simulate error on backward pass");
    assert!(x.grad().is_none());
    // The engine keeps working.
    x.mul_scalar(2.0)?.backward()?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 2.0);
    Ok(())
}

#[test]
fn b25_callbacks_run_at_the_end_of_their_own_graph_task() -> Result<()> {
    // test_reentrant_with_callbacks_both_depths: outer 1, inner 1 — each at its own task's end.
    let log = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let l = log.clone();
    let y = reentrant_identity(&x, move || {
        let l2 = l.clone();
        queue_callback(move || {
            l2.lock().unwrap().push("outer callback");
            Ok(())
        })?;
        let t = Tensor::scalar(1.0f64).requires_grad_(true)?;
        let l3 = l.clone();
        let inner = {
            let _g = enable_grad();
            reentrant_identity(&t, move || {
                let l4 = l3.clone();
                queue_callback(move || {
                    l4.lock().unwrap().push("inner callback");
                    Ok(())
                })
            })?
        };
        inner.backward()?;
        l.lock().unwrap().push("after inner backward");
        Ok(())
    })?;
    y.backward()?;
    assert_eq!(
        *log.lock().unwrap(),
        vec!["inner callback", "after inner backward", "outer callback"]
    );
    Ok(())
}
