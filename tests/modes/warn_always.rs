//! `set_warn_always` (PyTorch's `torch.set_warn_always`): the once-per-process warning of
//! `backward(create_graph=True)` fires every time (`test_backward_create_graph_warns`), and
//! `grad()` with `create_graph` does not warn. Its own test process: the warning handler is
//! process-wide.

use std::sync::{Arc, Mutex};

use autograd::*;

#[test]
fn backward_create_graph_warns_every_time_under_warn_always() -> Result<()> {
    // Once per process by default, and the warning handler is process-wide.
    if !crate::common::in_own_process(
        "warn_always::backward_create_graph_warns_every_time_under_warn_always",
    ) {
        return Ok(());
    }
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    set_warning_handler(Some(Box::new(move |w: &str| {
        s.lock().unwrap().push(w.to_string())
    })));
    let create_graph = || BackwardOptions::new().create_graph(true);
    let warned = |seen: &Mutex<Vec<String>>| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|w| w.starts_with("Using backward() with create_graph=True"))
            .count()
    };

    let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    b.mul(&b)?.sum()?.backward_with(create_graph())?;
    b.mul(&b)?.sum()?.backward_with(create_graph())?;
    assert_eq!(warned(&seen), 1, "once per process by default");

    set_warn_always(true);
    assert!(is_warn_always_enabled());
    b.set_grad(None)?;
    b.mul(&b)?.sum()?.backward_with(create_graph())?;
    b.set_grad(None)?;
    b.mul(&b)?.sum()?.backward_with(create_graph())?;
    assert_eq!(warned(&seen), 3, "every time under set_warn_always");

    // grad() with create_graph makes no reference cycle: no warning.
    grad(
        &[b.mul(&b)?.sum()?],
        &[b.clone()],
        GradOptions::new().create_graph(true),
    )?;
    assert_eq!(warned(&seen), 3);
    set_warn_always(false);
    set_warning_handler(None);
    Ok(())
}
