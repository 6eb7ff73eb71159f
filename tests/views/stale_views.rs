//! A stale view that may not be regenerated (an output of `split`/`chunk`, or a view made under
//! `no_grad`, whose base was modified in place since) is refused by every front door that reads
//! its `grad_fn`, with the error PyTorch's `grad_fn` accessor raises: `grad()` inputs, roots,
//! `backward(inputs=..)`, `register_hook`, `retain_grad`, post-accumulate-grad hooks and
//! multi-grad hooks. Before, `grad()` said the view "appears to not have been used in the graph"
//! and a hook went to a node that never runs.
//!
//! Expected texts and values come from PyTorch 2.15 (CPU), running:
//!
//! ```python
//! def stale():
//!     x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
//!     base = x.mul(1.0)
//!     a, b = base.chunk(2)
//!     base.mul_(2)
//!     out = (base * base).sum()
//!     return x, a, b, out
//! # each of these, on a fresh stale(), raises "Output 1 of Split is a view and its base or
//! # another view of its base has been modified inplace. This view is the output of a function
//! # that returns multiple views. (...)" ("Output 0" for a):
//! torch.autograd.grad(out, [x, b]); torch.autograd.grad(out, [b], allow_unused=True)
//! b.register_hook(lambda g: g); a.retain_grad(); out.backward(inputs=[x, b])  # x.grad: None
//! torch.autograd.backward([b], [torch.ones(2, dtype=torch.float64)])         # x.grad: None
//! b.register_post_accumulate_grad_hook(lambda t: None)
//! torch.autograd.graph.register_multi_grad_hook([x, b], lambda gs: None)
//! out.backward(); x.grad          # still works afterwards: [8, 16, 24, 32]
//! # b.retain_grad() before base.mul_(2): b.retain_grad() again is a no-op, b.retains_grad True
//! # a, b = base.split([2, 2]); base.add_(1); torch.autograd.grad(base.sum(), [a])
//! #   -> "Output 0 of SplitWithSizes is a view and its base (...)"
//!
//! def ng():   # a view made under no_grad
//!     x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
//!     base = x.mul(1.0)
//!     with torch.no_grad():
//!         v = base[:2]
//!     base.mul_(2)
//!     return x, v, (base * base).sum()
//! # grad(out, [v]), v.register_hook(..), out.backward(inputs=[v]) raise "A view was created in
//! # no_grad mode and its base or another view of its base has been modified inplace with grad
//! # mode enabled. (...)"; v.retain_grad() is a no-op (v.retains_grad False: C++'s is_leaf()
//! # reads the grad_fn field, empty for such a view); out.backward() gives x.grad = [8, 16, 24,
//! # 32], v.grad None. Without base.mul_(2), v.retain_grad() is a no-op too.
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::*;

type R = Result<()>;

const MULTI_OUTPUT: &str = " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
const NO_GRAD_STALE: &str = "A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

fn stale_split_error(output: usize) -> String {
    format!(
        "Output {output} of Split is a view and its base or another view of its base has been modified inplace.{MULTI_OUTPUT}"
    )
}

/// PyTorch's `stale()`: `(x, a, b, out)`.
fn stale() -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let base = x.mul_scalar(1.0)?;
    let parts = base.chunk(2, 0)?;
    base.mul_(&Tensor::scalar(2.0f64))?;
    let out = base.mul(&base)?.sum()?;
    Ok((x, parts[0].clone(), parts[1].clone(), out))
}

/// PyTorch's `ng()`: `(x, v, out)`.
fn no_grad_view(modify_base: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let base = x.mul_scalar(1.0)?;
    let v = {
        let _g = no_grad();
        base.narrow(0, 0, 2)?
    };
    if modify_base {
        base.mul_(&Tensor::scalar(2.0f64))?;
    }
    let out = base.mul(&base)?.sum()?;
    Ok((x, v, out))
}

fn x_grad(x: &Tensor) -> Option<Vec<f64>> {
    x.grad().map(|g| g.to_vec::<f64>().unwrap())
}

#[test]
fn grad_refuses_a_stale_split_view_as_an_input() -> R {
    let (x, _a, b, out) = stale()?;
    let err = grad(
        &[out],
        &[x.clone(), b.clone()],
        GradOptions::new().retain_graph(true),
    )
    .unwrap_err();
    assert!(matches!(err, Error::ViewRebase(_)));
    assert_eq!(err.to_string(), stale_split_error(1));
    let (_x, _a, b, out) = stale()?;
    let err = grad(&[out], &[b], GradOptions::new().allow_unused(true)).unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));

    // `split` with sizes names its node SplitWithSizes.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let base = x.mul_scalar(1.0)?;
    let parts = base.split(&[2, 2], 0)?;
    base.add_(&Tensor::scalar(1.0f64))?;
    let err = grad(&[base.sum()?], &[parts[0].clone()], GradOptions::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Output 0 of SplitWithSizes is a view and its base or another view of its base has been modified inplace.{MULTI_OUTPUT}"
        )
    );
    Ok(())
}

#[test]
fn backward_refuses_a_stale_split_view_as_an_input_or_a_root() -> R {
    let (x, _a, b, out) = stale()?;
    let err = out
        .backward_with(BackwardOptions::new().inputs(&[x.clone(), b]))
        .unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));
    assert_eq!(x_grad(&x), None, "nothing ran");

    let (x, _a, b, _out) = stale()?;
    let err = backward(
        std::slice::from_ref(&b),
        &[Some(Tensor::ones(&[2], DType::F64)?)],
        BackwardOptions::new(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));
    assert_eq!(x_grad(&x), None);
    Ok(())
}

/// A hook is refused rather than put on a node that never runs; the graph is untouched, and
/// `out.backward()` still gives PyTorch's gradient.
#[test]
fn hooks_are_refused_on_a_stale_split_view() -> R {
    let (x, a, b, out) = stale()?;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let err = b
        .register_hook(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            None
        })
        .unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));
    let err = b.try_register_hook(|_| Ok(None)).unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));
    let err = a.retain_grad().unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(0));
    assert!(!a.retains_grad());
    let err = b.register_post_accumulate_grad_hook(|_| {}).unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    let err = register_multi_grad_hook(&[x.clone(), b.clone()], MultiGradMode::All, move |_| {
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap_err();
    assert_eq!(err.to_string(), stale_split_error(1));

    out.backward()?;
    assert_eq!(x_grad(&x), Some(vec![8.0, 16.0, 24.0, 32.0]));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(fired.load(Ordering::SeqCst), 0, "no hook was left on x");
    assert!(a.grad().is_none());
    Ok(())
}

/// `retain_grad` on a split view that retains its grad already is a no-op, stale or not:
/// PyTorch returns before it reads the grad_fn.
#[test]
fn retain_grad_again_on_a_stale_split_view_is_a_no_op() -> R {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let base = x.mul_scalar(1.0)?;
    let parts = base.chunk(2, 0)?;
    parts[1].retain_grad()?;
    base.mul_(&Tensor::scalar(2.0f64))?;
    parts[1].retain_grad()?;
    assert!(parts[1].retains_grad());
    Ok(())
}

/// A view made under `no_grad`, stale: the same refusals with PyTorch's no_grad text, except
/// `retain_grad`, a no-op there (PyTorch's C++ `is_leaf()` reads the empty grad_fn field).
#[test]
fn a_stale_view_made_under_no_grad_is_refused_likewise() -> R {
    let (_x, v, out) = no_grad_view(true)?;
    let err = grad(&[out], std::slice::from_ref(&v), GradOptions::new()).unwrap_err();
    assert_eq!(err.to_string(), NO_GRAD_STALE);
    let (_x, v, out) = no_grad_view(true)?;
    assert_eq!(
        v.register_hook(|_| None).unwrap_err().to_string(),
        NO_GRAD_STALE
    );
    v.retain_grad()?;
    assert!(!v.retains_grad());
    let err = out
        .backward_with(BackwardOptions::new().inputs(std::slice::from_ref(&v)))
        .unwrap_err();
    assert_eq!(err.to_string(), NO_GRAD_STALE);

    let (x, v, out) = no_grad_view(true)?;
    out.backward()?;
    assert_eq!(x_grad(&x), Some(vec![8.0, 16.0, 24.0, 32.0]));
    assert!(v.grad().is_none());

    // Not stale: retain_grad is a no-op as well (it requires grad, through its base).
    let (_x, v, _out) = no_grad_view(false)?;
    assert!(v.requires_grad());
    v.retain_grad()?;
    assert!(!v.retains_grad() && v.grad_fn().is_none());
    Ok(())
}

/// Views that may be regenerated, and split views that are not stale, are unaffected.
#[test]
fn fresh_split_views_and_ordinary_stale_views_still_work() -> R {
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4])?.requires_grad_(true)?;
    let parts = x.mul_scalar(1.0)?.chunk(2, 0)?;
    let out = parts[0].mul_scalar(3.0)?.sum()?;
    let g = grad(
        &[out],
        &[parts[0].clone(), parts[1].clone()],
        GradOptions::new().allow_unused(true),
    )?;
    assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, [3.0, 3.0]);
    assert!(g[1].is_none());

    // An ordinary view of a modified base: its grad_fn is regenerated and the hook goes there.
    let base = x.mul_scalar(1.0)?;
    let v = base.narrow(0, 0, 2)?;
    base.mul_(&Tensor::scalar(2.0f64))?;
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    v.register_hook(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        None
    })?;
    v.retain_grad()?;
    v.sum()?.backward()?;
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(v.grad().unwrap().to_vec::<f64>()?, [1.0, 1.0]);
    assert_eq!(x_grad(&x), Some(vec![2.0, 2.0, 0.0, 0.0]));
    Ok(())
}
