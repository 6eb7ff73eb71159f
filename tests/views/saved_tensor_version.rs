//! Saved tensors: release after backward (reference B13) and the version-counter check against
//! in-place modification (B14), including detach sharing the version counter (B32).
//! Texts are PyTorch 2.15's as rendered by `autograd::Error` (`[f32 [3]]` for
//! `[torch.FloatTensor [3]]`, the Rust anomaly hint). The hint in anomaly mode is tested in
//! `tests/modes/anomaly.rs`.

use autograd::*;

const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";
const PREFIX: &str = "one of the variables needed for gradient computation has been modified by an inplace operation: ";
const HINT: &str = " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with autograd::set_detect_anomaly(true, false).";

// ----- helpers ---------------------------------------------------------------------------------

fn f64s(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn req(t: Tensor) -> Tensor {
    t.requires_grad_(true).unwrap()
}

fn grad_f64(t: &Tensor) -> Vec<f64> {
    t.grad().expect("expected .grad").to_vec::<f64>().unwrap()
}

fn grad_f32(t: &Tensor) -> Vec<f32> {
    t.grad().expect("expected .grad").to_vec::<f32>().unwrap()
}

fn ones64(shape: &[usize]) -> Tensor {
    Tensor::ones(shape, DType::F64).unwrap()
}

fn modified(what: &str) -> String {
    format!("{PREFIX}{what}{HINT}")
}

fn err_text(r: Result<()>) -> String {
    r.expect_err("expected an error").to_string()
}

// ----- B13 backward twice ----------------------------------------------------------------------------

#[test]
fn b13_backward_twice_with_saved_values() {
    let b = req(f64s(&[1.0, 2.0, 3.0], &[3]));
    let c = b.mul(&b).unwrap();
    c.backward_with(BackwardOptions::new().gradient(ones64(&[3])))
        .unwrap();
    let err = c
        .backward_with(BackwardOptions::new().gradient(ones64(&[3])))
        .unwrap_err();
    assert!(matches!(err, Error::BackwardTwice), "{err:?}");
    assert_eq!(err.to_string(), ERR_BACKWARD_TWICE);
    assert_eq!(
        grad_f64(&b),
        vec![2.0, 4.0, 6.0],
        "the failed pass must not accumulate"
    );
}

#[test]
fn b13_backward_twice_without_saved_values_accumulates() {
    let b = req(f64s(&[0.1, 0.2, 0.3], &[3]));
    let c = b.add_scalar(1.0).unwrap();
    c.backward_with(BackwardOptions::new().gradient(ones64(&[3])))
        .unwrap();
    c.backward_with(BackwardOptions::new().gradient(ones64(&[3])))
        .unwrap();
    assert_eq!(grad_f64(&b), vec![2.0, 2.0, 2.0]);
}

#[test]
fn b13_retained_graph_second_works_third_fails() {
    let b = req(f64s(&[1.0, 2.0, 3.0], &[3]));
    let c = b.mul(&b).unwrap();
    c.backward_with(
        BackwardOptions::new()
            .gradient(ones64(&[3]))
            .retain_graph(true),
    )
    .unwrap();
    c.backward_with(BackwardOptions::new().gradient(ones64(&[3])))
        .unwrap();
    assert_eq!(grad_f64(&b), vec![4.0, 8.0, 12.0]);
    assert_eq!(
        err_text(c.backward_with(BackwardOptions::new().gradient(ones64(&[3])))),
        ERR_BACKWARD_TWICE
    );
}

#[test]
fn b13_retained_graph_without_saved_values() {
    let b = req(f64s(&[0.0, 0.0, 0.0], &[3]));
    let c = b.add_scalar(1.0).unwrap().mul_scalar(3.0).unwrap();
    for _ in 0..3 {
        c.backward_with(
            BackwardOptions::new()
                .gradient(ones64(&[3]))
                .retain_graph(true),
        )
        .unwrap();
    }
    assert_eq!(grad_f64(&b), vec![9.0, 9.0, 9.0]);
}

#[test]
fn b13_grad_also_frees_saved_tensors() {
    let x = req(f64s(&[3.0], &[]));
    let y = x.mul(&x).unwrap();
    let g = grad(&[y.clone()], &[x.clone()], GradOptions::new()).unwrap();
    assert_eq!(g[0].as_ref().unwrap().item::<f64>().unwrap(), 6.0);
    assert_eq!(err_text(y.backward()), ERR_BACKWARD_TWICE);

    let y = x.mul(&x).unwrap();
    grad(
        &[y.clone()],
        &[x.clone()],
        GradOptions::new().retain_graph(true),
    )
    .unwrap();
    y.backward().unwrap();
    assert_eq!(grad_f64(&x), vec![6.0]);
}

// ----- B14 version counter ---------------------------------------------------------------------------

#[test]
fn b14_inplace_only_ops_that_saved_the_tensor_raise() {
    let x = req(Tensor::ones(&[5, 5], DType::F32).unwrap());
    let y = req(Tensor::full(&[5, 5], 4.0, DType::F32).unwrap());
    let z = x.mul(&y).unwrap();
    let q = z.add(&y).unwrap();
    let w = z.mul(&y).unwrap();
    z.add_(&Tensor::full(&[5, 5], 2.0, DType::F32).unwrap())
        .unwrap();
    assert_eq!(z.version(), 1);
    // Add does not need its inputs for backward: no error
    q.backward_with(
        BackwardOptions::new()
            .gradient(Tensor::ones(&[5, 5], DType::F32).unwrap())
            .retain_graph(true),
    )
    .unwrap();
    assert_eq!(grad_f32(&x), vec![4.0; 25]);
    assert_eq!(grad_f32(&y), vec![2.0; 25]);
    // Mul saved z: raises
    let err = w
        .backward_with(BackwardOptions::new().gradient(Tensor::ones(&[5, 5], DType::F32).unwrap()))
        .unwrap_err();
    assert!(matches!(err, Error::SavedTensorModified { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        modified(
            "[f32 [5, 5]], which is output 0 of Add, is at version 1; expected version 0 instead."
        )
    );
}

#[test]
fn b14_saved_leaf_modified_omits_output_of() {
    let x = req(f32s(&[1.0; 5], &[5]));
    let a = f32s(&[2.0; 5], &[5]);
    let y = x.mul(&a).unwrap().sum().unwrap();
    a.mul_(&f32s(&[3.0], &[])).unwrap();
    assert_eq!(
        err_text(y.backward()),
        modified("[f32 [5]] is at version 1; expected version 0 instead.")
    );
    assert!(x.grad().is_none());
}

#[test]
fn b14_two_inplace_ops_give_version_2() {
    let x = req(f32s(&[1.0; 5], &[5]));
    let a = f32s(&[2.0; 5], &[5]);
    let y = x.mul(&a).unwrap().sum().unwrap();
    a.mul_(&f32s(&[3.0], &[])).unwrap();
    a.mul_(&f32s(&[3.0], &[])).unwrap();
    assert_eq!(a.version(), 2);
    assert_eq!(
        err_text(y.backward()),
        modified("[f32 [5]] is at version 2; expected version 0 instead.")
    );
}

#[test]
fn b14_saved_output_modified_names_its_node() {
    let x = req(f32s(&[0.5, 1.5], &[2]));
    let b = x.exp().unwrap(); // ExpBackward0 saves its result
    {
        let _g = no_grad();
        b.add_(&f32s(&[1.0], &[])).unwrap();
    }
    assert_eq!(
        err_text(b.sum().unwrap().backward()),
        modified(
            "[f32 [2]], which is output 0 of Exp, is at version 1; expected version 0 instead."
        )
    );
}

#[test]
fn b14_inplace_under_no_grad_bumps_version() {
    let x = req(Tensor::randn_seeded(&[5], DType::F32, 1).unwrap());
    let y = req(Tensor::randn_seeded(&[5], DType::F32, 2).unwrap());
    let z = x.mul(&y).unwrap().sum().unwrap();
    {
        let _g = no_grad();
        x.mul_(&f32s(&[2.0], &[])).unwrap();
    }
    assert_eq!(x.version(), 1);
    let text = err_text(z.backward());
    assert!(text.contains("modified by an inplace operation"), "{text}");
    assert_eq!(
        text,
        modified("[f32 [5]] is at version 1; expected version 0 instead.")
    );
}

#[test]
fn b14_b32_detach_shares_version_counter() {
    let x = req(f32s(&[3.0], &[]));
    let y = x.pow(2.0).unwrap(); // saves x
    let z = x.detach();
    z.zero_().unwrap();
    assert_eq!((x.version(), z.version()), (1, 1));
    assert_eq!(
        err_text(y.backward()),
        modified("[f32 []] is at version 1; expected version 0 instead.")
    );
}

#[test]
fn b14_views_share_version_counter() {
    let x = Tensor::randn_seeded(&[1, 2], DType::F64, 3).unwrap();
    let v0 = x.version();
    x.add_(&f64s(&[1.0], &[]))
        .unwrap()
        .add_(&f64s(&[1.0], &[]))
        .unwrap();
    assert!(x.version() > v0);
    let xz = x.narrow(1, 0, 2).unwrap();
    assert_eq!(x.version(), xz.version());
    xz.add_(&f64s(&[1.0], &[])).unwrap();
    assert_eq!(x.version(), xz.version());
    let xt = x.transpose(0, 1).unwrap();
    xt.mul_(&f64s(&[2.0], &[])).unwrap();
    assert_eq!(x.version(), 4);
    assert_eq!(xt.version(), 4);
}

#[test]
fn b14_unmodified_saved_tensor_passes_after_unrelated_inplace() {
    // in-place on a tensor nobody saved must not break backward
    let x = req(f64s(&[1.0, 2.0], &[2]));
    let h = x.mul_scalar(2.0).unwrap(); // saves nothing
    let u = h.mul(&h).unwrap(); // saves h (version 0)
    let k = f64s(&[5.0, 5.0], &[2]);
    k.add_(&f64s(&[1.0], &[])).unwrap();
    u.add(&k).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_f64(&x), vec![8.0, 16.0]); // d(4x²)/dx
}

/// B15 `test_saved_variable_saved_original_inplace_detach`: a saved *input* detached in place
/// cannot be used; a saved *output* detached in place is fine; views cannot be detached in place.
#[test]
fn b15_saved_input_detached_in_place_is_refused() -> autograd::Result<()> {
    use autograd::{Error, Tensor};
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let b = a.mul_scalar(2.0)?; // non-leaf
    let c = b.sin()?; // SinBackward0 saves b (an input)
    b.detach_()?;
    let err = c.sum()?.backward().unwrap_err();
    assert!(matches!(err, Error::SavedTensorDetachedInPlace), "{err:?}");
    assert_eq!(
        err.to_string(),
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, please use out-of-place `.detach()` instead"
    );

    let x = Tensor::from_vec(vec![0.5f64], &[1])?.requires_grad_(true)?;
    let y = x.exp()?; // saves its output
    let z = y.mul_scalar(1.0)?;
    y.detach_()?;
    z.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![0.5f64.exp()]);

    let v = x.mul_scalar(1.0)?.reshape(&[1, 1])?;
    assert!(matches!(v.detach_(), Err(Error::DetachViewInPlace)));
    Ok(())
}
