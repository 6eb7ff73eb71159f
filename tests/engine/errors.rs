//! Error behaviour of the engine's front door and of failing backward passes (reference B07 errors,
//! B11, B12, B24 single-thread part, B31). Error texts are PyTorch 2.15's, as rendered by
//! `autograd::Error`'s `Display`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autograd::*;

use crate::common;
use common::custom;

// ----- helpers ---------------------------------------------------------------------------------

fn tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    tensor(v, shape).requires_grad_(true).unwrap()
}

fn grad_vals(t: &Tensor) -> Vec<f64> {
    t.grad()
        .expect("expected .grad to be set")
        .to_vec::<f64>()
        .unwrap()
}

fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// A hook that counts its calls.
fn counting_hook(t: &Tensor) -> Arc<AtomicUsize> {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    let _h = t
        .register_hook(move |_g| {
            c.fetch_add(1, Ordering::SeqCst);
            None
        })
        .unwrap();
    n
}

/// After a failed pass, the engine must still run a fresh backward on this thread.
fn assert_engine_usable() {
    let x = leaf(&[1.0, 2.0], &[2]);
    x.mul_scalar(3.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_vals(&x), vec![3.0, 3.0]);
}

// ----- B11 unused inputs ---------------------------------------------------------------------------

#[test]
fn b11_unused_input_error_text() {
    let x = leaf(&[1.0], &[1]);
    let y = leaf(&[1.0], &[1]);
    let _z = x.mul_scalar(2.0).unwrap();
    let _w = y.mul_scalar(2.0).unwrap();
    let r = grad(
        &[x.mul_scalar(2.0).unwrap()],
        &[x.clone(), y.clone()],
        GradOptions::new(),
    );
    assert_eq!(
        err_text(r),
        "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    let r = grad(
        &[x.mul_scalar(2.0).unwrap()],
        &[x, y],
        GradOptions::new().allow_unused(false),
    );
    assert!(matches!(r, Err(Error::UnusedInput { index: 1 })));
}

#[test]
fn b11_materialize_grads_with_allow_unused_false() {
    let x = leaf(&[0.5], &[]);
    let y = x.mul_scalar(2.0).unwrap();
    let r = grad(
        &[y],
        &[x],
        GradOptions::new()
            .allow_unused(false)
            .materialize_grads(true),
    );
    assert_eq!(
        err_text(r),
        "Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False."
    );
}

// ----- B12 argument errors -------------------------------------------------------------------------

#[test]
fn b12_root_does_not_require_grad() {
    let x = tensor(&[1.0], &[1]);
    assert_eq!(
        err_text(x.backward()),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    let a = leaf(&[1.0], &[]);
    let r = backward(
        &[a.mul_scalar(2.0).unwrap(), tensor(&[1.0], &[])],
        &[],
        BackwardOptions::new(),
    );
    assert_eq!(
        err_text(r),
        "element 1 of tensors does not require grad and does not have a grad_fn"
    );
    assert!(a.grad().is_none());
}

#[test]
fn b12_grad_badcalls() {
    let x = tensor(&[1.0], &[1]);
    let y = x.pow(2.0).unwrap();
    let text = "element 0 of tensors does not require grad and does not have a grad_fn";
    assert_eq!(
        err_text(grad(&[x.clone()], &[y.clone()], GradOptions::new())),
        text
    );
    assert_eq!(err_text(grad(&[y], &[x], GradOptions::new())), text);
    let x = leaf(&[1.0], &[1]);
    let y = x.pow(2.0).unwrap();
    assert!(grad(&[y], &[x], GradOptions::new()).is_ok());
}

#[test]
fn b12_input_of_grad_does_not_require_grad() {
    let x = leaf(&[1.0], &[]);
    let c = tensor(&[2.0], &[]);
    let y = x.mul(&c).unwrap();
    assert_eq!(
        err_text(grad(&[y], &[x, c], GradOptions::new())),
        "One of the differentiated Tensors does not require grad"
    );
}

#[test]
fn b12_implicit_grad_only_for_scalar_outputs() {
    let text = "grad can be implicitly created only for scalar outputs";
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    assert_eq!(err_text(y.backward()), text);
    assert_eq!(
        err_text(grad(&[y.clone()], &[x.clone()], GradOptions::new())),
        text
    );
    assert_eq!(
        err_text(backward(&[y.clone()], &[None], BackwardOptions::new())),
        text
    );
    assert_eq!(
        err_text(grad(
            &[y],
            &[x.clone()],
            GradOptions::new().grad_outputs(vec![None])
        )),
        text
    );
    assert!(x.grad().is_none());
}

#[test]
fn b12_tensor_and_gradient_counts_differ() {
    let x = leaf(&[1.0], &[]);
    let a = x.mul_scalar(2.0).unwrap();
    let b = x.mul_scalar(3.0).unwrap();
    let r = backward(
        &[a, b],
        &[Some(tensor(&[1.0], &[]))],
        BackwardOptions::new(),
    );
    assert_eq!(err_text(r), "got 2 tensors and 1 gradients");
}

#[test]
fn b12_gradient_shape_mismatch() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let y = x.mul(&x).unwrap();
    let g = Tensor::ones(&[2], DType::F64).unwrap();
    let text =
        "Mismatch in shape: grad_output[0] has a shape of [2] and output[0] has a shape of [2, 2].";
    let r = grad(
        &[y.clone()],
        &[x.clone()],
        GradOptions::new()
            .grad_outputs(vec![Some(g.clone())])
            .create_graph(true),
    );
    assert_eq!(err_text(r), text);
    assert_eq!(
        err_text(y.backward_with(BackwardOptions::new().gradient(g))),
        text
    );
}

/// A root gradient of another real dtype is not an error: it is cast to the root's dtype, as
/// PyTorch's `validate_outputs` does over the root edges ("required to have the same dtype" is
/// PyTorch's complex/real mismatch only, which has no counterpart here).
#[test]
fn b12_gradient_of_another_dtype_is_cast() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let g = Tensor::ones(&[2], DType::F32).unwrap();
    y.backward_with(BackwardOptions::new().gradient(g)).unwrap();
    assert_eq!(grad_vals(&x), vec![2.0, 2.0]);
}

#[test]
fn b12_empty_inputs() {
    let x = leaf(&[1.0], &[]);
    let y = x.mul_scalar(2.0).unwrap();
    assert_eq!(
        err_text(grad(&[y.clone()], &[], GradOptions::new())),
        "`inputs` argument to `grad()` cannot be empty."
    );
    let r = y.backward_with(BackwardOptions::new().inputs(&[]));
    assert_eq!(
        err_text(r),
        "`inputs` argument to `backward()` cannot be empty."
    );
    assert!(x.grad().is_none());
}

#[test]
fn b12_backward_input_without_requires_grad() {
    let x = leaf(&[1.0], &[]);
    let c = tensor(&[2.0], &[]);
    let y = x.mul(&c).unwrap();
    let r = y.backward_with(BackwardOptions::new().inputs(&[c]));
    assert_eq!(
        err_text(r),
        "can't retain_grad on Tensor that has requires_grad=False"
    );
}

// ----- B07 invalid gradients returned by a node ------------------------------------------------------

#[test]
fn b07_invalid_gradient_shape() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let out = custom(&[&x], Tensor::zeros(&[3], DType::F64).unwrap(), |_g| {
        Ok(std::iter::once(Some(Tensor::ones(&[4], DType::F64)?)).collect())
    });
    assert_eq!(
        err_text(out.sum().unwrap().backward()),
        "Function CustomBackward returned an invalid gradient at index 0 - got [4] but expected shape compatible with [3]"
    );
    assert!(x.grad().is_none());
    assert_engine_usable();
}

#[test]
fn b07_invalid_number_of_gradients() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let out = custom(&[&x], Tensor::zeros(&[3], DType::F64).unwrap(), |g| {
        Ok([g[0].clone(), g[0].clone()].into_iter().collect())
    });
    assert_eq!(
        err_text(out.sum().unwrap().backward()),
        "Function CustomBackward returned an invalid number of gradients - expected 1, but got 2"
    );
    assert!(x.grad().is_none());
}

// ----- B24 errors stop the task -----------------------------------------------------------------------

#[test]
fn b24_node_error_surfaces_unchanged_and_stops_the_task() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = leaf(&[3.0, 4.0], &[2]);
    let a = x.mul_scalar(2.0).unwrap(); // created first: runs after the custom node
    let a_hook = counting_hook(&a);
    let b = custom(&[&y], Tensor::zeros(&[2], DType::F64).unwrap(), |_g| {
        Err(Error::msg("Simulate error on backward pass"))
    });
    let out = a.add(&b).unwrap().sum().unwrap();
    let err = out.backward().unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == "Simulate error on backward pass"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "Simulate error on backward pass");
    assert_eq!(
        a_hook.load(Ordering::SeqCst),
        0,
        "a node after the failing one ran"
    );
    assert!(
        x.grad().is_none() && y.grad().is_none(),
        "a leaf .grad was written"
    );
    assert_engine_usable();
}

#[test]
fn b24_saved_tensor_error_stops_the_task() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = leaf(&[0.5, 1.5], &[2]);
    let a = x.mul_scalar(2.0).unwrap();
    let a_hook = counting_hook(&a);
    let b = y.exp().unwrap(); // saves its result
    {
        let _g = no_grad();
        b.add_(&tensor(&[1.0, 1.0], &[2])).unwrap();
    }
    let err = a.add(&b).unwrap().sum().unwrap().backward().unwrap_err();
    assert!(matches!(err, Error::SavedTensorModified { .. }), "{err:?}");
    assert!(err.to_string().contains("modified by an inplace operation"));
    assert_eq!(a_hook.load(Ordering::SeqCst), 0);
    assert!(x.grad().is_none() && y.grad().is_none());
    assert_engine_usable();
}

#[test]
fn b24_panic_in_hook_becomes_error_and_engine_stays_usable() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = x.mul_scalar(2.0).unwrap();
    let _h = y.register_hook(|_g| panic!("boom")).unwrap();
    let err = y.sum().unwrap().backward().unwrap_err();
    assert!(
        matches!(&err, Error::Panic { message, .. } if message == "boom"),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("panic during backward"),
        "{err}"
    );
    assert!(err.to_string().ends_with(": boom"), "{err}");
    assert!(x.grad().is_none());
    assert_engine_usable();

    // a panicking leaf hook (inside AccumulateGrad's turn)
    let z = leaf(&[1.0], &[]);
    let _h = z.register_hook(|_g| panic!("leaf boom")).unwrap();
    let err = z.mul_scalar(2.0).unwrap().backward().unwrap_err();
    assert!(
        matches!(&err, Error::Panic { message, .. } if message == "leaf boom"),
        "{err:?}"
    );
    assert!(z.grad().is_none());
    assert_engine_usable();
}

// ----- B31 no_grad -----------------------------------------------------------------------------------

#[test]
fn b31_backward_on_no_grad_result_raises() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = {
        let _g = no_grad();
        x.mul(&x).unwrap().sum().unwrap()
    };
    assert!(!y.requires_grad() && y.grad_fn().is_none());
    assert_eq!(
        err_text(y.backward()),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
}
