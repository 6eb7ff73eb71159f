//! Views and in-place ops as PyTorch: each test is a scenario of issue 22 or of PyTorch's
//! `test_autograd.py` (`test_inplace_on_view_*`, `test_tensor_hooks_inplace_over_view`), with the
//! values and error texts PyTorch 2.15 gives (`benches/pytorch_views.py` prints them).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::*;

type R = Result<()>;

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    t(v, shape).requires_grad_(true).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn grad_of(x: &Tensor) -> Vec<f64> {
    vals(&x.grad().expect("the leaf has a gradient"))
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

fn two() -> Tensor {
    Tensor::scalar(2.0f64)
}

const MULTI_OUTPUT: &str = " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
const NO_GRAD: &str = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";
const PARTIAL: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";
const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

/// Issue 22, 1: the views note's `g(x)`: a view taken before an in-place op on its base sees the
/// new history. PyTorch: `x.grad = [2, 0, 0]`.
#[test]
fn view_taken_before_an_inplace_op_on_its_base_sees_the_new_history() -> R {
    let x = leaf(&[1.0; 3], &[3]);
    let z = x.mul_scalar(1.0)?;
    let y = z.narrow(0, 0, 1)?;
    z.mul_(&two())?;
    assert_eq!(vals(&y), vec![2.0]);
    assert_eq!(y.grad_fn().unwrap().name(), "AsStridedBackward0");
    y.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![2.0, 0.0, 0.0]);
    Ok(())
}

/// Issue 22, 2: sibling views are rebased. PyTorch `[0, 2, 1]`; a hook on the sibling's old
/// grad_fn does not fire (the node is replaced), one registered after does.
#[test]
fn sibling_views_are_rebased_and_old_hooks_stay_behind() -> R {
    let x = leaf(&[1.0; 3], &[3]);
    let b = x.mul_scalar(1.0)?;
    let v1 = b.narrow(0, 0, 2)?;
    let v2 = b.narrow(0, 1, 2)?;
    let old_hook = Arc::new(AtomicUsize::new(0));
    let seen = old_hook.clone();
    v2.register_hook(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        None
    })?;
    v1.mul_(&two())?;
    let new_hook = Arc::new(AtomicUsize::new(0));
    let seen = new_hook.clone();
    v2.register_hook(move |g| {
        assert_eq!(vals(g), vec![1.0, 1.0]);
        seen.fetch_add(1, Ordering::SeqCst);
        None
    })?;
    v2.sum()?.backward()?;
    assert_eq!(grad_of(&x), vec![0.0, 2.0, 1.0]);
    assert_eq!(old_hook.load(Ordering::SeqCst), 0);
    assert_eq!(new_hook.load(Ordering::SeqCst), 1);
    Ok(())
}

/// `test_tensor_hooks_inplace_over_view`: hooks registered on either view before `view.mul_(2)`
/// do not fire; one registered on the sibling after it does, with gradient 1.
#[test]
fn tensor_hooks_inplace_over_view() -> R {
    let base = leaf(&[1.0], &[1]).copy()?;
    let view = base.narrow(0, 0, 1)?;
    let view2 = base.narrow(0, 0, 1)?;
    let fired = Arc::new(AtomicUsize::new(0));
    view.register_hook(|_| panic!("fn0 must not fire"))?;
    view2.register_hook(|_| panic!("fn1 must not fire"))?;
    view.mul_(&two())?;
    let seen = fired.clone();
    view2.register_hook(move |g| {
        assert_eq!(vals(g), vec![1.0]);
        seen.fetch_add(1, Ordering::SeqCst);
        None
    })?;
    view.add(&view2)?.sum()?.backward()?;
    assert_eq!(fired.load(Ordering::SeqCst), 1);
    Ok(())
}

/// Issue 22, 3 (`test_inplace_on_view_modify_base`): a view of a tensor that did not require
/// grad starts requiring it when its base is modified in place by something that does.
#[test]
fn view_starts_requiring_grad_when_its_base_does() -> R {
    let r = leaf(&[1.0], &[1]);
    let x = Tensor::ones(&[5], DType::F64)?;
    let v = x.select(0, 1)?;
    assert!(!v.requires_grad() && v.grad_fn().is_none());
    x.add_(&r)?;
    assert!(v.requires_grad());
    let fwd = |i: &[Tensor]| -> Result<Tensor> {
        let x = Tensor::ones(&[5], DType::F64)?;
        let v = x.select(0, 1)?;
        x.add_(&i[0])?;
        Ok(v)
    };
    let g = grad(&[v.mul(&v)?], &[r.clone()], GradOptions::new())?;
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![4.0]);
    gradcheck(fwd, &[r.clone()])?;
    gradgradcheck(fwd, &[r])
}

/// Issue 22, 4: an operand aliasing the written tensor through `detach()` is saved before the
/// op, so backward sees the version moved on (PyTorch's text, version 2 expected 1).
#[test]
fn detached_alias_operand_is_version_checked() -> R {
    let x0 = leaf(&[1.0, 2.0, 3.0], &[3]);
    let x1 = leaf(&[1.0, 1.0, 1.0], &[3]);
    let y = x0.mul_scalar(2.0)?;
    y.add_(&x1)?;
    y.mul_(&y.detach())?;
    let err = y.sum()?.backward().unwrap_err().to_string();
    assert!(
        err.starts_with("one of the variables needed for gradient computation has been modified by an inplace operation: [f64 [3]] is at version 2; expected version 1 instead."),
        "{err}"
    );
    // The same class: the operand is a view of the written tensor (`s.mul_(s.expand(3))`).
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let s = x.mul_scalar(1.0)?;
    s.mul_(&s.expand(&[3])?)?;
    let err = s.sum()?.backward().unwrap_err().to_string();
    assert!(
        err.contains("[f64 [3]], which is output 0 of AsStrided, is at version 1; expected version 0 instead."),
        "{err}"
    );
    Ok(())
}

/// Issue 22, 5: the in-place ops PyTorch refuses, with its texts.
#[test]
fn inplace_ops_pytorch_refuses() -> R {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[4]);
    // On an output of a multi-view op.
    let b = x.mul_scalar(1.0)?;
    let parts = b.split(&[2, 2], 0)?;
    let err = parts[0].mul_(&two()).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "Output 0 of SplitWithSizes is a view and is being modified inplace.{MULTI_OUTPUT}"
        )
    );
    let chunks = b.chunk(2, 0)?;
    assert!(
        chunks[1]
            .add_(&chunks[0])
            .unwrap_err()
            .to_string()
            .ends_with(MULTI_OUTPUT)
    );
    // On such a view after its base was modified in place.
    let b = x.mul_scalar(1.0)?;
    let parts = b.split(&[2, 2], 0)?;
    b.mul_(&two())?;
    let err = parts[0].mul_scalar(1.0).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "Output 0 of SplitWithSizes is a view and its base or another view of its base has been modified inplace.{MULTI_OUTPUT}"
        )
    );
    // Partially overlapping operand and written-to tensor; the data is left as it was.
    let b = x.mul_scalar(1.0)?;
    let err = b.narrow(0, 0, 3)?.mul_(&b.narrow(0, 1, 3)?).unwrap_err();
    assert_eq!(err.to_string(), PARTIAL);
    assert_eq!((vals(&b), b.version()), (vec![1.0, 2.0, 3.0, 4.0], 0));
    // A view made under no_grad, modified with grad mode on: an error, not a panic.
    let b = x.mul_scalar(1.0)?;
    let v = {
        let _g = no_grad();
        b.narrow(0, 0, 2)?
    };
    assert_eq!(v.mul_(&two()).unwrap_err().to_string(), NO_GRAD);
    // ... also of a leaf (the view requires grad through its base, as in PyTorch).
    let v = {
        let _g = no_grad();
        x.narrow(0, 0, 2)?
    };
    assert!(v.requires_grad());
    assert_eq!(v.mul_(&two()).unwrap_err().to_string(), NO_GRAD);
    // Both under no_grad is fine (not tracked).
    {
        let _g = no_grad();
        b.narrow(0, 0, 2)?.mul_(&two())?;
    }
    // Writing through an expanded view: refused for arithmetic, allowed for fill (idempotent).
    let base = t(&[1.0, 2.0], &[2, 1]);
    let e = base.expand(&[2, 3])?;
    assert_eq!(e.add_(&two()).unwrap_err().to_string(), INTERNAL);
    e.fill_(0.0)?;
    assert_eq!(vals(&base), vec![0.0, 0.0]);
    // ... but the backward of a recorded fill through an expand writes the view's gradient into
    // overlapping memory, which PyTorch refuses at that point.
    let x = leaf(&[1.0, 2.0], &[2, 1]);
    let b = x.mul_scalar(1.0)?;
    b.expand(&[2, 3])?.fill_(0.0)?;
    assert_eq!(b.sum()?.backward().unwrap_err().to_string(), INTERNAL);
    Ok(())
}

/// Issue 22, 6: double backward through an in-place op on a view (CopySlices under
/// `create_graph`), through a row of a transposed base. PyTorch: `[[228, 34], [262, 34]]`,
/// `[92, 160]`.
#[test]
fn double_backward_through_copy_slices_on_a_transposed_view() -> R {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = x.mul_scalar(1.0)?;
    let row = b.transpose(0, 1)?.narrow(0, 0, 1)?;
    let w = leaf(&[5.0, 6.0], &[2]);
    row.mul_(&w)?;
    let s = b.sum()?;
    let g = grad(
        &[s.mul(&s)?],
        &[x.clone(), w.clone()],
        GradOptions::new().create_graph(true),
    )?;
    let (gx, gw) = (g[0].clone().unwrap(), g[1].clone().unwrap());
    let gg = grad(&[gx.sum()?.add(&gw.sum()?)?], &[x, w], GradOptions::new())?;
    assert_close(&vals(gg[0].as_ref().unwrap()), &[228.0, 34.0, 262.0, 34.0]);
    assert_close(&vals(gg[1].as_ref().unwrap()), &[92.0, 160.0]);
    Ok(())
}

/// `test_inplace_on_view_gradcheck` and `test_inplace_on_view_makes_base_require_grad`: first
/// and second order through in-place ops on views of views.
#[test]
fn inplace_on_view_gradcheck_and_gradgradcheck() -> R {
    let a = Tensor::randn_seeded(&[4, 4], DType::F64, 1)?.requires_grad_(true)?;
    let b = Tensor::randn_seeded(&[2, 2], DType::F64, 2)?.requires_grad_(true)?;
    let f = |i: &[Tensor]| -> Result<Tensor> {
        let x = i[0].copy()?;
        x.narrow(1, 2, 2)?.narrow(0, 1, 2)?.mul_(&i[1])?;
        x.narrow(1, 0, 2)?.narrow(0, 1, 2)?.mul_(&i[1])?;
        Ok(x)
    };
    gradcheck(f, &[a.clone(), b.clone()])?;
    gradgradcheck(f, &[a, b.clone()])?;
    let root = Tensor::randn_seeded(&[4, 4], DType::F64, 3)?;
    let b = Tensor::randn_seeded(&[4, 2], DType::F64, 4)?.requires_grad_(true)?;
    let x = root.copy()?;
    assert!(!x.requires_grad());
    x.narrow(1, 2, 2)?.mul_(&b)?;
    assert!(x.requires_grad());
    let g = move |i: &[Tensor]| -> Result<Tensor> {
        let x = root.copy()?;
        x.narrow(1, 2, 2)?.mul_(&i[0])?;
        Ok(x)
    };
    gradcheck(g.clone(), &[b.clone()])?;
    gradgradcheck(g, &[b])
}

/// `test_inplace_on_view_of_view`, `test_inplace_on_view_backprop_view`.
#[test]
fn inplace_on_view_of_view_and_backprop_through_the_view() -> R {
    let root = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let x = root.copy()?;
    let v2 = x.narrow(0, 0, 1)?.narrow(1, 1, 1)?;
    v2.mul_(&two())?;
    x.sum()?.backward()?;
    assert_eq!(grad_of(&root), vec![1.0, 2.0, 1.0, 1.0]);

    let a = t(&[2.0, 5.0], &[2]);
    let b = leaf(&[3.0], &[1]);
    let res = a.narrow(0, 1, 1)?;
    res.mul_(&b)?;
    res.sum()?.backward()?;
    assert_eq!(grad_of(&b), vec![5.0]);
    assert!(a.grad().is_none());
    Ok(())
}

/// Issue 22, 7: max over a 0-dim tensor at second order. PyTorch `[2/3, 2/3, 2/3]`.
#[test]
fn max_dim_of_a_0_dim_tensor_at_second_order() -> R {
    let x = leaf(&[0.3, 0.7, 0.2], &[3]);
    let v = x.mean()?.max_dim(0, false)?.0;
    let y = v.mul(&v)?;
    let g = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?[0]
        .clone()
        .unwrap();
    let gg = grad(&[g.sum()?], &[x], GradOptions::new())?[0]
        .clone()
        .unwrap();
    assert_close(&vals(&gg), &[2.0 / 3.0; 3]);
    Ok(())
}

/// `x += y` as a custom in-place function (PyTorch's `PyAdd` with `mark_dirty`).
#[differentiable(dirty(x))]
fn py_add(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.add_(y)?;
    Ok(x.clone())
}

#[backward(py_add)]
fn py_add_backward(grad: &Tensor) -> (Tensor, Tensor) {
    (grad.clone(), grad.clone())
}

/// Issue 22, 6 (`test_inplace_on_view_python`): a custom in-place function on a view is rebased
/// through CopySlices like a built-in one; gradcheck and gradgradcheck hold.
#[test]
fn custom_inplace_function_on_a_view() -> R {
    let a = Tensor::randn_seeded(&[4, 4], DType::F64, 5)?.requires_grad_(true)?;
    let b = Tensor::randn_seeded(&[2, 2], DType::F64, 6)?.requires_grad_(true)?;
    let f = |i: &[Tensor]| -> Result<Tensor> {
        let x = i[0].copy()?;
        py_add(&x.narrow(1, 2, 2)?.narrow(0, 1, 2)?, &i[1])?;
        py_add(&x.narrow(1, 0, 2)?.narrow(0, 1, 2)?, &i[1])?;
        Ok(x)
    };
    let x = f(&[a.clone(), b.clone()])?;
    assert_eq!(x.grad_fn().unwrap().name(), "CopySlices");
    gradcheck(f, &[a.clone(), b.clone()])?;
    gradgradcheck(f, &[a.clone(), b])?;
    // On a view of a leaf that requires grad, PyTorch's error.
    let err = py_add(&a.narrow(0, 0, 1)?, &Tensor::scalar(1.0f64)).unwrap_err();
    assert!(matches!(err, Error::ViewOfLeafInPlace), "{err}");
    Ok(())
}

/// An element-wise result takes its operand's layout as PyTorch's `TensorIterator` gives it:
/// `x.t().exp()` is transposed (strides `(1, 3)`), so `reshape(6)` of it copies
/// (`UnsafeViewBackward0`) where that of a contiguous result would be a view; and the values
/// and gradients are those of the transposed elements.
#[test]
fn elementwise_results_keep_a_transposed_operands_layout() -> R {
    let x = leaf(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    let y = x.transpose(0, 1)?.exp()?;
    assert_eq!((y.strides(), y.is_contiguous()), (&[1, 3][..], false));
    let e = |v: f64| v.exp();
    assert_close(&vals(&y), &[e(0.0), e(3.0), e(1.0), e(4.0), e(2.0), e(5.0)]);
    let flat = y.reshape(&[6])?;
    assert!(!flat.is_view());
    assert_eq!(
        flat.grad_fn().expect("recorded").name(),
        "UnsafeViewBackward0"
    );
    assert_eq!(
        x.transpose(0, 1)?
            .mul_scalar(2.0)?
            .add_scalar(1.0)?
            .strides(),
        &[1, 3]
    );
    assert_eq!(
        x.transpose(0, 1)?.add(&t(&[1.0; 6], &[3, 2]))?.strides(),
        &[1, 3]
    );
    assert_eq!(
        t(&[1.0; 6], &[3, 2]).add(&x.transpose(0, 1)?)?.strides(),
        &[2, 1]
    );
    x.transpose(0, 1)?
        .mul(&x.transpose(0, 1)?)?
        .sum()?
        .backward()?;
    assert_close(&grad_of(&x), &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    Ok(())
}
