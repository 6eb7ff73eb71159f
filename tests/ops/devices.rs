//! Device threads (B28): nodes of `Device::Virtual(i)` tensors run on the engine's worker thread
//! for index i, CPU nodes on the calling thread; errors and panics there reach the caller (B24).

use std::sync::{Arc, Mutex};

use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::*;

fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_string()
}

#[test]
fn b28_device_nodes_run_on_the_device_thread_and_cpu_nodes_on_the_caller() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let names = Arc::new(Mutex::new(Vec::new()));
    let v = x.to(Device::Virtual(1))?; // CPU -> virtual:1, its backward runs on device 1
    let w = v.mul_scalar(3.0)?; // a virtual:1 node
    let n = names.clone();
    w.register_hook(move |_| {
        n.lock().unwrap().push(("w", thread_name()));
        None
    })?;
    let back = w.to(Device::Cpu)?; // its node's input is CPU: runs on the caller
    let n = names.clone();
    back.register_hook(move |_| {
        n.lock().unwrap().push(("back", thread_name()));
        None
    })?;
    let caller = std::thread::Builder::new()
        .name("caller".into())
        .spawn(move || back.sum()?.backward())
        .unwrap();
    caller.join().unwrap()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![3.0, 3.0]);
    assert_eq!(x.grad().unwrap().device(), Device::Cpu);
    let names = names.lock().unwrap().clone();
    assert!(names.contains(&("back", "caller".to_string())), "{names:?}");
    assert!(
        names.contains(&("w", "autograd-device-1".to_string())),
        "{names:?}"
    );
    Ok(())
}

#[test]
fn ops_on_different_devices_fail_clearly() -> Result<()> {
    let a = Tensor::scalar(1.0f32);
    let b = a.to(Device::Virtual(0))?;
    let err = a.mul(&b).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected all tensors to be on the same device, but found at least two devices, cpu and virtual:0!"
    );
    let missing = Device::Cuda(cuda::device_count());
    assert!(matches!(
        a.to(missing),
        Err(Error::DeviceUnavailable { device, .. }) if device == missing
    ));
    Ok(())
}

struct Failing {
    panic: bool,
}

impl Backward for Failing {
    const NAME: &'static str = "FailingBackward";
    fn backward(&self, _meta: &NodeMeta, _grads: GradVec) -> Result<GradVec> {
        if self.panic {
            panic!("boom on {}", thread_name());
        }
        Err(Error::msg("Simulate error on backward pass"))
    }
}

/// `y = x` on x's device through a node that fails.
fn failing(x: &Tensor, panic: bool) -> Result<Tensor> {
    let y = {
        let _g = no_grad();
        x.copy()?
    };
    __private::record_node(__private::next_edges(&[x]).unwrap(), &[&y], |_| Failing {
        panic,
    });
    Ok(y)
}

#[test]
fn b24_errors_and_panics_on_a_device_thread_reach_the_caller() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let v = x.to(Device::Virtual(2))?;
    let err = failing(&v, false)?.sum()?.backward().unwrap_err();
    assert_eq!(err.to_string(), "Simulate error on backward pass");
    let err = failing(&v, true)?.sum()?.backward().unwrap_err();
    match err {
        Error::Panic { node, message } => {
            assert_eq!(node.as_deref(), Some("FailingBackward"));
            assert_eq!(message, "boom on autograd-device-2");
        }
        e => panic!("expected a panic error, got {e:?}"),
    }
    assert!(x.grad().is_none());
    // The device thread survived and keeps working.
    v.mul_scalar(2.0)?.backward()?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 2.0);
    Ok(())
}

#[test]
fn b25_callbacks_queued_on_a_device_thread_run_and_their_errors_propagate() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let v = x.to(Device::Virtual(3))?.mul_scalar(2.0)?;
    let ran = Arc::new(Mutex::new(0));
    let r = ran.clone();
    v.register_hook(move |_| {
        let r = r.clone();
        queue_callback(move || {
            *r.lock().unwrap() += 1;
            Err(Error::msg("callback failed"))
        })
        .unwrap();
        None
    })?;
    let err = v.backward().unwrap_err();
    assert_eq!(err.to_string(), "callback failed");
    assert_eq!(*ran.lock().unwrap(), 1);
    Ok(())
}

#[test]
fn explicit_engines_start_device_threads_lazily_and_shut_down() -> Result<()> {
    let engine = Engine::new();
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    engine.backward(&[x.mul_scalar(2.0)?], &[], BackwardOptions::new())?;
    assert_eq!(
        engine.device_threads(),
        0,
        "CPU-only work starts no device thread"
    );
    let y = x
        .to(Device::Virtual(0))?
        .to(Device::Virtual(1))?
        .mul_scalar(2.0)?;
    engine.backward(&[y], &[], BackwardOptions::new())?;
    assert_eq!(engine.device_threads(), 2);
    assert_eq!(x.grad().unwrap().item::<f64>()?, 4.0);
    engine.shutdown();
    assert_eq!(engine.device_threads(), 0);
    // A later pass starts threads again.
    engine.backward(
        &[x.to(Device::Virtual(0))?.sum()?],
        &[],
        BackwardOptions::new(),
    )?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 5.0);
    engine.shutdown();
    Ok(())
}

/// Sends the name of the thread it lives on when that thread exits (its thread-local is
/// destroyed).
struct NotifyOnExit(std::sync::mpsc::Sender<String>);

impl Drop for NotifyOnExit {
    fn drop(&mut self) {
        let _ = self.0.send(thread_name());
    }
}

thread_local! {
    static ON_EXIT: std::cell::RefCell<Option<NotifyOnExit>> = const { std::cell::RefCell::new(None) };
}

/// Dropping an `Engine::new()` without calling `shutdown()` stops its device thread and its
/// reentrant pool thread: both exit (their thread-locals are destroyed), whereas the default
/// engine's threads live as long as the process.
#[test]
fn dropping_an_engine_stops_its_threads() -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let notify_on_exit = move |tx: &std::sync::mpsc::Sender<String>| {
        let tx = tx.clone();
        move |_: &Tensor| {
            ON_EXIT.with(|e| *e.borrow_mut() = Some(NotifyOnExit(tx.clone())));
            None
        }
    };
    // Depth limit 0: the reentrant pass started by the hook below goes to a pool thread.
    let engine = Engine::new().max_recursion_depth(0);
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let xd = x.to(Device::Virtual(3))?;
    let on_device = notify_on_exit(&tx);
    let on_pool = notify_on_exit(&tx);
    xd.register_hook(move |g| {
        on_device(g); // on `autograd-device-3`
        let w = Tensor::scalar(2.0f64).requires_grad_(true).unwrap();
        w.register_hook(on_pool.clone()).unwrap(); // on `autograd-reentrant-0`
        let _g = enable_grad();
        w.mul_scalar(3.0).unwrap().backward().unwrap(); // reentrant: runs on this engine
        None
    })?;
    engine.backward(&[xd.mul_scalar(2.0)?], &[], BackwardOptions::new())?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 2.0);
    assert_eq!((engine.device_threads(), engine.pool_threads()), (1, 1));
    drop((x, xd));
    drop(tx);
    assert!(
        rx.try_recv().is_err(),
        "the threads are alive until the engine goes"
    );
    drop(engine);
    let mut exited: Vec<String> = (0..2)
        .map(|_| rx.recv_timeout(std::time::Duration::from_secs(30)))
        .collect::<std::result::Result<_, _>>()
        .expect("both threads exit once the engine is dropped");
    exited.sort();
    assert_eq!(exited, ["autograd-device-3", "autograd-reentrant-0"]);
    Ok(())
}

#[test]
fn graph_alternating_cpu_and_virtual_nodes() -> Result<()> {
    let x = Tensor::from_vec(vec![0.5f64, -0.25], &[2])?.requires_grad_(true)?;
    let mut y = x.clone();
    for i in 0..20 {
        let dev = if i % 2 == 0 {
            Device::Virtual(i % 3)
        } else {
            Device::Cpu
        };
        y = y.to(dev)?.mul_scalar(1.1)?.sin()?;
    }
    let y = y.to(Device::Cpu)?.sum()?;
    let g = grad(
        &[y.clone()],
        &[x.clone()],
        GradOptions::new().retain_graph(true),
    )?[0]
        .clone()
        .unwrap();
    // The same function on the CPU only.
    let x2 = x.detach().requires_grad_(true)?;
    let mut z = x2.clone();
    for _ in 0..20 {
        z = z.mul_scalar(1.1)?.sin()?;
    }
    let g2 = grad(&[z.sum()?], &[x2], GradOptions::new())?[0]
        .clone()
        .unwrap();
    assert_eq!(g.to_vec::<f64>()?, g2.to_vec::<f64>()?);
    Ok(())
}
