//! gradcheck and gradgradcheck of the losses, `LayerNorm`, GELU, `leaky_relu` and `erf`, and
//! the layers on CUDA against the CPU.

use super::*;

// ----- gradcheck and gradgradcheck -------------------------------------------------------------------

/// Runs gradcheck and gradgradcheck of `f` at `inputs`.
fn check_both(what: &str, f: impl Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor]) {
    gradcheck(&f, inputs).unwrap_or_else(|e| panic!("{what}: gradcheck: {e}"));
    gradgradcheck(&f, inputs).unwrap_or_else(|e| panic!("{what}: gradgradcheck: {e}"));
}

#[test]
fn losses_pass_gradcheck_and_gradgradcheck() {
    let logits = input("logits");
    let t = targets();
    let w = class_weight();
    let full = CrossEntropyOptions {
        weight: Some(w.clone()),
        ignore_index: Some(0),
        label_smoothing: 0.2,
        ..Default::default()
    };
    check_both(
        "cross_entropy",
        |i| F::cross_entropy(&i[0], &t, &full),
        std::slice::from_ref(&logits),
    );
    let none = CrossEntropyOptions {
        ignore_index: Some(3),
        label_smoothing: 0.1,
        reduction: Reduction::None,
        ..Default::default()
    };
    check_both(
        "cross_entropy none",
        |i| F::cross_entropy(&i[0], &t, &none),
        std::slice::from_ref(&logits),
    );
    let t3 = usizes(&data()["inputs"]["targets3"]);
    let smooth = CrossEntropyOptions {
        label_smoothing: 0.2,
        reduction: Reduction::None,
        ..Default::default()
    };
    check_both(
        "cross_entropy [N, C, d]",
        |i| F::cross_entropy(&i[0], &t3, &smooth),
        &[input("logits3")],
    );
    let nll = NllLossOptions {
        weight: Some(w),
        ..Default::default()
    };
    check_both(
        "nll_loss",
        |i| F::nll_loss(&i[0].log_softmax(1)?, &t, &nll),
        std::slice::from_ref(&logits),
    );
    let x = input("act_x");
    let y = input("act_x")
        .detach()
        .mul_scalar(0.5)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    check_both(
        "mse_loss",
        |i| F::mse_loss(&i[0], &i[1], Reduction::Mean),
        &[x.clone(), y],
    );
    let target = f64_tensor(floats(&data()["inputs"]["bce_target"]), &[3, 4]);
    let bce = BceWithLogitsOptions {
        pos_weight: Some(f64_tensor(floats(&data()["inputs"]["pos_weight"]), &[4])),
        ..Default::default()
    };
    check_both(
        "binary_cross_entropy_with_logits",
        |i| F::binary_cross_entropy_with_logits(&i[0], &target, &bce),
        &[x],
    );
}

#[test]
fn layer_norm_gelu_and_erf_pass_gradcheck_and_gradgradcheck() {
    let x = input("ln_x");
    let w = input("ln_x")
        .narrow(0, 0, 1)
        .unwrap()
        .reshape(&[3, 4])
        .unwrap();
    let w = w.detach().requires_grad_(true).unwrap();
    let b = w
        .detach()
        .mul_scalar(-0.3)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    check_both(
        "layer_norm",
        |i| F::layer_norm(&i[0], &[3, 4], Some(&i[1]), Some(&i[2]), 1e-5),
        &[x.clone(), w, b],
    );
    check_both(
        "layer_norm without affine",
        |i| F::layer_norm(&i[0], &[4], None, None, 1e-3),
        &[x],
    );
    let a = input("act_x");
    check_both(
        "gelu",
        |i| F::gelu(&i[0], GeluApproximate::None),
        std::slice::from_ref(&a),
    );
    check_both(
        "gelu tanh",
        |i| F::gelu(&i[0], GeluApproximate::Tanh),
        std::slice::from_ref(&a),
    );
    check_both(
        "leaky_relu",
        |i| F::leaky_relu(&i[0], 0.2),
        std::slice::from_ref(&a),
    );
    check_both("erf", |i| i[0].erf(), &[a]);
}

#[test]
fn erf_agrees_with_pytorchs_gelu_values() -> Result<()> {
    // gelu(x) = x/2 · (1 + erf(x/√2)): the erf values PyTorch's GELU outputs imply.
    let x = input("act_x");
    let values = x.detach().to_vec::<f64>()?;
    let gelu = floats(&case("gelu")["out"]);
    let erf = x
        .detach()
        .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?
        .erf()?
        .to_vec::<f64>()?;
    for ((v, g), e) in values.iter().zip(&gelu).zip(&erf) {
        let implied = 2.0 * g / v - 1.0;
        assert!((implied - e).abs() < 1e-12, "erf({v}/√2): {e} vs {implied}");
    }
    Ok(())
}

// ----- CUDA ----------------------------------------------------------------------------------------

/// The same seeded model on the CPU and on `cuda:0` (f64, training mode, so Dropout draws its
/// masks too): outputs, a smoothed cross-entropy's gradients, an embedding and a BCE loss agree
/// to 1e-10. Without a GPU, prints why and passes.
#[test]
fn layers_and_losses_on_cuda_match_the_cpu() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    if !autograd::cuda::is_available() {
        let why = autograd::cuda::unavailable_reason(0).unwrap_or_default();
        println!("skipped layers_and_losses_on_cuda_match_the_cpu: no CUDA device ({why})");
        return Ok(());
    }
    let gpu = autograd::Device::Cuda(0);
    let build = || -> Result<Sequential> {
        let mut m = Sequential::new()
            .add(Linear::new(4, 8)?)
            .add(Gelu::new())
            .add(LayerNorm::new(&[8])?)
            .add(Dropout::new(0.5)?)
            .add(Linear::new(8, 3)?);
        m.to_dtype(DType::F64)?;
        Ok(m)
    };
    let cpu = build()?;
    let mut dev = build()?;
    dev.to(gpu)?;
    let x = input("act_x");
    let xd = x.detach().to(gpu)?.requires_grad_(true)?;
    let options = CrossEntropyOptions {
        label_smoothing: 0.1,
        ..Default::default()
    };
    let (out, out_d) = (cpu.forward(&x)?, dev.forward(&xd)?);
    assert_eq!(out_d.device(), gpu);
    assert_close(
        "cuda forward",
        &out_d.to_vec::<f64>()?,
        &out.to_vec::<f64>()?,
    );
    F::cross_entropy(&out, &[0, 1, 2], &options)?.backward()?;
    F::cross_entropy(&out_d, &[0, 1, 2], &options)?.backward()?;
    assert_close(
        "cuda grad x",
        &xd.grad().unwrap().to_vec::<f64>()?,
        &x.grad().unwrap().to_vec::<f64>()?,
    );
    for ((name, p), (_, pd)) in cpu.named_parameters().iter().zip(dev.named_parameters()) {
        assert_close(
            &format!("cuda grad {name}"),
            &pd.grad().unwrap().to_vec::<f64>()?,
            &p.grad().unwrap().to_vec::<f64>()?,
        );
    }
    let mut emb = Embedding::new(6, 3)?.with_padding_idx(1)?;
    let rows = emb.forward_indices(&[1, 4, 4], &[3])?.to_vec::<f32>()?;
    emb.to(gpu)?;
    let idx = Tensor::from_vec(vec![1.0f32, 4.0, 4.0], &[3])?.to(gpu)?;
    assert_eq!(emb.forward(&idx)?.to_vec::<f32>()?, rows);
    let target = f64_tensor(floats(&data()["inputs"]["bce_target"]), &[3, 4]);
    let bce = F::binary_cross_entropy_with_logits(&x, &target, &Default::default())?;
    let bce_d = F::binary_cross_entropy_with_logits(&xd, &target.to(gpu)?, &Default::default())?;
    assert_close("cuda bce", &[bce_d.item::<f64>()?], &[bce.item::<f64>()?]);
    Ok(())
}

/// The exact GELU as a derived function: `erf` has a derivative rule, so
/// `#[differentiable(derive)]` bodies can use it.
#[autograd::differentiable(derive)]
fn gelu_derived(x: &Tensor) -> Result<Tensor> {
    let e = x.mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?.erf()?;
    x.mul_scalar(0.5)?.mul(&e.add_scalar(1.0)?)
}

#[test]
fn erf_works_in_derived_functions() -> Result<()> {
    let x = input("act_x");
    check_both(
        "derived gelu",
        |i| gelu_derived(&i[0]),
        std::slice::from_ref(&x),
    );
    let want = F::gelu(&x, GeluApproximate::None)?.to_vec::<f64>()?;
    assert_close("derived gelu", &gelu_derived(&x)?.to_vec::<f64>()?, &want);
    Ok(())
}
