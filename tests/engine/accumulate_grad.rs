//! AccumulateGrad semantics (B16): accumulation across backward calls, in place when
//! `create_graph` is false (the first `.grad` object is preserved), out of place and
//! differentiable when it is true, and never writing into a caller's tensor.

use autograd::*;

type R = Result<()>;

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    vals(&t.grad().expect(".grad should be set"))
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            (a - e).abs() <= 1e-9 * (1.0 + e.abs()),
            "{actual:?} vs {expected:?}"
        );
    }
}

/// `test_accumulate_grad`'s `compute_grad`: returns (the first `.grad` handle, a copy of its
/// values, x) after two backward passes through `y = x + 2`.
fn compute_grad(create_graph: bool) -> Result<(Tensor, Vec<f64>, Tensor)> {
    let x = Tensor::randn(&[5, 5], DType::F64, 3)?.requires_grad_(true)?;
    let y = x.add_scalar(2.0)?;
    let grad_output = Tensor::ones(&[5, 5], DType::F64)?;
    y.backward_with(
        BackwardOptions::new()
            .gradient(grad_output.clone())
            .retain_graph(true),
    )?;
    let x_grad = x.grad().unwrap();
    let x_grad_clone = vals(&x_grad);
    y.backward_with(
        BackwardOptions::new()
            .gradient(grad_output)
            .create_graph(create_graph),
    )?;
    Ok((x_grad, x_grad_clone, x))
}

#[test]
fn b16_accumulate_grad_in_place_when_create_graph_false() -> R {
    let (x_grad, x_grad_clone, x) = compute_grad(false)?;
    let doubled: Vec<f64> = x_grad_clone.iter().map(|v| v * 2.0).collect();
    assert_close(&vals(&x_grad), &doubled);
    assert!(
        x_grad.is_same(&x.grad().unwrap()),
        "the .grad object must be preserved"
    );
    Ok(())
}

#[test]
fn b16_accumulate_grad_out_of_place_when_create_graph_true() -> R {
    let (x_grad, x_grad_clone, x) = compute_grad(true)?;
    assert_close(&vals(&x_grad), &x_grad_clone);
    let new_grad = x.grad().unwrap();
    assert!(
        !x_grad.is_same(&new_grad),
        "create_graph=true accumulates out of place"
    );
    assert_close(&vals(&new_grad), &[2.0; 25]);
    Ok(())
}

/// With `create_graph`, `.grad` is differentiable: x.grad = 2x + 2x and d(x.grad)/dx = 4.
#[test]
fn b16_create_graph_accumulation_is_differentiable() -> R {
    let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let y = x.mul(&x)?;
    y.backward_with(BackwardOptions::new().create_graph(true))?;
    let g1 = x.grad().unwrap();
    assert_eq!(g1.item::<f64>()?, 6.0);
    assert!(
        g1.grad_fn().is_some(),
        "first .grad under create_graph has a grad_fn"
    );
    y.backward_with(BackwardOptions::new().create_graph(true))?;
    let g2 = x.grad().unwrap();
    assert!(!g2.is_same(&g1));
    assert_eq!(g1.item::<f64>()?, 6.0);
    assert_eq!(g2.item::<f64>()?, 12.0);
    assert!(
        g2.grad_fn().is_some(),
        "accumulated .grad under create_graph has a grad_fn"
    );
    let d = grad(&[g2], &[x.clone()], GradOptions::new())?;
    assert_eq!(d[0].as_ref().unwrap().item::<f64>()?, 4.0);
    Ok(())
}

/// `test_accumulate_grad_tensor_reference` (dense cases): the `.grad` a user set is preserved
/// iff create_graph is false.
#[test]
fn b16_accumulate_grad_tensor_reference() -> R {
    for create_graph in [false, true] {
        let params = leaf(vec![1.5, 1.5], &[2]);
        params.set_grad(Some(Tensor::from_vec(vec![1.5f64, 1.5], &[2])?))?;
        let grad_saved = params.grad().unwrap();
        params.backward_with(
            BackwardOptions::new()
                .gradient(Tensor::from_vec(vec![1.5f64, 1.5], &[2])?)
                .create_graph(create_graph),
        )?;
        assert_eq!(
            grad_saved.is_same(&params.grad().unwrap()),
            !create_graph,
            "create_graph={create_graph}"
        );
        assert_close(&grad_vals(&params), &[3.0, 3.0]);
    }
    Ok(())
}

#[test]
fn b16_grad_accumulates_across_backward_calls() -> R {
    // test_backward_twice_without_saved_values: no saved tensors, so the graph can be reused.
    let x = leaf(vec![0.5, -1.0, 2.0], &[3]);
    let c = x.add_scalar(1.0)?;
    let go = Tensor::ones(&[3], DType::F64)?;
    c.backward_with(BackwardOptions::new().gradient(go.clone()))?;
    c.backward_with(BackwardOptions::new().gradient(go))?;
    assert_close(&grad_vals(&x), &[2.0, 2.0, 2.0]);

    // Separate graphs accumulate into the same leaf as well.
    let w = Tensor::scalar(2.0f64).requires_grad_(true)?;
    w.mul(&w)?.backward()?; // 2w = 4
    w.mul_scalar(3.0)?.backward()?; // + 3
    w.exp()?.backward()?; // + e^2
    assert!((w.grad().unwrap().item::<f64>()? - (7.0 + 2f64.exp())).abs() < 1e-12);
    Ok(())
}

#[test]
fn b16_set_grad_none_resets_accumulation() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.mul(&x)?.sum()?;
    y.backward_with(BackwardOptions::new().retain_graph(true))?;
    let first = x.grad().unwrap();
    x.set_grad(None)?;
    assert!(x.grad().is_none());
    y.backward()?;
    assert_close(&grad_vals(&x), &[2.0, 4.0]);
    // The old gradient object was not written to by the second pass.
    assert!(!first.is_same(&x.grad().unwrap()));
    assert_close(&vals(&first), &[2.0, 4.0]);
    Ok(())
}

/// The engine may steal an incoming gradient buffer only if nobody else can observe it: a root
/// gradient the caller still holds is copied, so later in-place accumulation never mutates it.
#[test]
fn b16_grad_is_never_a_callers_tensor_that_gets_mutated() -> R {
    // The leaf itself as root: AccumulateGrad receives the caller's tensor directly.
    let x = leaf(vec![1.0, 2.0], &[2]);
    let g = Tensor::from_vec(vec![10.0f64, 20.0], &[2])?;
    x.backward_with(BackwardOptions::new().gradient(g.clone()))?;
    assert!(!x.grad().unwrap().is_same(&g));
    x.backward_with(BackwardOptions::new().gradient(g.clone()))?;
    assert_close(&vals(&g), &[10.0, 20.0]);
    assert_close(&grad_vals(&x), &[20.0, 40.0]);

    // Through a node that passes its incoming gradient through unchanged.
    let x = leaf(vec![1.0, 2.0], &[2]);
    let y = x.copy()?;
    y.backward_with(
        BackwardOptions::new()
            .gradient(g.clone())
            .retain_graph(true),
    )?;
    y.backward_with(BackwardOptions::new().gradient(g.clone()))?;
    assert_close(&vals(&g), &[10.0, 20.0]);
    assert_close(&grad_vals(&x), &[20.0, 40.0]);

    // A gradient the caller set as .grad is accumulated into in place (that is the contract),
    // but a tensor the caller passed as a root gradient is not.
    let x = leaf(vec![1.0, 2.0], &[2]);
    let mine = Tensor::from_vec(vec![1.0f64, 1.0], &[2])?;
    x.set_grad(Some(mine.clone()))?;
    x.mul_scalar(2.0)?.sum()?.backward()?;
    assert_close(&vals(&mine), &[3.0, 3.0]);
    assert!(mine.is_same(&x.grad().unwrap()));
    Ok(())
}

/// A non-contiguous incoming gradient is stored as a dense copy with the right values.
#[test]
fn b16_non_contiguous_incoming_grad_is_copied() -> R {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = x.transpose(0, 1)?; // [3, 2]
    let go = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    y.backward_with(BackwardOptions::new().gradient(go.clone()))?;
    let g = x.grad().unwrap();
    assert_eq!(g.shape(), &[2, 3]);
    assert!(g.is_contiguous());
    assert_close(&vals(&g), &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    assert_close(&vals(&go), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Accumulating a second time keeps the object and adds.
    let y = x.transpose(0, 1)?;
    y.backward_with(BackwardOptions::new().gradient(go))?;
    assert!(g.is_same(&x.grad().unwrap()));
    assert_close(&vals(&g), &[2.0, 6.0, 10.0, 4.0, 8.0, 12.0]);
    Ok(())
}

/// AccumulateGrad is a no-op for a leaf whose requires_grad was turned off after the graph was
/// built.
#[test]
fn b16_leaf_that_stopped_requiring_grad_is_not_accumulated() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let w = leaf(vec![3.0, 4.0], &[2]);
    let y = x.mul(&w)?.sum()?;
    x.set_requires_grad(false)?;
    y.backward()?;
    assert!(x.grad().is_none());
    assert_close(&grad_vals(&w), &[1.0, 2.0]);
    Ok(())
}

/// grad() never touches `.grad`; backward(inputs=..) accumulates only into the inputs.
#[test]
fn b16_grad_does_not_accumulate_and_backward_inputs_restricts() -> R {
    let x = leaf(vec![1.0, 2.0], &[2]);
    let w = leaf(vec![3.0, 4.0], &[2]);
    let y = x.mul(&w)?.sum()?;
    let g = grad(
        &[y.clone()],
        &[x.clone()],
        GradOptions::new().retain_graph(true),
    )?;
    assert_close(&vals(g[0].as_ref().unwrap()), &[3.0, 4.0]);
    assert!(x.grad().is_none() && w.grad().is_none());
    y.backward_with(BackwardOptions::new().inputs(&[w.clone()]))?;
    assert!(x.grad().is_none());
    assert_close(&grad_vals(&w), &[1.0, 2.0]);
    Ok(())
}

/// Concurrent backward passes on one leaf: AccumulateGrad serialises them and the result is the
/// sum (B16 / B29 `test_simple_backward_same_input`).
#[test]
fn b16_concurrent_accumulation_sums() -> R {
    let x = leaf(vec![0.5, 1.5, 2.5], &[3]);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let x = x.clone();
            std::thread::spawn(move || -> Result<()> {
                for _ in 0..10 {
                    x.mul(&x)?.add(&x.mul_scalar(3.5)?)?.sum()?.backward()?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap()?;
    }
    let expected: Vec<f64> = [0.5, 1.5, 2.5]
        .iter()
        .map(|v| 80.0 * (2.0 * v + 3.5))
        .collect();
    assert_close(&grad_vals(&x), &expected);
    Ok(())
}

/// A post-accumulate-grad hook may itself run a backward pass that accumulates into the same
/// leaf (e.g. a regulariser applied after each step) without deadlocking.
#[test]
fn post_accumulate_hook_can_run_backward_into_the_same_leaf() -> autograd::Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let x = autograd::Tensor::scalar(2.0f64).requires_grad_(true)?;
    let once = Arc::new(AtomicBool::new(false));
    let (x2, o) = (x.clone(), once.clone());
    x.register_post_accumulate_grad_hook(move |_| {
        if !o.swap(true, Ordering::SeqCst) {
            let _g = autograd::enable_grad();
            x2.mul_scalar(10.0).unwrap().backward().unwrap();
        }
    })?;
    x.mul_scalar(3.0)?.backward()?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 13.0);
    Ok(())
}
