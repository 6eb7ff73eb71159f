//! Custom differentiable functions declared with `#[differentiable]` / `#[backward]`: values and
//! gradients (gradcheck, gradgradcheck), double backward through a backward written with tensor
//! ops (B37), errors and panics from user code, saved-tensor checks, and the options: node name,
//! `materialize_grads` and `non_differentiable` (B34), `dirty` (B35), `once_differentiable` (B36).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use autograd::graph::InputMetadata;
use autograd::{
    BackwardOptions, DType, Error, GradOptions, NodeRef, Result, Tensor, backward, differentiable,
    gradcheck, gradgradcheck, is_grad_enabled, saved_tensors_hooks,
};

#[differentiable]
fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
    x * x * scale
}

#[backward(scaled_square)]
fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
    grad * x * (2.0 * scale)
}

/// `x * y + y` with two outputs sharing the work: the product and the sum.
#[differentiable]
fn product_and_sum(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul(y)?, x.add(y)?))
}

#[backward(product_and_sum)]
fn product_and_sum_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    x: &Tensor,
    y: &Tensor,
) -> Result<(Tensor, Tensor)> {
    Ok((grad_0.mul(y)?.add(grad_1)?, grad_0.mul(x)?.add(grad_1)?))
}

/// `exp`, saving its result rather than its input.
#[differentiable]
fn my_exp(x: &Tensor) -> Result<Tensor> {
    x.exp()
}

#[backward(my_exp)]
fn my_exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(result)
}

fn randn(shape: &[usize], seed: u64) -> Result<Tensor> {
    Tensor::randn_seeded(shape, DType::F64, seed)?.requires_grad_(true)
}

fn grad_of(t: &Tensor) -> Vec<f64> {
    t.grad().expect("gradient").to_vec::<f64>().expect("f64")
}

#[test]
fn values_and_gradients_match_finite_differences() -> Result<()> {
    let x = randn(&[2, 3], 1)?;
    let y = scaled_square(&x, 1.5);
    let expected: Vec<f64> = x.to_vec::<f64>()?.iter().map(|v| v * v * 1.5).collect();
    assert_eq!(y.to_vec::<f64>()?, expected);
    gradcheck(|i| Ok(scaled_square(&i[0], 1.5)), std::slice::from_ref(&x))?;
    gradgradcheck(|i| Ok(scaled_square(&i[0], 1.5)), &[x])?;

    let a = randn(&[3], 2)?;
    let b = randn(&[3], 3)?;
    let f = |i: &[Tensor]| -> Result<Tensor> {
        let (p, s) = product_and_sum(&i[0], &i[1])?;
        p.mul(&s)?.sum()
    };
    gradcheck(f, &[a.clone(), b.clone()])?;
    gradgradcheck(f, &[a, b])?;

    let z = randn(&[4], 4)?;
    gradcheck(|i| my_exp(&i[0]), std::slice::from_ref(&z))?;
    gradgradcheck(|i| my_exp(&i[0]), &[z])
}

#[test]
fn double_backward_through_a_tensor_op_backward() -> Result<()> {
    // B37: with create_graph the backward's ops are recorded, so x.grad has a grad_fn.
    let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    let y = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let (p, s) = product_and_sum(&x, &y)?;
    let out = p.add(&s)?; // x*y + x + y
    out.backward_with(BackwardOptions::new().create_graph(true))?;
    let gx = x.grad().expect("x.grad");
    let gy = y.grad().expect("y.grad");
    assert_eq!((gx.item::<f64>()?, gy.item::<f64>()?), (3.0, 4.0)); // y + 1, x + 1
    assert!(gx.grad_fn().is_some());
    x.set_grad(None)?;
    y.set_grad(None)?;
    gx.backward()?; // d(y + 1)/dy = 1
    assert_eq!(y.grad().expect("y.grad").item::<f64>()?, 1.0);
    assert!(x.grad().is_none());

    // Repeated grad of grad through a saved result.
    let z = Tensor::scalar(0.5f64).requires_grad_(true)?;
    let e = my_exp(&z)?;
    let options = GradOptions::new().create_graph(true);
    let g1 = autograd::grad(&[e], std::slice::from_ref(&z), options.clone())?[0]
        .clone()
        .expect("g1");
    let g2 = autograd::grad(&[g1], std::slice::from_ref(&z), options)?[0]
        .clone()
        .expect("g2");
    assert!((g2.item::<f64>()? - 0.5f64.exp()).abs() < 1e-12);
    Ok(())
}

#[differentiable]
fn checked_sqrt(x: &Tensor) -> Result<Tensor> {
    if x.to_vec::<f64>()?.iter().any(|v| *v < 0.0) {
        return Err(Error::msg("checked_sqrt of a negative number"));
    }
    x.sqrt()
}

#[backward(checked_sqrt)]
fn checked_sqrt_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.div(&result.mul_scalar(2.0)?)
}

#[test]
fn forward_error_is_returned_to_the_caller() -> Result<()> {
    let x = Tensor::from_vec(vec![4.0f64, -1.0], &[2])?.requires_grad_(true)?;
    let err = checked_sqrt(&x).unwrap_err();
    assert_eq!(err.to_string(), "checked_sqrt of a negative number");
    // Grad mode is restored after the failed forward.
    assert!(autograd::is_grad_enabled());
    Ok(())
}

#[differentiable]
fn fails_in_backward(x: &Tensor) -> Tensor {
    x * 1.0
}

#[backward(fails_in_backward)]
fn fails_in_backward_backward(grad: &Tensor) -> Result<Tensor> {
    let _ = grad;
    Err(Error::msg("Simulate error on backward pass"))
}

#[differentiable]
fn panics_in_backward(x: &Tensor) -> Tensor {
    x * 1.0
}

#[backward(panics_in_backward)]
fn panics_in_backward_backward(grad: &Tensor) -> Tensor {
    let _ = grad;
    panic!("boom in backward")
}

#[test]
fn backward_error_reaches_the_caller_unchanged() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let err = fails_in_backward(&x).backward().unwrap_err();
    assert!(
        matches!(&err, Error::Message(m) if m == "Simulate error on backward pass"),
        "{err}"
    );
    Ok(())
}

#[test]
fn panic_in_backward_becomes_an_error_and_the_engine_stays_usable() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let err = panics_in_backward(&x).backward().unwrap_err();
    match &err {
        Error::Panic { message, .. } => assert!(message.contains("boom in backward"), "{err}"),
        other => panic!("expected Error::Panic, got {other:?}"),
    }
    scaled_square(&x, 2.0).backward()?;
    assert_eq!(grad_of(&x), [4.0]);
    Ok(())
}

#[test]
fn saved_input_modified_in_place_is_reported() -> Result<()> {
    let leaf = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let x = leaf.mul_scalar(1.0)?; // a non-leaf, so it may be modified in place
    let y = scaled_square(&x, 1.0);
    x.add_(&Tensor::ones(&[2], DType::F64)?)?;
    let err = y.sum()?.backward().unwrap_err();
    assert!(
        matches!(
            err,
            Error::SavedTensorModified {
                saved_version: 0,
                current_version: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("modified by an inplace operation"),
        "{err}"
    );
    Ok(())
}

#[test]
fn saved_tensors_are_freed_after_backward() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let y = scaled_square(&x, 1.0);
    y.backward_with(BackwardOptions::new().retain_graph(true))?;
    y.backward()?; // retained once, then released
    assert_eq!(grad_of(&x), [8.0]);
    let err = y.backward().unwrap_err();
    assert!(matches!(err, Error::BackwardTwice), "{err}");

    // A function that saves nothing can run again.
    let z = fails_in_backward(&x);
    let _ = z.backward();
    Ok(())
}

#[test]
fn node_names() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    assert_eq!(
        scaled_square(&x, 1.0).grad_fn().expect("node").name(),
        "ScaledSquareBackward0"
    );
    let (p, s) = product_and_sum(&x, &x)?;
    let (np, ns) = (p.grad_fn().expect("node"), s.grad_fn().expect("node"));
    assert!(np.ptr_eq(&ns));
    assert_eq!(np.name(), "ProductAndSumBackward0");
    assert_eq!((p.output_nr(), s.output_nr()), (0, 1));
    assert_eq!(renamed(&x).grad_fn().expect("node").name(), "Renamed");
    Ok(())
}

#[differentiable(name = "Renamed")]
fn renamed(x: &Tensor) -> Tensor {
    x * 1.0
}

#[backward(renamed)]
fn renamed_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

#[test]
fn nothing_is_recorded_without_grad() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    {
        let _g = autograd::no_grad();
        let y = scaled_square(&x, 1.0);
        assert!(y.grad_fn().is_none() && !y.requires_grad());
    }
    let c = Tensor::scalar(2.0f64);
    assert!(scaled_square(&c, 1.0).grad_fn().is_none());
    // The forward itself runs with recording off.
    let y = scaled_square(&x, 1.0);
    let next = y.grad_fn().expect("node").next_functions();
    assert_eq!(next.len(), 1);
    assert_eq!(
        next[0].as_ref().expect("edge").node.name(),
        "AccumulateGrad"
    );
    Ok(())
}

/// Returns its second input unchanged (B33 rules for undefined gradients, and aliasing).
#[differentiable]
fn pass_second(x: &Tensor, y: &Tensor) -> Tensor {
    let _ = x;
    y.clone()
}

#[backward(pass_second)]
fn pass_second_backward(grad: &Tensor) -> (Option<Tensor>, Tensor) {
    (None, grad.clone())
}

#[test]
fn undefined_gradients_stay_undefined_and_inputs_returned_as_is_are_views() -> Result<()> {
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = Tensor::scalar(5.0f64).requires_grad_(true)?;
    let out = pass_second(&x, &y);
    assert!(
        !out.is_same(&y) && out.is_view(),
        "an input returned as is becomes a view of itself"
    );
    assert!(
        y.is_leaf() && y.grad_fn().is_none(),
        "the input itself is untouched"
    );
    assert_eq!(out.grad_fn().expect("node").name(), "PassSecondBackward0");
    y.add_(&Tensor::scalar(1.0f64)).unwrap_err(); // still a leaf that requires grad
    out.backward()?;
    assert!(x.grad().is_none(), "a None gradient stays undefined (B33)");
    assert_eq!(grad_of(&y), [1.0]);
    Ok(())
}

#[differentiable]
fn two_outputs(x: &Tensor) -> (Tensor, Tensor) {
    (x * 1.0, x * 2.0)
}

#[backward(two_outputs)]
fn two_outputs_backward(grad_0: &Tensor, grad_1: &Tensor) -> Tensor {
    // B34: the unused output's gradient is materialised as zeros.
    assert_eq!(grad_1.to_vec::<f64>().expect("f64"), [0.0]);
    grad_0 + grad_1 * 2.0
}

#[differentiable(materialize_grads = false)]
fn two_outputs_raw(x: &Tensor) -> (Tensor, Tensor) {
    (x * 1.0, x * 2.0)
}

#[backward(two_outputs_raw)]
fn two_outputs_raw_backward(grad_0: Option<&Tensor>, grad_1: Option<&Tensor>) -> Option<Tensor> {
    assert!(grad_0.is_some() && grad_1.is_none());
    grad_0.cloned()
}

#[test]
fn materialize_grads() -> Result<()> {
    let x = Tensor::from_vec(vec![3.0f64], &[1])?.requires_grad_(true)?;
    two_outputs(&x).0.sum()?.backward()?;
    assert_eq!(grad_of(&x), [1.0]);
    x.set_grad(None)?;
    two_outputs_raw(&x).0.sum()?.backward()?;
    assert_eq!(grad_of(&x), [1.0]);
    Ok(())
}

#[differentiable(non_differentiable(result_0))]
fn sort_of_mixed(x: &Tensor) -> (Tensor, Tensor) {
    (x * 0.0, x * 1.0)
}

#[backward(sort_of_mixed)]
fn sort_of_mixed_backward(grad_0: &Tensor, grad_1: &Tensor) -> Tensor {
    // test_mark_non_differentiable_mixed: the non-differentiable output's slot is zeros.
    assert_eq!(grad_0.to_vec::<f64>().expect("f64"), [0.0, 0.0]);
    assert_eq!(grad_1.to_vec::<f64>().expect("f64"), [1.0, 1.0]);
    grad_1.clone()
}

#[test]
fn non_differentiable_outputs() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (a, b) = sort_of_mixed(&x);
    assert!(!a.requires_grad() && a.grad_fn().is_none());
    assert!(b.requires_grad());
    a.add(&b)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), [1.0, 1.0]);
    Ok(())
}

#[differentiable(once_differentiable)]
fn cube_once(x: &Tensor) -> Tensor {
    x * x * x
}

#[backward(cube_once)]
fn cube_once_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    assert!(
        !autograd::is_grad_enabled(),
        "once_differentiable runs under no_grad"
    );
    grad * x * x * 3.0
}

#[test]
fn once_differentiable() -> Result<()> {
    let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    let create_graph = GradOptions::new().create_graph(true);

    // The incoming gradient does not require grad: the result simply does not.
    let g = autograd::grad(
        &[cube_once(&x)],
        std::slice::from_ref(&x),
        create_graph.clone(),
    )?[0]
        .clone()
        .expect("g");
    assert_eq!(g.item::<f64>()?, 12.0);
    assert!(!g.requires_grad());
    assert!(matches!(
        g.backward(),
        Err(Error::DoesNotRequireGrad { index: 0 })
    ));

    // It does (y * y under create_graph): the result comes out of an `Error` node.
    let y = cube_once(&x);
    let g = autograd::grad(&[y.mul(&y)?], std::slice::from_ref(&x), create_graph)?[0]
        .clone()
        .expect("g");
    assert_eq!(g.item::<f64>()?, 2.0 * 8.0 * 12.0);
    assert_eq!(g.grad_fn().expect("node").name(), "Error");
    let err = g.backward().unwrap_err();
    assert!(matches!(err, Error::OnceDifferentiable));
    assert_eq!(
        err.to_string(),
        "trying to differentiate twice a function that was marked with @once_differentiable"
    );
    assert!(gradgradcheck(|i| Ok(cube_once(&i[0])), std::slice::from_ref(&x)).is_err());
    gradcheck(|i| Ok(cube_once(&i[0])), &[x])
}

#[differentiable(dirty(x))]
fn add_one_(x: &Tensor) -> Result<Tensor> {
    x.add_(&Tensor::scalar(1.0f64))?;
    Ok(x.clone())
}

#[backward(add_one_)]
fn add_one_backward(grad: &Tensor, x: &Tensor) -> Tensor {
    // A dirty input named by the backward holds its value after the forward.
    assert_eq!(x.to_vec::<f64>().expect("f64"), [3.0]);
    grad.clone()
}

#[differentiable(dirty(x))]
fn forgets_to_return(x: &Tensor) -> Result<Tensor> {
    x.add_(&Tensor::scalar(1.0f64))?;
    x.mul_scalar(1.0)
}

#[backward(forgets_to_return)]
fn forgets_to_return_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

#[test]
fn dirty_inputs() -> Result<()> {
    // B35: the input is returned itself, its version bumped, its grad_fn the custom node.
    let leaf = Tensor::from_vec(vec![2.0f64], &[1])?.requires_grad_(true)?;
    let x = leaf.mul_scalar(1.0)?;
    let version = x.version();
    let q = add_one_(&x)?;
    assert!(q.is_same(&x));
    // PyTorch: one bump for the `add_`, one more from `mark_dirty` (x._version 0 -> 2).
    assert_eq!(x.version(), version + 2);
    assert_eq!(x.grad_fn().expect("node").name(), "AddOneBackward0");
    q.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&leaf), [3.0]);

    // A dirty leaf that requires grad.
    let err = add_one_(&leaf).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a leaf Variable that requires grad has been used in an in-place operation."
    );

    // A dirty input that does not come back.
    let x = leaf.mul_scalar(1.0)?;
    let err = forgets_to_return(&x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function."
    );

    // Without recording, nothing is checked.
    let plain = Tensor::from_vec(vec![2.0f64], &[1])?;
    assert!(add_one_(&plain)?.grad_fn().is_none());
    Ok(())
}

/// Counts its drops, to observe when a node (which owns a clone) is freed.
#[derive(Clone)]
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[differentiable]
fn tracked_exp(x: &Tensor, counter: DropCounter) -> Result<Tensor> {
    drop(counter);
    x.exp()
}

#[backward(tracked_exp)]
fn tracked_exp_backward(grad: &Tensor, result: &Tensor, counter: &DropCounter) -> Result<Tensor> {
    let _ = counter;
    grad.mul(result)
}

#[test]
fn saving_the_result_creates_no_reference_cycle() -> Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = tracked_exp(&x, DropCounter(drops.clone()))?;
    let after_forward = drops.load(Ordering::SeqCst); // the forward's own copy
    drop(y); // the only owner of the node: it must go, with its saved attribute
    assert_eq!(drops.load(Ordering::SeqCst), after_forward + 1);
    Ok(())
}

#[test]
fn custom_functions_run_on_many_threads() -> Result<()> {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || -> Result<f64> {
                let x = Tensor::scalar(i as f64).requires_grad_(true)?;
                scaled_square(&x, 0.5).backward()?;
                x.grad().expect("x.grad").item::<f64>()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().expect("thread")?, i as f64);
    }
    Ok(())
}

/// What `observed_exp_backward` saw of its saved `result`.
struct SeenResult {
    grad_fn: Option<NodeRef>,
    requires_grad: bool,
    is_leaf: bool,
    output_nr: usize,
    grad_mode: bool,
}

static SEEN_RESULTS: Mutex<Vec<SeenResult>> = Mutex::new(Vec::new());

/// `exp` saving its result, whose backward records what the unpacked result looks like.
#[differentiable]
fn observed_exp(x: &Tensor) -> Result<Tensor> {
    x.exp()
}

#[backward(observed_exp)]
fn observed_exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    SEEN_RESULTS.lock().unwrap().push(SeenResult {
        grad_fn: result.grad_fn(),
        requires_grad: result.requires_grad(),
        is_leaf: result.is_leaf(),
        output_nr: result.output_nr(),
        grad_mode: is_grad_enabled(),
    });
    grad.mul(result)
}

/// Runs one backward of `observed_exp` and returns what its backward saw of `result`.
fn seen_result(y: &Tensor, options: BackwardOptions) -> Result<SeenResult> {
    SEEN_RESULTS.lock().unwrap().clear();
    y.sum()?.backward_with(options)?;
    let mut seen = SEEN_RESULTS.lock().unwrap();
    assert_eq!(seen.len(), 1);
    Ok(seen.pop().unwrap())
}

#[test]
fn a_saved_output_unpacks_with_its_node_as_grad_fn() -> Result<()> {
    // PyTorch 2.15, a Function saving its output: in backward, `y, = ctx.saved_tensors` has
    // `y.grad_fn is ctx`, `requires_grad` True, `is_leaf` False, `output_nr` 0, with grad mode
    // off (and on under create_graph); also under saved-tensor hooks whose unpack returns a
    // tensor with history of its own.
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let expected = [1.0f64.exp(), 2.0f64.exp()];
    for create_graph in [false, true] {
        x.set_grad(None)?;
        let y = observed_exp(&x)?;
        let node = y.grad_fn().unwrap();
        let seen = seen_result(&y, BackwardOptions::new().create_graph(create_graph))?;
        let grad_fn = seen.grad_fn.expect("the saved result has a grad_fn");
        assert!(grad_fn.ptr_eq(&node), "{}", grad_fn.name());
        assert_eq!(grad_fn.name(), "ObservedExpBackward0");
        assert!(seen.requires_grad && !seen.is_leaf);
        assert_eq!((seen.output_nr, seen.grad_mode), (0, create_graph));
        assert_eq!(grad_of(&x), expected);
    }

    let w = Tensor::from_vec(vec![3.0f64, 4.0], &[2])?.requires_grad_(true)?;
    let other = w.mul_scalar(2.0)?;
    let y = {
        let _hooks = saved_tensors_hooks(|t: &Tensor| t.clone(), move |_: &Tensor| other.clone());
        observed_exp(&x)?
    };
    let node = y.grad_fn().unwrap();
    let seen = seen_result(&y, BackwardOptions::new())?;
    assert!(seen.grad_fn.expect("grad_fn").ptr_eq(&node));
    assert!(seen.requires_grad && !seen.is_leaf && !seen.grad_mode);
    Ok(())
}

#[test]
fn unpacking_the_result_creates_no_reference_cycle() -> Result<()> {
    let drops = Arc::new(AtomicUsize::new(0));
    let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    let y = tracked_exp(&x, DropCounter(drops.clone()))?;
    let after_forward = drops.load(Ordering::SeqCst);
    // The backward unpacks `result` (with the node as its grad_fn) and keeps the graph.
    y.backward_with(BackwardOptions::new().retain_graph(true))?;
    assert_eq!(x.grad().unwrap().item::<f64>()?, 1.0f64.exp());
    assert_eq!(drops.load(Ordering::SeqCst), after_forward);
    drop(y);
    assert_eq!(drops.load(Ordering::SeqCst), after_forward + 1);
    Ok(())
}

/// What `double_duplicate_backward` received: both incoming gradients, and its saved `result_0`'s
/// output number.
type ReceivedGrads = (Vec<f64>, Vec<f64>, usize);

static DUPLICATE_GRADS: Mutex<Vec<ReceivedGrads>> = Mutex::new(Vec::new());

/// PyTorch's `test_return_duplicate`: `output = x * 2; return output, output`.
#[differentiable]
fn double_duplicate(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let output = x.mul_scalar(2.0)?;
    Ok((output.clone(), output))
}

#[backward(double_duplicate)]
fn double_duplicate_backward(
    grad_0: &Tensor,
    grad_1: &Tensor,
    result_0: &Tensor,
) -> Result<Tensor> {
    DUPLICATE_GRADS.lock().unwrap().push((
        grad_0.to_vec::<f64>()?,
        grad_1.to_vec::<f64>()?,
        result_0.output_nr(),
    ));
    grad_0.mul_scalar(2.0)?.add(&grad_1.mul_scalar(2.0)?)
}

/// Returns its input twice (each occurrence becomes a view of its own, as in PyTorch).
#[differentiable]
fn input_twice(x: &Tensor) -> (Tensor, Tensor) {
    (x.clone(), x.clone())
}

#[backward(input_twice)]
fn input_twice_backward(grad_0: &Tensor, grad_1: &Tensor) -> Result<Tensor> {
    assert_eq!(
        (grad_0.to_vec::<f64>()?, grad_1.to_vec::<f64>()?),
        (vec![3.0; 2], vec![1.0; 2])
    );
    grad_0.add(grad_1)
}

#[test]
fn a_tensor_returned_twice_is_one_tensor_and_two_outputs() -> Result<()> {
    // test_return_duplicate: `a is b`, and gradcheck of `a + b`.
    let x = randn(&[5, 5], 11)?;
    gradcheck(
        |t| {
            let (a, b) = double_duplicate(&t[0])?;
            assert!(a.is_same(&b));
            a.add(&b)
        },
        std::slice::from_ref(&x),
    )?;
    // PyTorch 2.15: both handles are output 1 of the node (the later position wins); every use
    // sends its gradient to that output, and the other is materialised as zeros; a saved
    // output is output 1 too.
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (a, b) = double_duplicate(&x)?;
    assert!(a.is_same(&b));
    assert_eq!(a.grad_fn().unwrap().name(), "DoubleDuplicateBackward0");
    assert_eq!((a.output_nr(), b.output_nr()), (1, 1));
    DUPLICATE_GRADS.lock().unwrap().clear();
    a.mul_scalar(3.0)?.add(&b)?.sum()?.backward()?;
    assert_eq!(
        DUPLICATE_GRADS.lock().unwrap().as_slice(),
        [(vec![0.0; 2], vec![4.0; 2], 1)]
    );
    assert_eq!(grad_of(&x), [8.0, 8.0]);

    // An input returned twice: two views, outputs 0 and 1, neither the input itself.
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (a, b) = input_twice(&x);
    assert!(!a.is_same(&b) && !a.is_same(&x) && !b.is_same(&x));
    assert_eq!((a.output_nr(), b.output_nr()), (0, 1));
    a.mul_scalar(3.0)?.add(&b)?.sum()?.backward()?;
    assert_eq!(grad_of(&x), [4.0, 4.0]);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Outputs that alias an input: views made in a custom function (PyTorch's IN_CUSTOM_FUNCTION).
// Each expectation is PyTorch 2.15's, from `torch.autograd.Function`s of the same shape
// (`Ident.forward(ctx, x): return x`, `ViewOf.forward(ctx, x): return x.view(-1)`, ...).

/// PyTorch's suffix for a view made in a custom function.
const IN_CUSTOM_FUNCTION: &str = " This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.";

#[differentiable]
fn ident(x: &Tensor) -> Tensor {
    x.clone()
}

#[backward(ident)]
fn ident_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

#[differentiable]
fn flat_view(x: &Tensor) -> Result<Tensor> {
    x.reshape(&[x.numel()])
}

#[backward(flat_view)]
fn flat_view_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.reshape(x.shape())
}

#[test]
fn an_input_returned_as_is_is_a_view_refused_in_place() -> Result<()> {
    // a = tensor([1., 2.], requires_grad=True); out = Ident.apply(a): a view of `a` with the
    // custom node as grad_fn; `out.mul_(3)` raises (it would write into the leaf and leave the
    // gradient of later uses computed through changed values).
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let out = ident(&a);
    assert!(out.is_view() && !out.is_same(&a) && out.shares_storage(&a));
    assert_eq!(out.grad_fn().expect("node").name(), "IdentBackward0");
    let err = out.mul_(&Tensor::scalar(3.0f64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("Output 0 of Ident is a view and is being modified inplace.{IN_CUSTOM_FUNCTION}")
    );
    assert_eq!(a.to_vec::<f64>()?, [1.0, 2.0], "the leaf is unchanged");
    out.mul_scalar(3.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&a), [3.0, 3.0]);

    // b = a * 1; out = Ident.apply(b); b.mul_(3): using `out` afterwards raises.
    let b = a.mul_scalar(1.0)?;
    let out = ident(&b);
    b.mul_(&Tensor::scalar(3.0f64))?;
    let err = out.sum().and_then(|s| s.backward()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Output 0 of Ident is a view and its base or another view of its base has been modified inplace.{IN_CUSTOM_FUNCTION}"
        )
    );
    Ok(())
}

#[test]
fn a_view_made_in_the_forward_is_refused_in_place() -> Result<()> {
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let b = a.mul_scalar(1.0)?;
    let out = flat_view(&b)?;
    assert!(out.is_view() && out.shares_storage(&b));
    assert_eq!(out.grad_fn().expect("node").name(), "FlatViewBackward0");
    let err = out.add_(&Tensor::scalar(1.0f64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Output 0 of FlatView is a view and is being modified inplace.{IN_CUSTOM_FUNCTION}"
        )
    );
    out.mul_scalar(2.0)?.sum()?.backward()?;
    assert_eq!(grad_of(&a), [2.0; 4]);
    Ok(())
}

#[test]
fn without_a_node_an_input_returned_as_is_does_not_carry_its_gradient() -> Result<()> {
    // with torch.no_grad(): o = Ident.apply(a)  ->  o.requires_grad False, not `a`, not a view;
    // o.sum().backward() raises "element 0 of tensors does not require grad ...".
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let o = {
        let _g = autograd::no_grad();
        ident(&a)
    };
    assert!(!o.requires_grad() && o.grad_fn().is_none() && !o.is_same(&a) && !o.is_view());
    let err = o.sum()?.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    assert!(a.grad().is_none());

    // A constant input: a view of it (made with recording off) that does not require grad; an
    // in-place op recorded on it raises.
    let c = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
    let o = ident(&c);
    assert!(!o.requires_grad() && o.is_view() && !o.is_same(&c));
    let w = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let err = o.mul_(&w).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled.{IN_CUSTOM_FUNCTION}"
        )
    );
    Ok(())
}

#[test]
fn an_input_returned_twice_is_two_views_of_a_multi_output_node() -> Result<()> {
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (p, _q) = input_twice(&a);
    let err = p.mul_(&Tensor::scalar(2.0f64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Output 0 of InputTwice is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// `save(..)` residuals are saved tensors (PyTorch's `save_for_backward` of an intermediate).

/// Doubles `x`, keeping `x.reshape(..)` (a view of the input) as a residual.
#[differentiable(save(flat))]
fn double_keeping_flat(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((x.mul_scalar(2.0)?, x.reshape(&[x.numel()])?))
}

#[backward(double_keeping_flat)]
fn double_keeping_flat_backward(grad: &Tensor, flat: &Tensor) -> Result<Tensor> {
    grad.mul(&flat.reshape(grad.shape())?)
}

#[test]
fn a_residual_is_version_checked_and_freed_after_backward() -> Result<()> {
    // Residual.forward: r = x.reshape(2); ctx.save_for_backward(r); return x * 2. With
    // b = a * 1 changed in place before backward, PyTorch raises (on the residual, a view made
    // with recording off whose base changed): "A view was created in no_grad mode and its base
    // ..."; a second backward raises "Trying to backward through the graph a second time".
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let b = a.mul_scalar(1.0)?;
    let y = double_keeping_flat(&b)?;
    b.add_(&Tensor::scalar(1.0f64))?;
    let err = y.sum()?.backward().unwrap_err();
    assert_eq!(
        err.to_string(),
        "A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
    );
    assert!(a.grad().is_none());

    let y = double_keeping_flat(&a.mul_scalar(1.0)?)?;
    y.sum()?.backward()?;
    assert_eq!(grad_of(&a), [1.0, 2.0]);
    let err = y.sum()?.backward().unwrap_err();
    assert!(matches!(err, Error::BackwardTwice), "{err}");
    let names = {
        let mut names = Vec::new();
        y.grad_fn()
            .expect("node")
            .visit_saved_tensors(&mut |name, _| names.push(name.to_string()));
        names
    };
    assert_eq!(names, ["flat"]);
    Ok(())
}

#[test]
fn saved_tensor_hooks_see_residuals_and_outputs_with_their_grad_fn() -> Result<()> {
    // PyTorch: a pack hook sees each tensor `save_for_backward` keeps; a saved output with its
    // grad_fn (the custom node) already set, requiring grad.
    // What the pack hook saw: each tensor's grad_fn name and requires_grad.
    type Seen = Vec<(Option<String>, bool)>;
    let packed: Arc<Mutex<Seen>> = Arc::default();
    let seen = packed.clone();
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let (y, e) = {
        let _hooks = saved_tensors_hooks(
            move |t: &Tensor| {
                let name = t.grad_fn().map(|f| f.name().to_string());
                seen.lock().unwrap().push((name, t.requires_grad()));
                t.mul_scalar(1.0).expect("mul")
            },
            |t: &Tensor| t.clone(),
        );
        (double_keeping_flat(&a)?, my_exp(&a)?)
    };
    assert_eq!(
        packed.lock().unwrap().as_slice(),
        [
            (None, true), // the residual: a view of `a`, made with recording off
            (Some("MyExpBackward0".to_string()), true),
        ]
    );
    y.sum()?.add(&e.sum()?)?.backward()?;
    let expected: Vec<f64> = [1.0f64, 2.0].iter().map(|v| v + v.exp()).collect();
    assert_eq!(grad_of(&a), expected);
    Ok(())
}

#[differentiable(dirty(x))]
fn add_one_and_double(x: &Tensor) -> Result<(Tensor, Tensor)> {
    x.add_(&Tensor::scalar(1.0f64))?;
    Ok((x.clone(), x.mul_scalar(2.0)?))
}

#[backward(add_one_and_double)]
fn add_one_and_double_backward(grad_0: &Tensor, grad_1: &Tensor) -> Result<Tensor> {
    grad_0.add(&grad_1.mul_scalar(2.0)?)
}

#[test]
fn a_dirty_view_with_two_outputs_is_refused_in_pytorchs_words() -> Result<()> {
    // DirtyTwo.forward: x.add_(1); ctx.mark_dirty(x); return x, x * 2 — given v = (a * 1)[0:1].
    let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    let v = a.mul_scalar(1.0)?.narrow(0, 0, 1)?;
    let err = add_one_and_double(&v).unwrap_err();
    assert_eq!(
        err.to_string(),
        "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change."
    );
    // Not a view: both outputs, the first the input itself.
    let b = a.mul_scalar(1.0)?;
    let (p, q) = add_one_and_double(&b)?;
    assert!(p.is_same(&b));
    p.add(&q)?.sum()?.backward()?;
    assert_eq!(grad_of(&a), [3.0, 3.0]);
    Ok(())
}

/// `x[0]`: a view made in the function.
#[differentiable]
fn first_row(x: &Tensor) -> Result<Tensor> {
    x.select(0, 0)
}

#[backward(first_row)]
fn first_row_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    let rest = x.zeros()?.narrow(0, 1, x.shape()[0] - 1)?;
    Tensor::cat(&[grad.reshape(&[1, grad.numel()])?, rest], 0)
}

/// Two outputs, with an error type of its own that does not convert from `autograd::Error`.
#[differentiable]
fn doubled_unrelated(x: &Tensor) -> std::result::Result<Tensor, Unrelated> {
    x.mul_scalar(2.0).map_err(|_| Unrelated)
}

#[backward(doubled_unrelated)]
fn doubled_unrelated_backward(grad: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(2.0)
}

#[derive(Debug)]
struct Unrelated;

#[test]
fn a_call_on_a_view_whose_base_changed_fails_at_once() -> Result<()> {
    // with no_grad: v = First.apply(x); x.add_(c)  — then, with grad mode on, a custom function
    // of `v` raises PyTorch's view error when it collects its input's edge, as a built-in op
    // does.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?.requires_grad_(true)?;
    let v = {
        let _g = autograd::no_grad();
        let v = first_row(&x)?;
        x.add_(&Tensor::scalar(1.0f64))?;
        v
    };
    let expected = format!(
        "A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled.{IN_CUSTOM_FUNCTION}"
    );
    assert_eq!(v.mul_scalar(1.0).unwrap_err().to_string(), expected);
    assert_eq!(my_exp(&v).unwrap_err().to_string(), expected);
    // A forward whose error type does not come from ours cannot return it: the call succeeds
    // and the backward through it fails with the same error.
    let y = doubled_unrelated(&v).expect("recorded");
    assert_eq!(y.sum()?.backward().unwrap_err().to_string(), expected);
    Ok(())
}
