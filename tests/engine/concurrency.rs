//! Concurrent backward from many threads (B29, B30) and a stress test mixing CPU and virtual
//! devices, reentrant nodes and injected errors. All waits are joins: no sleeps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::*;

/// Threads × iterations of the stress test (kept in one place, as crossbeam does).
const STRESS_THREADS: usize = 8;
const STRESS_ITERS: usize = 500;

#[test]
fn b29_independent_backward_calls_run_concurrently_and_shared_leaves_sum() -> Result<()> {
    // test_simple_backward_same_input: 10 threads, x.grad = 10 * (x + 3.5)-style sum.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    let barrier = Arc::new(Barrier::new(10));
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let (x, b) = (x.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<()> {
                let y = x
                    .mul(&x)?
                    .mul_scalar(0.5)?
                    .add(&x.mul_scalar(3.5)?)?
                    .sum()?; // d/dx = x + 3.5
                b.wait();
                y.backward()
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap()?;
    }
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![45.0, 55.0, 65.0]);
    Ok(())
}

#[test]
fn b29_grad_from_threads_returns_each_threads_own_result() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let x = x.clone();
            std::thread::spawn(move || -> Result<Vec<f64>> {
                let y = x.mul_scalar(i as f64)?.sum()?;
                grad(&[y], &[x], GradOptions::new())?[0]
                    .clone()
                    .unwrap()
                    .to_vec::<f64>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap()?, vec![i as f64; 2]);
    }
    assert!(x.grad().is_none());
    Ok(())
}

#[test]
fn b29_shared_graph_without_retain_graph_lets_one_succeed_and_others_fail_cleanly() -> Result<()> {
    // test_python_thread_in_middle: at least one succeeds; the others fail with the
    // backward-twice error; nothing is corrupted.
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let shared = x.mul(&x)?.mul(&x)?; // saves tensors: a second pass must fail
    let barrier = Arc::new(Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let (s, b) = (shared.clone(), barrier.clone());
            std::thread::spawn(move || {
                b.wait();
                s.sum()?.backward()
            })
        })
        .collect();
    let results: Vec<Result<()>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert!(ok >= 1, "{results:?}");
    for r in &results {
        if let Err(e) = r {
            assert!(matches!(e, Error::BackwardTwice), "{e:?}");
        }
    }
    // Each successful pass added 3x²; a failed one may have stopped before accumulating.
    let g = x.grad().unwrap().to_vec::<f64>()?;
    assert_eq!(g[1] / g[0], 4.0);
    let passes = g[0] / 3.0;
    assert!(
        passes >= 1.0 && passes <= ok as f64,
        "grad {g:?}, {ok} successes"
    );
    Ok(())
}

#[test]
fn b29_shared_graph_with_retain_graph_sums_every_pass() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let shared = x.add_scalar(1.0)?.pow(4.0)?; // (x+1)^4
    let handles: Vec<_> = (0..5)
        .map(|_| {
            let s = shared.clone();
            std::thread::spawn(move || {
                s.sum()?
                    .backward_with(BackwardOptions::new().retain_graph(true))
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap()?;
    }
    // 5 * 4 (x+1)^3
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>()?,
        vec![5.0 * 32.0, 5.0 * 108.0]
    );
    Ok(())
}

/// Grad mode is per thread (anomaly mode is not: `tests/modes/anomaly.rs`).
#[test]
fn b30_grad_mode_is_thread_local() -> Result<()> {
    let _g = no_grad();
    std::thread::spawn(|| {
        assert!(is_grad_enabled());
    })
    .join()
    .unwrap();
    assert!(!is_grad_enabled());
    Ok(())
}

#[test]
fn b30_graph_task_ids_increase() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let ids = Arc::new(std::sync::Mutex::new(Vec::new()));
    let i = ids.clone();
    x.register_hook(move |_| {
        i.lock().unwrap().push(current_graph_task_id().unwrap());
        None
    })?;
    let y = x.mul_scalar(2.0)?;
    y.backward_with(BackwardOptions::new().retain_graph(true))?;
    y.backward()?;
    let ids = ids.lock().unwrap().clone();
    assert_eq!(ids.len(), 2);
    assert!(ids[1] > ids[0]);
    assert_eq!(current_graph_task_id(), None);
    Ok(())
}

struct ReentrantScale {
    fail: bool,
}

impl Backward for ReentrantScale {
    const NAME: &'static str = "ReentrantScaleBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        if self.fail {
            return Err(Error::msg("injected failure"));
        }
        // A nested backward whose result is checked, then the gradient passes through doubled.
        let t = Tensor::scalar(3.0f64).requires_grad_(true)?;
        let inner = {
            let _g = enable_grad();
            t.mul(&t)?
        };
        inner.backward()?;
        assert_eq!(t.grad().unwrap().item::<f64>()?, 6.0);
        let g = grads[0].clone().unwrap();
        Ok(smallvec_of(g.mul_scalar(2.0)?))
    }
}

fn smallvec_of(t: Tensor) -> GradVec {
    let mut v = GradVec::new();
    v.push(Some(t));
    v
}

/// y = 2x (in backward) through a reentrant node.
fn reentrant_double(x: &Tensor, fail: bool) -> Result<Tensor> {
    let y = {
        let _g = no_grad();
        x.mul_scalar(2.0)?
    };
    __private::record_node(__private::next_edges(&[x]).unwrap(), &[&y], |_| {
        ReentrantScale { fail }
    });
    Ok(y)
}

#[test]
fn stress_threads_devices_reentrancy_and_errors() -> Result<()> {
    let leaf = Tensor::from_vec(vec![0.5f64, 1.5], &[2])?.requires_grad_(true)?;
    let expected_ok = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..STRESS_THREADS)
        .map(|t| {
            let (leaf, expected_ok) = (leaf.clone(), expected_ok.clone());
            std::thread::spawn(move || -> Result<()> {
                for i in 0..STRESS_ITERS {
                    let inject = (t + i) % 7 == 0;
                    let dev = match (t + i) % 3 {
                        0 => Device::Cpu,
                        k => Device::Virtual(k - 1),
                    };
                    let x = leaf.to(dev)?;
                    let y = reentrant_double(&x.mul_scalar(1.5)?, inject)?
                        .to(Device::Cpu)?
                        .sum()?;
                    // Own-thread exactness: grad() result of this pass.
                    let r = grad(
                        &[y.clone()],
                        &[leaf.clone()],
                        GradOptions::new().retain_graph(true),
                    );
                    match r {
                        Ok(g) => assert_eq!(g[0].clone().unwrap().to_vec::<f64>()?, vec![3.0, 3.0]),
                        Err(e) => {
                            assert!(inject, "unexpected error {e}");
                            assert_eq!(e.to_string(), "injected failure");
                        }
                    }
                    // Shared-leaf accumulation.
                    match y.backward() {
                        Ok(()) => {
                            expected_ok.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => assert!(inject, "unexpected error {e}"),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap()?;
    }
    let n = expected_ok.load(Ordering::SeqCst) as f64;
    assert_eq!(
        leaf.grad().unwrap().to_vec::<f64>()?,
        vec![3.0 * n, 3.0 * n]
    );
    Ok(())
}

#[test]
fn b30_each_concurrent_graph_task_sees_its_own_keep_graph() -> Result<()> {
    // Two passes overlap (each waits in a hook for the other) with different retain_graph.
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [true, false]
        .into_iter()
        .map(|retain| {
            let b = barrier.clone();
            std::thread::spawn(move || -> Result<Option<bool>> {
                let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
                let seen = Arc::new(std::sync::Mutex::new(None));
                let s = seen.clone();
                x.register_hook(move |_| {
                    b.wait();
                    *s.lock().unwrap() = current_graph_task_keep_graph();
                    None
                })?;
                x.mul_scalar(2.0)?
                    .backward_with(BackwardOptions::new().retain_graph(retain))?;
                let v = *seen.lock().unwrap();
                Ok(v)
            })
        })
        .collect();
    let seen: Vec<Option<bool>> = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect::<Result<_>>()?;
    assert_eq!(seen, vec![Some(true), Some(false)]);
    Ok(())
}
