//! A `#[differentiable(derive)]` body of element-wise ops runs as one generated kernel each way
//! (`src/fusion/`), on the CPU as on a CUDA device, so what a GPU runs is checked here on any
//! machine: the values and gradients equal the body recorded op by op, for every pattern of
//! inputs that need a gradient; on the CPU the bits equal the op-by-op derived path's; the node
//! keeps what the op-by-op derived node keeps (version checks included); and whatever the
//! kernels do not cover (broadcasting, a reduced value used again, double backward) falls back
//! to the op-by-op path with the same results.
//!
//! The switches (`__private::fusion::set_enabled`, `run_on_host`) and the kernel count are
//! process-wide, so these tests live in their own binary and take turns ([`fused_runs`],
//! [`op_by_op`]).

use autograd::__private::fusion;
use autograd::{
    DType, Error, GradOptions, Result, Tensor, differentiable, gradcheck, gradgradcheck,
};

// ----- derived functions and their op-by-op twins -----------------------------------------------

/// GELU, tanh approximation.
#[differentiable(derive)]
fn gelu(x: &Tensor) -> Result<Tensor> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

fn gelu_recorded(x: &Tensor) -> Result<Tensor> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let inner = (x + &(x.pow(3.0)? * 0.044715)) * c;
    let t = inner.tanh()?;
    Ok(x * 0.5 * (t + 1.0))
}

/// Every element-wise op a fused program holds, on two inputs, each used several times.
#[differentiable(derive)]
fn every_op(x: &Tensor, y: &Tensor, s: f64) -> Result<Tensor> {
    let a = (x * y).sin()?;
    let b = (x / &(y.abs()? + 1.0)).cos()?;
    let c = (x - y).exp()?.sqrt()?;
    let d = (&a + &b).sigmoid()? - (y * s).tanh()?;
    let e = (x.pow(2.0)? + 0.5).log()? / 2.0;
    let f = (1.0 - &d).relu()? * (3.0 / &(y.pow(2.0)? + 1.0));
    let g = -(&c - 0.25) + (x.abs()?.pow(1.5)? + 1.0).pow(-0.5)?;
    Ok((f + e) * g + &a)
}

fn every_op_recorded(x: &Tensor, y: &Tensor, s: f64) -> Result<Tensor> {
    let a = (x * y).sin()?;
    let b = (x / &(y.abs()? + 1.0)).cos()?;
    let c = (x - y).exp()?.sqrt()?;
    let d = (&a + &b).sigmoid()? - (y * s).tanh()?;
    let e = (x.pow(2.0)? + 0.5).log()? / 2.0;
    let f = (1.0 - &d).relu()? * (3.0 / &(y.pow(2.0)? + 1.0));
    let g = -(&c - 0.25) + (x.abs()?.pow(1.5)? + 1.0).pow(-0.5)?;
    Ok((f + e) * g + &a)
}

/// Two results, one computed from the other.
#[differentiable(derive)]
fn two_results(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let h = (x * w).tanh()?;
    let sq = &h * &h;
    Ok((h, sq))
}

fn two_results_recorded(x: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let h = (x * w).tanh()?;
    let sq = &h * &h;
    Ok((h, sq))
}

/// Mean squared error: element-wise, then one mean (a fused loss).
#[differentiable(derive)]
fn mse(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    let d = pred - target;
    (&d * &d).mean()
}

fn mse_recorded(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    let d = pred - target;
    (&d * &d).mean()
}

/// Binary cross-entropy on logits, summed: `log(1 + e^z) - z t`.
#[differentiable(derive)]
fn bce_logits(z: &Tensor, t: &Tensor) -> Result<Tensor> {
    let softplus = (z.exp()? + 1.0).log()?;
    (softplus - z * t).sum()
}

fn bce_logits_recorded(z: &Tensor, t: &Tensor) -> Result<Tensor> {
    let softplus = (z.exp()? + 1.0).log()?;
    (softplus - z * t).sum()
}

/// An element-wise result and its total: one value both returned and reduced.
#[differentiable(derive)]
fn with_total(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let y = x.tanh()?;
    let total = y.sum()?;
    Ok((y, total))
}

fn with_total_recorded(x: &Tensor) -> Result<(Tensor, Tensor)> {
    let y = x.tanh()?;
    let total = y.sum()?;
    Ok((y, total))
}

/// A reduced value used again: not fused (the kernels work at one shape).
#[differentiable(derive)]
fn half_total(x: &Tensor) -> Result<Tensor> {
    x.exp()?.sum()?.mul_scalar(0.5)
}

// ----- helpers ------------------------------------------------------------------------------------

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The fused kernels `f` ran, with the switch on (one closure at a time: the count is the
/// process's).
fn fused_runs<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let _guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fusion::run_on_host(true);
    fusion::set_enabled(true);
    let before = fusion::runs();
    let r = f();
    (r, fusion::runs() - before)
}

/// `f` with the fused path off: every derived body op by op.
fn op_by_op<R>(f: impl FnOnce() -> R) -> R {
    let _guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    fusion::set_enabled(false);
    let before = fusion::runs();
    let r = f();
    assert_eq!(fusion::runs(), before, "nothing fused");
    fusion::set_enabled(true);
    r
}

/// The bits of a tensor, in its own dtype.
fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()
            .expect("f32")
            .iter()
            .map(|v| u64::from(v.to_bits()))
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()
            .expect("f64")
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        other => panic!("these tests build f32 and f64 tensors only, not {other}"),
    }
}

fn leaf(values: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape)
        .and_then(|t| t.to_dtype(dtype))
        .and_then(|t| t.requires_grad_(true))
        .expect("leaf")
}

fn assert_close(a: &Tensor, b: &Tensor, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    let f64s = |t: &Tensor| t.to_dtype(DType::F64).and_then(|t| t.to_vec::<f64>());
    let (a, b) = (f64s(a).expect("a"), f64s(b).expect("b"));
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())),
            "{x} vs {y} (tolerance {tol})"
        );
    }
}

fn grads(outputs: &[Tensor], inputs: &[Tensor]) -> Vec<Option<Tensor>> {
    autograd::grad(outputs, inputs, GradOptions::new().allow_unused(true)).expect("grad")
}

const XS: [f64; 6] = [-1.7, -0.4, 0.05, 0.3, 1.1, 2.6];
const YS: [f64; 6] = [0.9, -1.3, 0.45, 2.2, -0.6, 0.2];

// ----- tests --------------------------------------------------------------------------------------

#[test]
fn one_kernel_each_way_gives_the_op_by_op_values_and_gradients() {
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        let x = leaf(&XS, &[2, 3], dtype);
        let ((y, g), runs) = fused_runs(|| {
            let y = gelu(&x).expect("gelu");
            let g = grads(&[y.sum().expect("sum")], &[x.clone()]);
            (y, g)
        });
        // The forward, the backward: one kernel each (the sum's backward is not fused).
        assert_eq!(runs, 2, "{dtype:?}");
        assert_eq!(
            y.grad_fn().expect("node").name(),
            "GeluBackward0",
            "the same node as the op-by-op derived path"
        );
        let yr = gelu_recorded(&x).expect("recorded");
        let gr = grads(&[yr.sum().expect("sum")], &[x.clone()]);
        assert_close(&y, &yr, tol);
        assert_close(
            g[0].as_ref().expect("grad"),
            gr[0].as_ref().expect("grad"),
            tol,
        );
    }
}

#[test]
fn every_op_matches_recorded_for_each_pattern_of_inputs_needing_a_gradient() {
    for (needs_x, needs_y) in [(true, true), (true, false), (false, true)] {
        let x = Tensor::from_vec(XS.to_vec(), &[6])
            .and_then(|t| t.requires_grad_(needs_x))
            .expect("x");
        let y = Tensor::from_vec(YS.to_vec(), &[6])
            .and_then(|t| t.requires_grad_(needs_y))
            .expect("y");
        let inputs: Vec<Tensor> = [&x, &y]
            .into_iter()
            .filter(|t| t.requires_grad())
            .cloned()
            .collect();
        let ((out, g), runs) = fused_runs(|| {
            let out = every_op(&x, &y, 0.7).expect("every_op");
            let g = grads(&[out.sum().expect("sum")], &inputs);
            (out, g)
        });
        assert_eq!(runs, 2, "needs {needs_x} {needs_y}");
        let rec = every_op_recorded(&x, &y, 0.7).expect("recorded");
        let gr = grads(&[rec.sum().expect("sum")], &inputs);
        assert_close(&out, &rec, 1e-12);
        for (i, (a, b)) in g.iter().zip(&gr).enumerate() {
            match (a, b) {
                (Some(a), Some(b)) => assert_close(a, b, 1e-12),
                (None, None) => {}
                _ => panic!("input {i}: fused {a:?}, recorded {b:?}"),
            }
        }
        assert!(g.iter().all(Option::is_some));
    }
}

#[test]
fn several_results_take_their_gradients_from_one_kernel() {
    let x = leaf(&XS, &[3, 2], DType::F64);
    let w = leaf(&YS, &[3, 2], DType::F64);
    let inputs = [x.clone(), w.clone()];
    let (((h, sq), g), runs) = fused_runs(|| {
        let (h, sq) = two_results(&x, &w).expect("two_results");
        let loss = h.sum().expect("sum") + sq.mul_scalar(2.0).expect("mul").sum().expect("sum");
        let g = grads(&[loss], &inputs);
        ((h, sq), g)
    });
    assert_eq!(runs, 2);
    let (hr, sqr) = two_results_recorded(&x, &w).expect("recorded");
    let loss = hr.sum().expect("sum") + sqr.mul_scalar(2.0).expect("mul").sum().expect("sum");
    let gr = grads(&[loss], &inputs);
    assert_close(&h, &hr, 1e-12);
    assert_close(&sq, &sqr, 1e-12);
    for (a, b) in g.iter().zip(&gr) {
        assert_close(
            a.as_ref().expect("fused"),
            b.as_ref().expect("recorded"),
            1e-12,
        );
    }
    // Only the second result has a gradient: the kernel takes one gradient and no other.
    let ((g1, g2), runs) = fused_runs(|| {
        let (_, sq) = two_results(&x, &w).expect("two_results");
        let g = grads(&[sq.sum().expect("sum")], &inputs);
        let (_, sqr) = two_results_recorded(&x, &w).expect("recorded");
        (g, grads(&[sqr.sum().expect("sum")], &inputs))
    });
    assert_eq!(runs, 2);
    for (a, b) in g1.iter().zip(&g2) {
        assert_close(
            a.as_ref().expect("fused"),
            b.as_ref().expect("recorded"),
            1e-12,
        );
    }
}

#[test]
fn gradcheck_passes_and_double_backward_falls_back_to_the_rules() {
    let x = leaf(&XS, &[6], DType::F64);
    let y = leaf(&YS, &[6], DType::F64);
    let f = |t: &[Tensor]| every_op(&t[0], &t[1], 0.7);
    let (checked, runs) = fused_runs(|| gradcheck(f, &[x.clone(), y.clone()]));
    checked.expect("gradcheck");
    assert!(runs > 0, "gradcheck ran the fused kernels");
    let (checked, _) = fused_runs(|| gradgradcheck(f, &[x.clone(), y.clone()]));
    checked.expect("gradgradcheck");
    // Second derivatives: the backward recorded with `create_graph` runs the rules, so the
    // gradient of the gradient is there and equals the op-by-op one.
    let second = |fun: &dyn Fn(&Tensor) -> Result<Tensor>| {
        let out = fun(&x).expect("f").sum().expect("sum");
        let g = autograd::grad(&[out], &[x.clone()], GradOptions::new().create_graph(true))
            .expect("grad")[0]
            .clone()
            .expect("g");
        grads(&[g.sum().expect("sum")], &[x.clone()])[0]
            .clone()
            .expect("second")
    };
    let (gg, runs) = fused_runs(|| second(&|x| gelu(x)));
    assert_eq!(
        runs, 1,
        "the forward only: a recorded backward takes the rules"
    );
    assert_close(&gg, &second(&|x| gelu_recorded(x)), 1e-12);
}

#[test]
fn what_the_kernels_do_not_cover_runs_op_by_op() {
    // Broadcast operands.
    let x = leaf(&XS, &[2, 3], DType::F64);
    let y = leaf(&YS[..3], &[3], DType::F64);
    let inputs = [x.clone(), y.clone()];
    let ((out, g), runs) = fused_runs(|| {
        let out = every_op(&x, &y, 0.7).expect("every_op");
        let g = grads(&[out.sum().expect("sum")], &inputs);
        (out, g)
    });
    assert_eq!(runs, 0, "different shapes are not fused");
    let rec = every_op_recorded(&x, &y, 0.7).expect("recorded");
    assert_close(&out, &rec, 1e-12);
    let gr = grads(&[rec.sum().expect("sum")], &inputs);
    assert_close(g[1].as_ref().expect("g"), gr[1].as_ref().expect("g"), 1e-12);
    // Inputs of two layouts (one transposed, one not) are read in C order, the transposed
    // one through a copy.
    let (xt, yc) = (x.t().expect("t"), leaf(&YS, &[3, 2], DType::F64));
    let (out, runs) = fused_runs(|| every_op(&xt, &yc, 0.7).expect("every_op"));
    assert_eq!(runs, 1);
    assert_eq!(out.strides(), &[2, 1]);
    assert_close(
        &out,
        &every_op_recorded(&xt, &yc, 0.7).expect("recorded"),
        1e-12,
    );
    // A view not from its buffer's start, transposed: copied, in its own (PyTorch's) order.
    let base = leaf(&[XS, YS].concat(), &[4, 3], DType::F64);
    let view = base.narrow(0, 1, 2).and_then(|v| v.t()).expect("view");
    let (out, runs) = fused_runs(|| gelu(&view).expect("gelu"));
    assert_eq!(runs, 1);
    assert_eq!(out.strides(), &[1, 3]);
    assert_close(&out, &gelu_recorded(&view).expect("recorded"), 1e-12);
}

/// A transposed or permuted input that is dense (it covers its buffer without gaps) is read in
/// memory order, with no copy, when the program's inputs share its layout: the results take
/// the layout PyTorch gives them (the inputs', as `TensorIterator` lays out an element-wise
/// result), with PyTorch's values and gradients and the op-by-op path's bits.
#[test]
fn dense_permuted_inputs_run_in_memory_order_with_pytorchs_strides() {
    // PyTorch: x = tensor(XS, float64).reshape(2, 3); y = gelu_tanh(x.t()) (the body above);
    // y.backward(tensor(YS, float64).reshape(2, 3).t()).
    let x = leaf(&XS, &[2, 3], DType::F64);
    let seed = Tensor::from_vec(YS.to_vec(), &[2, 3])
        .and_then(|s| s.t())
        .expect("seed");
    let run = || {
        let y = gelu(&x.t()?)?;
        let g = autograd::grad(
            &[y.clone()],
            &[x.clone()],
            GradOptions::new().grad_outputs(vec![Some(seed.clone())]),
        )?;
        Ok::<_, Error>((y, g[0].clone().expect("g")))
    };
    let ((y, g), runs) = fused_runs(|| run().expect("fused"));
    assert_eq!(runs, 2, "one kernel each way");
    assert_eq!(y.strides(), &[1, 3], "PyTorch's (x.t() * 2 + 1).stride()");
    let torch_y = [
        -0.07589410444884379,
        0.18537092354275922,
        -0.13783883057264382,
        0.9505810461745109,
        0.025996938238622008,
        2.5883460823147573,
    ];
    let torch_g = [
        -0.10432316830734445,
        -0.2565435152532702,
        0.24293737683976838,
        1.611049993605364,
        -0.6621956775414882,
        0.20616396809449747,
    ];
    let t = |v: &[f64], shape: &[usize]| Tensor::from_vec(v.to_vec(), shape).expect("t");
    assert_close(&y, &t(&torch_y, &[3, 2]), 1e-14);
    assert_close(&g, &t(&torch_g, &[2, 3]), 1e-14);
    let (yr, gr) = op_by_op(|| run().expect("op by op"));
    assert_eq!((bits(&y), bits(&g)), (bits(&yr), bits(&gr)));
    assert_eq!(yr.strides(), y.strides());

    // A permuted 3-d view of each of two inputs, PyTorch's every_op on x.permute(2, 0, 1) and
    // y.permute(2, 0, 1) for x = arange(24) * 0.1 - 1.1, y = sin(arange(24)), both [2, 3, 4].
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        let xs: Vec<f64> = (0..24).map(|i| f64::from(i) * 0.1 - 1.1).collect();
        let ys: Vec<f64> = (0..24).map(|i| f64::from(i).sin()).collect();
        let (x, y) = (leaf(&xs, &[2, 3, 4], dtype), leaf(&ys, &[2, 3, 4], dtype));
        let weights = Tensor::from_vec((0..24).map(f64::from).collect(), &[2, 3, 4])
            .and_then(|w| w.to_dtype(dtype))
            .expect("weights");
        let run = || {
            let (xp, yp) = (x.permute(&[2, 0, 1])?, y.permute(&[2, 0, 1])?);
            let out = every_op(&xp, &yp, 0.7)?;
            let g = grads(&[out.sum()?], &[x.clone(), y.clone()]);
            Ok::<_, Error>((out, g))
        };
        let ((out, g), runs) = fused_runs(|| run().expect("fused"));
        assert_eq!(runs, 2, "{dtype:?}: one kernel each way");
        assert_eq!(out.shape(), &[4, 2, 3]);
        assert_eq!(out.strides(), &[1, 12, 4], "PyTorch's strides");
        let item = |t: Tensor| t.to_dtype(DType::F64).and_then(|t| t.item::<f64>());
        let near = |a: f64, b: f64| assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
        near(
            item(out.sum().expect("sum")).expect("sum"),
            3.2964480256227695,
        );
        let o = (out.select(0, 1))
            .and_then(|o| o.select(0, 0))
            .and_then(|o| o.select(0, 2))
            .expect("o[1, 0, 2]");
        near(item(o).expect("o"), 0.4597193653332271);
        let weighted = |g: &Option<Tensor>| {
            let g = g.as_ref().expect("g");
            assert_eq!(g.shape(), &[2, 3, 4]);
            item(g.mul(&weights).and_then(|p| p.sum()).expect("weighted")).expect("w")
        };
        near(weighted(&g[0]), -239.63324989385077);
        near(weighted(&g[1]), 155.7398209392082);
        let (outr, gr) = op_by_op(|| run().expect("op by op"));
        assert_eq!(outr.strides(), out.strides());
        assert_eq!(bits(&out), bits(&outr), "{dtype:?}");
        for (a, b) in g.iter().zip(&gr) {
            assert_eq!(bits(a.as_ref().expect("g")), bits(b.as_ref().expect("g")));
        }
    }
}

#[test]
fn a_kept_value_changed_in_place_is_reported_at_backward() {
    let x = leaf(&XS, &[6], DType::F64);
    let (r, runs) = fused_runs(|| {
        let y = gelu(&x).expect("gelu");
        // GELU's result is not kept (no rule reads it); the input is, by `pow` and `mul`.
        x.detach().add_(&Tensor::ones(&[6], DType::F64)?)?;
        y.sum()?.backward()
    });
    assert_eq!(runs, 1, "the forward ran fused; the backward never ran");
    match r {
        Err(Error::SavedTensorModified { .. }) => {}
        other => panic!("expected the saved-tensor version error, got {other:?}"),
    }
}

#[test]
fn no_input_needing_a_gradient_computes_the_result_alone() {
    let x = Tensor::from_vec(XS.to_vec(), &[6]).expect("x");
    let (y, runs) = fused_runs(|| gelu(&x).expect("gelu"));
    assert_eq!(runs, 1);
    assert!(y.grad_fn().is_none());
    assert_close(&y, &gelu_recorded(&x).expect("recorded"), 1e-12);
}

/// `cuda:0`, or `None` after printing why this test is skipped.
fn gpu(test: &str) -> Option<autograd::Device> {
    if autograd::cuda::is_available() {
        return Some(autograd::Device::Cuda(0));
    }
    let why = autograd::cuda::unavailable_reason(0).unwrap_or_default();
    println!("skipped {test}: no CUDA device ({why})");
    None
}

/// On a GPU the fused kernels (NVRTC-compiled) give the CPU's op-by-op values and gradients,
/// in f32 and f64, one launch each way, with the gradient `sum` hands back read as one
/// repeated value; a double backward takes the rules and agrees too.
#[test]
fn on_a_gpu_one_launch_each_way_gives_the_cpus_values_and_gradients() {
    let Some(dev) = gpu("on_a_gpu_one_launch_each_way_gives_the_cpus_values_and_gradients") else {
        return;
    };
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        let xc = leaf(&XS, &[2, 3], dtype);
        let yc = leaf(&YS, &[2, 3], dtype);
        let on = |t: &Tensor| {
            t.detach()
                .to(dev)
                .and_then(|t| t.requires_grad_(true))
                .expect("to the GPU")
        };
        let (xg, yg) = (on(&xc), on(&yc));
        let ((out, g), runs) = fused_runs(|| {
            let out = every_op(&xg, &yg, 0.7).expect("every_op");
            let g = grads(&[out.sum().expect("sum")], &[xg.clone(), yg.clone()]);
            (out, g)
        });
        assert_eq!(runs, 2, "{dtype:?}: one launch each way");
        let rec = every_op_recorded(&xc, &yc, 0.7).expect("recorded");
        let gr = grads(&[rec.sum().expect("sum")], &[xc.clone(), yc.clone()]);
        let host = |t: &Tensor| t.to(autograd::Device::Cpu).expect("to the host");
        assert_close(&host(&out), &rec, tol);
        for (a, b) in g.iter().zip(&gr) {
            assert_close(&host(a.as_ref().expect("g")), b.as_ref().expect("g"), tol);
        }
        // A loss ending in a mean: its gradient arrives as one value, repeated by the kernel.
        let ((loss, g), runs) = fused_runs(|| {
            let loss = mse(&xg, &yg).expect("mse");
            let g = grads(&[loss.clone()], &[xg.clone(), yg.clone()]);
            (loss, g)
        });
        assert_eq!(
            runs, 2,
            "{dtype:?}: the loss, one launch each way and the mean"
        );
        let rec = mse_recorded(&xc, &yc).expect("recorded");
        let gr = grads(&[rec.clone()], &[xc.clone(), yc.clone()]);
        assert_close(&host(&loss), &rec, tol);
        for (a, b) in g.iter().zip(&gr) {
            assert_close(&host(a.as_ref().expect("g")), b.as_ref().expect("g"), tol);
        }
        // Second derivatives through the rules, on the device.
        let second = |x: &Tensor| {
            let out = gelu(x).expect("gelu").sum().expect("sum");
            let g = autograd::grad(&[out], &[x.clone()], GradOptions::new().create_graph(true))
                .expect("grad")[0]
                .clone()
                .expect("g");
            grads(&[g.sum().expect("sum")], &[x.clone()])[0]
                .clone()
                .expect("second")
        };
        let (gg, _) = fused_runs(|| second(&xg));
        assert_close(&host(&gg), &second(&xc), tol);
    }
}

#[test]
fn a_loss_ending_in_a_sum_or_mean_is_one_kernel_each_way_and_the_reduction() {
    type Loss = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let losses: [(&str, Loss, Loss); 2] = [
        ("mse", mse, mse_recorded),
        ("bce_logits", bce_logits, bce_logits_recorded),
    ];
    for (name, fused_loss, recorded) in losses {
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
            let z = leaf(&XS, &[2, 3], dtype);
            let t = leaf(&YS, &[2, 3], dtype);
            let inputs = [z.clone(), t.clone()];
            let ((loss, g), runs) = fused_runs(|| {
                let loss = fused_loss(&z, &t).expect("loss");
                let g = grads(&[loss.clone()], &inputs);
                (loss, g)
            });
            // The element-wise part forward, the whole backward; the reduction is the
            // op-by-op `sum`/`mean` kernel.
            assert_eq!(runs, 2, "{name} {dtype:?}");
            assert_eq!(loss.shape(), &[] as &[usize]);
            let rec = recorded(&z, &t).expect("recorded");
            let gr = grads(&[rec.clone()], &inputs);
            assert_close(&loss, &rec, tol);
            for (a, b) in g.iter().zip(&gr) {
                assert_close(
                    a.as_ref().expect("fused"),
                    b.as_ref().expect("recorded"),
                    tol,
                );
            }
        }
    }
    // Only the prediction needs a gradient; a scaled incoming gradient.
    let z = leaf(&XS, &[6], DType::F64);
    let t = Tensor::from_vec(YS.to_vec(), &[6]).expect("t");
    let seed = Tensor::scalar(2.5f64);
    let g = |f: Loss| {
        let loss = f(&z, &t).expect("loss");
        autograd::grad(
            &[loss],
            &[z.clone()],
            GradOptions::new().grad_outputs(vec![Some(seed.clone())]),
        )
        .expect("grad")[0]
            .clone()
            .expect("g")
    };
    let (fused_g, runs) = fused_runs(|| g(mse));
    assert_eq!(runs, 2);
    assert_close(&fused_g, &g(mse_recorded), 1e-12);
}

#[test]
fn a_result_that_is_also_reduced_gets_both_gradients() {
    let x = leaf(&XS, &[3, 2], DType::F64);
    let loss = |(y, total): (Tensor, Tensor)| {
        y.mul_scalar(3.0).expect("mul").sum().expect("sum") + total.mul_scalar(-2.0).expect("mul")
    };
    let (g, runs) = fused_runs(|| grads(&[loss(with_total(&x).expect("f"))], &[x.clone()]));
    assert_eq!(runs, 2);
    let gr = grads(&[loss(with_total_recorded(&x).expect("f"))], &[x.clone()]);
    assert_close(g[0].as_ref().expect("g"), gr[0].as_ref().expect("g"), 1e-12);
    // Only the total has a gradient.
    let (g, _) = fused_runs(|| grads(&[with_total(&x).expect("f").1], &[x.clone()]));
    let gr = grads(&[with_total_recorded(&x).expect("f").1], &[x.clone()]);
    assert_close(g[0].as_ref().expect("g"), gr[0].as_ref().expect("g"), 1e-12);
}

#[test]
fn a_reduced_value_used_again_runs_op_by_op() {
    let x = leaf(&XS, &[6], DType::F64);
    let ((y, g), runs) = fused_runs(|| {
        let y = half_total(&x).expect("f");
        let g = grads(&[y.clone()], &[x.clone()]);
        (y, g)
    });
    assert_eq!(runs, 0);
    let want: f64 = XS.iter().map(|v| v.exp()).sum::<f64>() * 0.5;
    assert!((y.item::<f64>().expect("y") - want).abs() < 1e-12);
    let gx = g[0].as_ref().expect("g").to_vec::<f64>().expect("g");
    for (gi, xi) in gx.iter().zip(XS) {
        assert!((gi - 0.5 * xi.exp()).abs() < 1e-12);
    }
}

/// On the CPU the fused kernels give the op-by-op derived path's bits: the same element
/// functions in the same order, on lanes whose result does not depend on the position. Sizes
/// around the block (256) and the parallel grain (32,768), both dtypes, values and gradients.
#[test]
fn on_the_cpu_fused_and_op_by_op_give_the_same_bits() {
    type Two = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let bodies: [(&str, Two); 4] = [
        ("every_op", |x, y| every_op(x, y, 0.7)),
        ("gelu", |x, _| gelu(x)),
        ("mse", mse),
        ("bce_logits", bce_logits),
    ];
    for n in [1, 2, 7, 255, 256, 257, 1000, 40_000, 70_001] {
        for dtype in [DType::F32, DType::F64] {
            let x = Tensor::randn_seeded(&[n], DType::F64, 11)
                .and_then(|t| t.to_dtype(dtype))
                .and_then(|t| t.requires_grad_(true))
                .expect("x");
            let y = Tensor::randn_seeded(&[n], DType::F64, 12)
                .and_then(|t| t.to_dtype(dtype))
                .and_then(|t| t.requires_grad_(true))
                .expect("y");
            for (name, f) in bodies {
                let run = || {
                    let out = f(&x, &y).expect("body");
                    let seed = out.ones_like().expect("ones");
                    let g = autograd::grad(
                        &[out.clone()],
                        &[x.clone(), y.clone()],
                        GradOptions::new()
                            .grad_outputs(vec![Some(seed)])
                            .allow_unused(true),
                    )
                    .expect("grad");
                    let mut all = vec![bits(&out)];
                    all.extend(g.iter().flatten().map(bits));
                    all
                };
                let (fused, runs) = fused_runs(run);
                assert_eq!(runs, 2, "{name} n={n} {dtype:?} ran fused");
                let plain = op_by_op(run);
                assert!(
                    fused == plain,
                    "{name} n={n} {dtype:?}: fused and op-by-op bits differ"
                );
            }
        }
    }
}
