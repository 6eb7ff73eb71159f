//! `set_multithreading_enabled` (B28): with multithreading disabled a backward pass runs every
//! node on the calling thread, device nodes included. PyTorch's
//! `test_set_multithreading_enabled_as_context_manager_and_function` and
//! `test_backward_single_threaded` (CUDA there; `Device::Virtual(1)` here, which has a worker
//! thread of its own as a CUDA device does).

use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use autograd::*;

type R = Result<()>;

/// The guard form and PyTorch's function form (the guard forgotten), nested as PyTorch's test
/// nests them.
#[test]
fn set_multithreading_enabled_as_guard_and_as_function() {
    {
        let _g = set_multithreading_enabled(false);
        assert!(!is_multithreading_enabled());
    }
    assert!(is_multithreading_enabled());
    {
        let _g = set_multithreading_enabled(true);
        assert!(is_multithreading_enabled());
    }
    assert!(is_multithreading_enabled());
    {
        let _g = set_multithreading_enabled(false);
        std::mem::forget(set_multithreading_enabled(true));
        assert!(is_multithreading_enabled());
    }
    // The outer guard restores what it found (enabled), as PyTorch's `__exit__` does.
    assert!(is_multithreading_enabled());
    std::mem::forget(set_multithreading_enabled(false));
    assert!(!is_multithreading_enabled());
    std::mem::forget(set_multithreading_enabled(true));
    assert!(is_multithreading_enabled());
}

/// The setting is per thread, as PyTorch's (`AutogradState` is thread-local).
#[test]
fn the_setting_is_per_thread() {
    let _g = set_multithreading_enabled(false);
    let other = thread::spawn(is_multithreading_enabled).join().unwrap();
    assert!(other);
    assert!(!is_multithreading_enabled());
}

/// Where the hook on `y` (pre-hook of the node below it, a `Virtual(1)` node) and the one on the
/// leaf (its `AccumulateGrad`, also on `Virtual(1)`) ran, and the gradient.
fn run_on_virtual_device() -> Result<(Vec<ThreadId>, Vec<f64>)> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?
        .to(Device::Virtual(1))?
        .requires_grad_(true)?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let y = x.mul(&x)?;
    for t in [&y, &x] {
        let s = seen.clone();
        t.register_hook(move |_| {
            s.lock().unwrap().push(thread::current().id());
            None
        })?;
    }
    y.sum()?.backward()?;
    let threads = seen.lock().unwrap().clone();
    Ok((threads, x.grad().unwrap().to_vec::<f64>()?))
}

#[test]
fn backward_single_threaded_runs_device_nodes_on_the_caller() -> R {
    let me = thread::current().id();
    let (threads, g) = {
        let _single = set_multithreading_enabled(false);
        run_on_virtual_device()?
    };
    assert_eq!(threads, vec![me, me]);
    assert_eq!(g, vec![2.0, 4.0, 6.0]);
    // Enabled again: the same graph runs its device nodes on device 1's worker.
    let (threads, g) = run_on_virtual_device()?;
    assert_eq!(threads.len(), 2);
    assert!(threads.iter().all(|t| *t != me));
    assert_eq!(g, vec![2.0, 4.0, 6.0]);
    Ok(())
}

/// `grad()` too, and a graph mixing CPU and device nodes: the values are those of the
/// multithreaded pass.
#[test]
fn grad_single_threaded_matches_the_multithreaded_result() -> R {
    let run = || -> Result<Vec<f64>> {
        let x = Tensor::from_vec(vec![0.5f64, -1.0], &[2])?.requires_grad_(true)?;
        let d = x.to(Device::Virtual(2))?.exp()?.to(Device::Cpu)?;
        let y = d.mul(&x)?.sum()?; // Σ x·eˣ, d/dx = (1 + x)·eˣ
        grad(&[y], &[x], GradOptions::new())?[0]
            .as_ref()
            .unwrap()
            .to_vec::<f64>()
    };
    let single = {
        let _g = set_multithreading_enabled(false);
        run()?
    };
    let multi = run()?;
    assert_eq!(single, multi);
    let want: Vec<f64> = [0.5f64, -1.0].iter().map(|x| (1.0 + x) * x.exp()).collect();
    for (g, w) in single.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    Ok(())
}
