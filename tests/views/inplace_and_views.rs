//! Views, version counters and in-place ops (B14, B31, B32, B35): views share storage and the
//! version counter; in-place ops on leaves that require grad (and their views) are refused; in-place
//! ops on non-leaves rebase history and give correct gradients; hooks and retains_grad across
//! in-place ops (B17, B21).

use std::sync::{Arc, Mutex};

use autograd::*;

type R = Result<()>;

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn plain(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
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

type Log = Arc<Mutex<Vec<String>>>;

/// A tensor hook that logs `"<tag> <grad values>"` and returns `grad * 2`.
fn doubling_hook(
    log: &Log,
    tag: &'static str,
) -> impl Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static + use<> {
    let log = log.clone();
    move |g| {
        log.lock().unwrap().push(format!("{tag} {:?}", vals(g)));
        Some(g.mul_scalar(2.0).unwrap())
    }
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

const LEAF_INPLACE: &str =
    "a leaf Variable that requires grad is being used in an in-place operation.";
const VIEW_OF_LEAF_INPLACE: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

#[test]
fn b32_views_share_storage_and_version_counter() -> R {
    let base = plain(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let t = base.transpose(0, 1)?;
    let n = base.narrow(1, 1, 2)?;
    let r = base.reshape(&[3, 2])?;
    let row = base.narrow(0, 0, 1)?; // [1, 3]
    let e = row.expand(&[4, 3])?;
    let d = base.detach();
    for v in [&t, &n, &r, &row, &e] {
        assert!(v.is_view());
    }
    assert!(!t.is_contiguous());
    for v in [&t, &n, &r, &e, &d] {
        assert_eq!(v.version(), 0);
    }

    base.add_(&Tensor::scalar(10.0f64))?;
    for v in [&base, &t, &n, &r, &row, &e, &d] {
        assert_eq!(v.version(), 1);
    }
    assert_close(&vals(&t), &[11.0, 14.0, 12.0, 15.0, 13.0, 16.0]);
    assert_close(&vals(&n), &[12.0, 13.0, 15.0, 16.0]);
    assert_close(&vals(&r), &[11.0, 12.0, 13.0, 14.0, 15.0, 16.0]);
    assert_close(&vals(&e), &[11.0, 12.0, 13.0].repeat(4));
    assert_close(&vals(&d), &[11.0, 12.0, 13.0, 14.0, 15.0, 16.0]);

    // Writing through a view writes the base, and bumps the shared counter.
    n.mul_(&Tensor::scalar(2.0f64))?;
    assert_close(&vals(&base), &[11.0, 24.0, 26.0, 14.0, 30.0, 32.0]);
    d.zero_()?;
    assert_close(&vals(&base), &[0.0; 6]);
    for v in [&base, &t, &n, &r, &e, &d] {
        assert_eq!(v.version(), 3);
    }
    Ok(())
}

#[test]
fn b35_inplace_on_leaf_that_requires_grad_errors() -> R {
    let a = leaf(vec![1.0, 2.0], &[2]);
    let other = plain(vec![1.0, 1.0], &[2]);
    let errors = [
        a.add_(&other).unwrap_err(),
        a.sub_(&other).unwrap_err(),
        a.mul_(&other).unwrap_err(),
        a.div_(&other).unwrap_err(),
        a.fill_(3.0).unwrap_err(),
        a.zero_().unwrap_err(),
    ];
    for err in errors {
        assert!(matches!(err, Error::LeafInPlace), "{err:?}");
        assert_eq!(err.to_string(), LEAF_INPLACE);
    }
    assert_eq!(
        a.version(),
        0,
        "a refused in-place op does not bump the version"
    );
    assert_close(&vals(&a), &[1.0, 2.0]);
    Ok(())
}

/// `test_inplace_on_view_leaf_errors`.
#[test]
fn b35_inplace_on_view_of_leaf_errors() -> R {
    let a = leaf(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    for view in [a.narrow(0, 0, 1)?, a.transpose(0, 1)?, a.reshape(&[4])?] {
        let err = view.add_(&Tensor::scalar(1.0f64)).unwrap_err();
        assert!(matches!(err, Error::ViewOfLeafInPlace), "{err:?}");
        assert_eq!(err.to_string(), VIEW_OF_LEAF_INPLACE);
    }
    assert_close(&vals(&a), &[1.0, 2.0, 3.0, 4.0]);
    Ok(())
}

/// Under no_grad, in-place on a leaf is allowed, bumps the version and records nothing.
#[test]
fn b31_inplace_on_leaf_allowed_under_no_grad() -> R {
    let a = leaf(vec![1.0, 2.0], &[2]);
    {
        let _g = no_grad();
        a.mul_(&Tensor::scalar(3.0f64))?;
        a.narrow(0, 1, 1)?.add_(&Tensor::scalar(1.0f64))?;
    }
    assert_eq!(a.version(), 2);
    assert!(a.is_leaf() && a.requires_grad());
    assert_close(&vals(&a), &[3.0, 7.0]);
    a.mul(&a)?.sum()?.backward()?;
    assert_close(&grad_vals(&a), &[6.0, 14.0]);
    Ok(())
}

/// `test_no_grad_modifies_version`: an in-place op under no_grad still bumps the version, so
/// backward through a node that saved the tensor fails.
#[test]
fn b14_no_grad_modifies_version() -> R {
    let x = leaf(vec![0.1, 0.2, 0.3, 0.4, 0.5], &[5]);
    let y = leaf(vec![1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let z = x.mul(&y)?.sum()?;
    {
        let _g = no_grad();
        x.mul_(&Tensor::scalar(2.0f64))?;
    }
    let err = z.backward().unwrap_err();
    assert!(matches!(err, Error::SavedTensorModified { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    // A leaf has no grad_fn, so no ", which is output 0 of ...," part.
    assert!(
        msg.contains("[5]] is at version 1; expected version 0 instead."),
        "{msg}"
    );
    Ok(())
}

/// `test_inplace`: ops that do not save the modified tensor do not raise; ops that do, raise.
#[test]
fn b14_test_inplace() -> R {
    let x = Tensor::ones(&[5, 5], DType::F64)?.requires_grad_(true)?;
    let y = Tensor::full(&[5, 5], 4.0, DType::F64)?.requires_grad_(true)?;
    let z = x.mul(&y)?;
    let q = z.add(&y)?;
    let w = z.mul(&y)?;
    z.add_(&Tensor::scalar(2.0f64))?;
    let ones = Tensor::ones(&[5, 5], DType::F64)?;
    q.backward_with(
        BackwardOptions::new()
            .gradient(ones.clone())
            .retain_graph(true),
    )?;
    assert_close(&grad_vals(&x), &[4.0; 25]);
    assert_close(&grad_vals(&y), &[2.0; 25]);
    let err = w
        .backward_with(BackwardOptions::new().gradient(ones))
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    assert!(
        msg.contains("is at version 1; expected version 0 instead."),
        "{msg}"
    );
    Ok(())
}

/// `test_detach_then_inplace_raises_in_autograd`: detach() shares the version counter.
#[test]
fn b32_detach_then_inplace_raises_in_autograd() -> R {
    let x = Tensor::scalar(0.7f64).requires_grad_(true)?;
    let y = x.pow(2.0)?; // saves x
    let z = x.detach();
    assert!(z.grad_fn().is_none() && !z.requires_grad());
    z.zero_()?;
    assert_eq!(x.version(), 1);
    assert_eq!(x.item::<f64>()?, 0.0);
    let err = y.backward().unwrap_err();
    assert!(
        err.to_string().contains("has been modified by an inplace"),
        "{err}"
    );
    Ok(())
}

/// `z = x + (x * 2).detach()` ⇒ x.grad = 1.
#[test]
fn b32_detach_blocks_gradient() -> R {
    let x = leaf(vec![1.0, -2.0], &[2]);
    let z = x.add(&x.mul_scalar(2.0)?.detach())?;
    z.sum()?.backward()?;
    assert_close(&grad_vals(&x), &[1.0, 1.0]);
    Ok(())
}

/// In-place add on a non-leaf rebases its history onto a new node.
#[test]
fn inplace_add_on_non_leaf_rebases_history() -> R {
    let x = leaf(vec![1.0, 2.0, 3.0], &[3]);
    let z = leaf(vec![0.5, 0.25, 0.125], &[3]);
    let y = x.mul_scalar(2.0)?;
    let old = y.grad_fn().unwrap();
    y.add_(&z)?;
    assert_eq!(y.version(), 1);
    assert!(!y.is_leaf() && y.requires_grad());
    assert!(!y.grad_fn().unwrap().ptr_eq(&old), "history was rebased");
    assert_close(&vals(&y), &[2.5, 4.25, 6.125]);
    y.mul(&y)?.sum()?.backward()?;
    // d/dx (2x + z)² = 4(2x + z), d/dz = 2(2x + z).
    assert_close(&grad_vals(&x), &[10.0, 17.0, 24.5]);
    assert_close(&grad_vals(&z), &[5.0, 8.5, 12.25]);
    Ok(())
}

/// In-place mul_/div_/sub_ where both operands require grad.
#[test]
fn inplace_mul_div_sub_with_operand_requiring_grad() -> R {
    let xs = [1.0, -2.0, 3.0];
    let ws = [0.5, 4.0, -1.5];
    // y = (2x) * w
    let (x, w) = (leaf(xs.to_vec(), &[3]), leaf(ws.to_vec(), &[3]));
    let y = x.mul_scalar(2.0)?;
    y.mul_(&w)?;
    y.sum()?.backward()?;
    assert_close(&grad_vals(&x), &ws.map(|w| 2.0 * w));
    assert_close(&grad_vals(&w), &xs.map(|x| 2.0 * x));

    // y = (2x) / w
    let (x, w) = (leaf(xs.to_vec(), &[3]), leaf(ws.to_vec(), &[3]));
    let y = x.mul_scalar(2.0)?;
    y.div_(&w)?;
    y.sum()?.backward()?;
    assert_close(&grad_vals(&x), &ws.map(|w| 2.0 / w));
    let gw: Vec<f64> = xs
        .iter()
        .zip(&ws)
        .map(|(x, w)| -2.0 * x / (w * w))
        .collect();
    assert_close(&grad_vals(&w), &gw);

    // y = (2x) - w, then y *= y (self as the operand)
    let (x, w) = (leaf(xs.to_vec(), &[3]), leaf(ws.to_vec(), &[3]));
    let y = x.mul_scalar(2.0)?;
    y.sub_(&w)?;
    let y2 = y.mul(&y)?;
    y2.sum()?.backward()?;
    let d: Vec<f64> = xs
        .iter()
        .zip(&ws)
        .map(|(x, w)| 2.0 * (2.0 * x - w))
        .collect();
    assert_close(
        &grad_vals(&x),
        &d.iter().map(|v| 2.0 * v).collect::<Vec<_>>(),
    );
    assert_close(&grad_vals(&w), &d.iter().map(|v| -v).collect::<Vec<_>>());
    Ok(())
}

/// An in-place op with a broadcasting operand requiring grad: the operand's gradient is reduced.
#[test]
fn inplace_with_broadcast_operand() -> R {
    let x = leaf(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = leaf(vec![10.0, 20.0, 30.0], &[3]);
    let y = x.copy()?;
    y.mul_(&b)?;
    y.sum()?.backward()?;
    assert_close(&grad_vals(&x), &[10.0, 20.0, 30.0, 10.0, 20.0, 30.0]);
    assert_close(&grad_vals(&b), &[5.0, 7.0, 9.0]);
    Ok(())
}

/// A tensor that does not require grad becomes part of the graph through an in-place op with
/// an operand that does.
#[test]
fn inplace_into_tensor_not_requiring_grad() -> R {
    let t = Tensor::zeros(&[3], DType::F64)?;
    let w = leaf(vec![1.0, 2.0, 3.0], &[3]);
    t.add_(&w.mul_scalar(3.0)?)?;
    assert!(t.requires_grad() && !t.is_leaf());
    t.mul(&t)?.sum()?.backward()?;
    assert_close(&grad_vals(&w), &[18.0, 36.0, 54.0]);
    Ok(())
}

/// Last case of `test_retain_grad_inplace`: in-place over a view of a base that does not require
/// grad, with an operand that does, runs without error; the base's history is rebased
/// (CopySlices), so the operand receives its gradient through the base.
#[test]
fn inplace_on_view_of_base_not_requiring_grad_with_grad_operand() -> R {
    let x = Tensor::zeros(&[4], DType::F64)?;
    let y = x.reshape(&[2, 2])?;
    let t = Tensor::randn_seeded(&[2, 2], DType::F64, 5)?.requires_grad_(true)?;
    y.add_(&t)?;
    assert_eq!(x.grad_fn().unwrap().name(), "CopySlices");
    assert_eq!(x.to_vec::<f64>()?, t.to_vec::<f64>()?);
    x.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(t.grad().unwrap().to_vec::<f64>()?, vec![3.0; 4]);
    Ok(())
}

/// PyTorch's view + in-place semantics: `b = a * 2; v = b[1:3]; v.mul_(3)`; gradients w.r.t. the
/// base see the modified region, gradients through the view flow back to `a`.
#[test]
fn inplace_on_view_rebases_the_base_history() -> R {
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?;
    let v = b.narrow(0, 1, 2)?;
    v.mul_(&Tensor::scalar(3.0f64))?;
    assert_eq!(b.to_vec::<f64>()?, vec![2.0, 12.0, 18.0, 8.0]);
    assert_eq!(b.grad_fn().unwrap().name(), "CopySlices");
    assert_eq!(b.version(), 1);
    b.sum()?
        .backward_with(BackwardOptions::new().retain_graph(true))?;
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, vec![2.0, 6.0, 6.0, 2.0]);
    a.set_grad(None)?;
    v.sum()?.backward()?;
    assert_eq!(a.grad().unwrap().to_vec::<f64>()?, vec![0.0, 6.0, 6.0, 0.0]);
    Ok(())
}

/// The operand of an in-place op on a view gets its gradient from the base's CopySlices.
#[test]
fn inplace_on_view_with_a_grad_operand() -> R {
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let w = Tensor::from_vec(vec![10.0f64, 20.0], &[2])?.requires_grad_(true)?;
    let b = a.mul_scalar(1.0)?;
    let row = b.narrow(0, 1, 1)?; // [[3, 4]]
    row.mul_(&w)?;
    assert_eq!(b.to_vec::<f64>()?, vec![1.0, 2.0, 30.0, 80.0]);
    b.sum()?.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, vec![3.0, 4.0]);
    assert_eq!(
        a.grad().unwrap().to_vec::<f64>()?,
        vec![1.0, 1.0, 10.0, 20.0]
    );
    Ok(())
}

/// In-place on a view of a leaf that requires grad is refused (B35), and so is arithmetic through
/// an expanded view whose elements share memory (PyTorch's "more than one element" error; the data
/// is left untouched); a fill through it is allowed, as in PyTorch.
#[test]
fn inplace_on_view_limits() -> R {
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let err = a
        .narrow(0, 0, 1)?
        .mul_(&Tensor::scalar(2.0f64))
        .unwrap_err();
    assert!(matches!(err, Error::ViewOfLeafInPlace), "{err:?}");
    let base = Tensor::from_vec(vec![1.0f64, 2.0], &[2, 1])?;
    let expanded = base.expand(&[2, 3])?;
    let err = expanded.add_(&Tensor::scalar(1.0f64)).unwrap_err();
    assert!(
        err.to_string().contains(
            "more than one element of the written-to tensor refers to a single memory location"
        ),
        "{err}"
    );
    assert_eq!((base.to_vec::<f64>()?, base.version()), (vec![1.0, 2.0], 0));
    // Filling is idempotent, so PyTorch allows it through repeated elements.
    expanded.fill_(0.0)?;
    assert_eq!((base.to_vec::<f64>()?, base.version()), (vec![0.0, 0.0], 1));
    Ok(())
}

/// B17 `test_retain_grad_inplace`: the retains_grad hook moves to the new grad_fn; the retained grad
/// is w.r.t. the latest version.
#[test]
fn b17_retain_grad_inplace() -> R {
    let two = Tensor::scalar(2.0f64);
    for n_inplace in [1, 2] {
        let a = leaf(vec![1.0], &[1]).copy()?;
        a.retain_grad()?;
        for _ in 0..n_inplace {
            a.mul_(&two)?;
        }
        a.sum()?.backward()?;
        assert_close(&grad_vals(&a), &[1.0]);
    }
    Ok(())
}

/// B21 `test_tensor_hooks_inplace`: hooks registered before an in-place op stay on the old grad_fn.
#[test]
fn b21_tensor_hooks_inplace() -> R {
    let two = Tensor::scalar(2.0f64);
    let log: Log = Default::default();
    let a = leaf(vec![1.0], &[1]);
    let b = a.copy()?;
    let _ = b.register_hook(doubling_hook(&log, "fn1"))?;
    b.mul_(&two)?;
    let _ = b.register_hook(doubling_hook(&log, "fn2"))?;
    b.sum()?.backward()?;
    // Each runs once; fn2 sees 1; fn1 sees x2 from mul_ and x2 from fn2.
    assert_eq!(take(&log), ["fn2 [1.0]", "fn1 [4.0]"]);
    assert_close(&grad_vals(&a), &[8.0]);

    // In-place multiple times is OK.
    let a = leaf(vec![1.0], &[1]);
    let b = a.copy()?;
    let _ = b.register_hook(doubling_hook(&log, "fn3"))?;
    b.mul_(&two)?;
    b.mul_(&two)?;
    b.sum()?.backward()?;
    assert_eq!(take(&log), ["fn3 [4.0]"]);
    assert_close(&grad_vals(&a), &[8.0]);
    Ok(())
}

/// Double backward through `y = 2x; y *= w`: d(dL/dw)/dx = 2 (B40; PyTorch saves the pre-op
/// `self` of `mul_` with its history).
#[test]
fn inplace_mul_double_backward() -> R {
    let x = leaf(vec![0.3, -0.8], &[2]);
    let w = leaf(vec![0.7, -0.5], &[2]);
    let y = x.mul_scalar(2.0)?;
    y.mul_(&w)?;
    let gw = grad(
        &[y.sum()?],
        &[w.clone()],
        GradOptions::new().create_graph(true),
    )?;
    let gw = gw[0].clone().unwrap();
    assert_close(&vals(&gw), &[0.6, -1.6]);
    let ggx = grad(&[gw.sum()?], &[x], GradOptions::new())?;
    assert_close(&vals(ggx[0].as_ref().unwrap()), &[2.0, 2.0]);
    Ok(())
}

/// In-place ops inside a differentiated function: `((2x * w) - x) / exp(w)`, then sin.
fn inplace_fn(i: &[Tensor]) -> Result<Tensor> {
    let y = i[0].mul_scalar(2.0)?;
    y.mul_(&i[1])?;
    y.sub_(&i[0])?;
    y.div_(&i[1].exp()?)?;
    y.sin()
}

fn inplace_fn_inputs() -> [Tensor; 2] {
    [
        leaf(vec![0.3, -0.8, 1.1, 0.4, -0.2, 0.9], &[2, 3]),
        leaf(vec![0.7, -0.5, 0.2], &[3]),
    ]
}

#[test]
fn inplace_ops_gradcheck() -> R {
    gradcheck(inplace_fn, &inplace_fn_inputs())
}

#[test]
fn inplace_ops_gradgradcheck() -> R {
    gradgradcheck(inplace_fn, &inplace_fn_inputs())
}
