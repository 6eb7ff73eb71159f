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
    let x = Tensor::randn_seeded(&[5, 5], DType::F64, 3)?.requires_grad_(true)?;
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

/// What `create_graph` stores as a first `.grad`: `(grad_fn name, next function names,
/// requires_grad, is_view, strides, values)`.
fn create_graph_grad(x: &Tensor) -> (String, Vec<Option<String>>, bool, bool, Vec<usize>) {
    let g = x.grad().expect(".grad should be set");
    let f = g.grad_fn().expect("a create_graph .grad has history");
    let next = f
        .next_functions()
        .iter()
        .map(|e| e.as_ref().map(|e| e.node.name().to_string()))
        .collect();
    (
        f.name().to_string(),
        next,
        g.requires_grad(),
        g.is_view(),
        g.strides().to_vec(),
    )
}

/// Under `create_graph`, the first `.grad` of a leaf whose elements are dense is PyTorch's
/// `new_empty_strided(leaf sizes, leaf strides).copy_(grad)`: a fresh tensor (not a view, so
/// `detach_()` works on it) with the leaf's strides, whose grad_fn is `CopyBackwards`; for a
/// leaf whose elements are not dense, a contiguous `clone()`: `CloneBackward0`. PyTorch 2.15:
///
/// ```python
/// def show(x):
///     (x * x).sum().backward(create_graph=True); g = x.grad
///     print(type(g.grad_fn).__name__, [(type(f).__name__ if f else None) for f, _ in
///           g.grad_fn.next_functions], g.requires_grad, g._is_view(), g.stride(), g.tolist())
///     g.detach_()
/// m = torch.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=torch.float64)
/// show(m.clone().requires_grad_())
/// # CopyBackwards [None, 'AddBackward0'] True False (3, 1) [[2, 4, 6], [8, 10, 12]]
/// show(m.t().requires_grad_())
/// # CopyBackwards [None, 'AddBackward0'] True False (1, 3) [[2, 8], [4, 10], [6, 12]]
/// show(torch.tensor(3.0, dtype=torch.float64, requires_grad=True))
/// # CopyBackwards [None, 'AddBackward0'] True False () 6.0
/// show(torch.arange(12., dtype=torch.float64).reshape(3, 4)[:, :2].detach().requires_grad_())
/// # CloneBackward0 ['AddBackward0'] True False (2, 1) [[0, 2], [8, 10], [16, 18]]
/// show(torch.tensor([[1.], [2.], [3.]], dtype=torch.float64).expand(3, 2).requires_grad_())
/// # CloneBackward0 ['AddBackward0'] True False (2, 1) [[2, 2], [4, 4], [6, 6]]
/// ```
#[test]
fn b16_create_graph_first_grad_is_a_fresh_tensor_as_pytorch_stores_it() -> R {
    let copy_backwards = |strides: Vec<usize>| {
        (
            "CopyBackwards".to_string(),
            vec![None, Some("AddBackward0".to_string())],
            true,
            false,
            strides,
        )
    };
    let clone_backward = |strides: Vec<usize>| {
        (
            "CloneBackward0".to_string(),
            vec![Some("AddBackward0".to_string())],
            true,
            false,
            strides,
        )
    };
    let m = || Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let cases: [(Tensor, _, Vec<f64>); 5] = [
        (
            m()?.requires_grad_(true)?,
            copy_backwards(vec![3, 1]),
            vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0],
        ),
        (
            m()?.transpose(0, 1)?.requires_grad_(true)?,
            copy_backwards(vec![1, 3]),
            vec![2.0, 8.0, 4.0, 10.0, 6.0, 12.0],
        ),
        (
            Tensor::scalar(3.0f64).requires_grad_(true)?,
            copy_backwards(vec![]),
            vec![6.0],
        ),
        (
            Tensor::from_vec((0..12).map(f64::from).collect(), &[3, 4])?
                .narrow(1, 0, 2)?
                .requires_grad_(true)?,
            clone_backward(vec![2, 1]),
            vec![0.0, 2.0, 8.0, 10.0, 16.0, 18.0],
        ),
        (
            Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3, 1])?
                .expand(&[3, 2])?
                .requires_grad_(true)?,
            clone_backward(vec![2, 1]),
            vec![2.0, 2.0, 4.0, 4.0, 6.0, 6.0],
        ),
    ];
    for (x, expected, values) in cases {
        x.mul(&x)?
            .sum()?
            .backward_with(BackwardOptions::new().create_graph(true))?;
        assert_eq!(
            create_graph_grad(&x),
            expected,
            "leaf strides {:?}",
            x.strides()
        );
        let g = x.grad().unwrap();
        assert_close(&vals(&g), &values);
        g.detach_()?;
        assert!(g.grad_fn().is_none() && !g.requires_grad());
    }
    Ok(())
}

/// The second order through a `create_graph` `.grad` (`CopyBackwards` into the leaf's strides),
/// and accumulation on top of it (`AddBackward0`, the leaf's strides kept). PyTorch 2.15:
///
/// ```python
/// m = torch.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=torch.float64)
/// for x, w in [(m.t().requires_grad_(), torch.arange(6., dtype=torch.float64).reshape(3, 2)),
///              (m.clone().requires_grad_(), torch.arange(6., dtype=torch.float64).reshape(2, 3))]:
///     (x * x * x).sum().backward(create_graph=True)
///     g = x.grad; x.grad = None
///     (g * w).sum().backward(); print(x.grad)   # 6 * x * w
/// # [[0, 24], [24, 90], [72, 180]] and [[0, 12, 36], [72, 120, 180]]
/// x = m.t().requires_grad_()
/// (x * x).sum().backward(create_graph=True); (x * x).sum().backward(create_graph=True)
/// # x.grad: AddBackward0, next (CopyBackwards, AddBackward0), strides (1, 3), 4 * x
/// x = m.t().requires_grad_(); (x * 2).sum().backward(create_graph=True)
/// # x.grad: no grad_fn, requires_grad False, strides (1, 3), [[2, 2], [2, 2], [2, 2]]
/// ```
#[test]
fn b16_second_order_through_a_create_graph_grad_of_a_transposed_leaf() -> R {
    let m = || Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let w = |shape: &[usize]| Tensor::from_vec((0..6).map(f64::from).collect(), shape);
    let cases = [
        (
            m()?.transpose(0, 1)?.requires_grad_(true)?,
            w(&[3, 2])?,
            [0.0, 24.0, 24.0, 90.0, 72.0, 180.0],
        ),
        (
            m()?.requires_grad_(true)?,
            w(&[2, 3])?,
            [0.0, 12.0, 36.0, 72.0, 120.0, 180.0],
        ),
    ];
    for (x, w, expected) in cases {
        x.mul(&x)?
            .mul(&x)?
            .sum()?
            .backward_with(BackwardOptions::new().create_graph(true))?;
        let g = x.grad().unwrap();
        x.set_grad(None)?;
        g.mul(&w)?.sum()?.backward()?;
        assert_close(&grad_vals(&x), &expected);
    }

    let x = m()?.transpose(0, 1)?.requires_grad_(true)?;
    for _ in 0..2 {
        x.mul(&x)?
            .sum()?
            .backward_with(BackwardOptions::new().create_graph(true))?;
    }
    let g = x.grad().unwrap();
    let f = g.grad_fn().unwrap();
    assert_eq!(f.name(), "AddBackward0");
    let next: Vec<_> = f
        .next_functions()
        .iter()
        .map(|e| e.as_ref().map(|e| e.node.name().to_string()))
        .collect();
    assert_eq!(
        next,
        [
            Some("CopyBackwards".to_string()),
            Some("AddBackward0".to_string())
        ]
    );
    // PyTorch's sum keeps the leaf's strides (1, 3), as its element-wise kernels follow their
    // inputs' memory order; this crate's element-wise ops return contiguous tensors, so the
    // strides are not compared here.
    assert!(!g.is_view());
    assert_close(&vals(&g), &[4.0, 16.0, 8.0, 20.0, 12.0, 24.0]);

    // A gradient without history is stored without history, still with the leaf's strides.
    let x = m()?.transpose(0, 1)?.requires_grad_(true)?;
    x.mul_scalar(2.0)?
        .sum()?
        .backward_with(BackwardOptions::new().create_graph(true))?;
    let g = x.grad().unwrap();
    assert!(g.grad_fn().is_none() && !g.requires_grad() && !g.is_view());
    assert_eq!(g.strides(), [1, 3]);
    assert_close(&vals(&g), &[2.0; 6]);
    Ok(())
}
