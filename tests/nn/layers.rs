//! `nn`'s layers, activations, losses and initialisers against the numbers PyTorch recorded
//! (`benches/record_nn.py` wrote `data/layers.json`: f64 inputs, forward values and the
//! gradients of `(out * upstream).sum()`), replayed at rtol 1e-10; parameter names and state-dict
//! keys, Dropout's modes, PyTorch's error messages, and gradcheck + gradgradcheck of the losses,
//! `LayerNorm`, GELU and the `erf` op.

use std::sync::OnceLock;

use autograd::nn::functional::{
    self as F, BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction,
};
use autograd::nn::init::{self, FanMode, Nonlinearity};
use autograd::nn::{
    Dropout, Embedding, Gelu, GeluApproximate, Identity, LayerNorm, LeakyRelu, Linear, LogSoftmax,
    Module, Relu, Sequential, Sigmoid, Softmax, Tanh,
};
use autograd::{DType, Result, StateDict, Tensor, gradcheck, gradgradcheck};
use serde_json::Value;

// ----- the recorded data ------------------------------------------------------------------------

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/layers.json")).expect("layers.json parses")
    })
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("an integer") as usize)
        .collect()
}

fn case(name: &str) -> &'static Value {
    &data()["cases"][name]
}

/// A recorded input as an f64 leaf that requires grad.
fn input(name: &str) -> Tensor {
    let v = &data()["inputs"][name];
    Tensor::from_vec(floats(&v["values"]), &usizes(&v["shape"]))
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn f64_tensor(values: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(values, shape).unwrap()
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs() + 1e-13,
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

/// Runs `(out * upstream).sum().backward()` and compares `out` with the case's forward value.
fn check_forward_and_backward(name: &str, out: &Tensor) -> Result<()> {
    let c = case(name);
    assert_eq!(out.shape(), usizes(&c["shape"]).as_slice(), "{name}: shape");
    assert_close(name, &out.to_vec::<f64>()?, &floats(&c["out"]));
    let upstream = f64_tensor(floats(&c["upstream"]), out.shape());
    out.mul(&upstream)?.sum()?.backward()
}

fn check_grad(name: &str, which: &str, t: &Tensor) -> Result<()> {
    let grad = t.grad().expect("a gradient");
    assert_close(
        &format!("{name}: grad of {which}"),
        &grad.to_vec::<f64>()?,
        &floats(&case(name)[&format!("grad_{which}")]),
    );
    Ok(())
}

fn error_text(name: &str) -> &'static str {
    data()["errors"][name].as_str().expect("a message")
}

fn names(m: &dyn Module) -> Vec<String> {
    m.named_parameters().into_iter().map(|(n, _)| n).collect()
}

// ----- activations and Linear -------------------------------------------------------------------

#[test]
fn activations_match_pytorch() -> Result<()> {
    let modules: Vec<(&str, Box<dyn Module>)> = vec![
        ("relu", Box::new(Relu)),
        ("tanh", Box::new(Tanh)),
        ("sigmoid", Box::new(Sigmoid)),
        ("gelu", Box::new(Gelu::new())),
        (
            "gelu_tanh",
            Box::new(Gelu::with_approximate(GeluApproximate::Tanh)),
        ),
        ("leaky_relu", Box::new(LeakyRelu::default())),
        ("leaky_relu_02", Box::new(LeakyRelu::new(0.2))),
        ("softmax_1", Box::new(Softmax::new(1))),
        ("softmax_0", Box::new(Softmax::new(0))),
        ("log_softmax_m1", Box::new(LogSoftmax::new(-1))),
        ("identity", Box::new(Identity)),
    ];
    for (name, m) in modules {
        let x = input("act_x");
        check_forward_and_backward(name, &m.forward(&x)?)?;
        check_grad(name, "x", &x)?;
        assert!(names(&*m).is_empty(), "{name} has no parameters");
    }
    Ok(())
}

#[test]
fn linear_matches_pytorch() -> Result<()> {
    let c = case("linear");
    let weight = f64_tensor(floats(&c["weight"]), &[3, 4]).requires_grad_(true)?;
    let bias = f64_tensor(floats(&c["bias"]), &[3]).requires_grad_(true)?;
    let layer = Linear::from_parts(weight.clone(), Some(bias.clone()))?;
    let x = input("act_x");
    check_forward_and_backward("linear", &layer.forward(&x)?)?;
    check_grad("linear", "x", &x)?;
    check_grad("linear", "weight", &weight)?;
    check_grad("linear", "bias", &bias)?;
    assert_eq!(names(&layer), ["weight", "bias"]);
    assert_eq!(names(&Linear::no_bias(4, 3, 0)?), ["weight"]);
    assert!(Linear::from_parts(weight.clone(), Some(f64_tensor(vec![0.0; 4], &[4]))).is_err());
    assert!(Linear::from_parts(f64_tensor(vec![0.0; 4], &[4]), None).is_err());
    Ok(())
}

// ----- LayerNorm ---------------------------------------------------------------------------------

#[test]
fn layer_norm_matches_pytorch() -> Result<()> {
    let c = case("layer_norm");
    let mut ln = LayerNorm::new(&[3, 4])?;
    assert_eq!(names(&ln), ["weight", "bias"]);
    assert_eq!(ln.weight().unwrap().to_vec::<f32>()?, vec![1.0; 12]);
    assert_eq!(ln.bias().unwrap().to_vec::<f32>()?, vec![0.0; 12]);
    ln.to_dtype(DType::F64)?;
    let mut dict = StateDict::new();
    dict.insert("weight", f64_tensor(floats(&c["weight"]), &[3, 4]));
    dict.insert("bias", f64_tensor(floats(&c["bias"]), &[3, 4]));
    ln.load_state_dict(&dict)?;
    let x = input("ln_x");
    check_forward_and_backward("layer_norm", &ln.forward(&x)?)?;
    check_grad("layer_norm", "x", &x)?;
    check_grad("layer_norm", "weight", ln.weight().unwrap())?;
    check_grad("layer_norm", "bias", ln.bias().unwrap())?;

    let plain = LayerNorm::with_options(&[4], 1e-3, false)?;
    assert!(names(&plain).is_empty());
    let x = input("ln_x");
    check_forward_and_backward("layer_norm_plain", &plain.forward(&x)?)?;
    check_grad("layer_norm_plain", "x", &x)?;

    let err =
        F::layer_norm(&Tensor::zeros(&[2, 3], DType::F64)?, &[4], None, None, 1e-5).unwrap_err();
    assert_eq!(err.to_string(), error_text("layer_norm_shape"));
    Ok(())
}

// ----- Embedding ---------------------------------------------------------------------------------

#[test]
fn embedding_matches_pytorch_with_and_without_padding() -> Result<()> {
    let c = case("embedding_pad0");
    let idx = &data()["inputs"]["emb_idx"];
    let indices = f64_tensor(floats(&idx["values"]), &usizes(&idx["shape"]));
    for (name, padding) in [("embedding_pad0", true), ("embedding", false)] {
        let weight = Tensor::zeros(&[6, 3], DType::F64)?.requires_grad_(true)?;
        let mut emb = Embedding::from_weight(weight)?;
        if padding {
            emb = emb.with_padding_idx(0)?;
        }
        assert_eq!(names(&emb), ["weight"]);
        let mut dict = StateDict::new();
        dict.insert("weight", f64_tensor(floats(&c["weight"]), &[6, 3]));
        emb.load_state_dict(&dict)?;
        check_forward_and_backward(name, &emb.forward(&indices)?)?;
        check_grad(name, "weight", emb.weight())?;
    }
    // A new table: N(0, 1) rows, the padding row zeroed.
    let emb = Embedding::new(1000, 10, 3)?.with_padding_idx(2)?;
    let w = emb.weight().to_vec::<f32>()?;
    assert_eq!(&w[20..30], &[0.0; 10]);
    let mean = w.iter().map(|&v| f64::from(v)).sum::<f64>() / w.len() as f64;
    let var = w
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / w.len() as f64;
    assert!(
        mean.abs() < 0.03 && (var.sqrt() - 1.0).abs() < 0.03,
        "{mean} {var}"
    );
    Ok(())
}

#[test]
fn embedding_errors_are_pytorchs() -> Result<()> {
    let emb = Embedding::new(6, 3, 0)?;
    let err = emb
        .forward(&Tensor::from_vec(vec![6.0f32], &[1])?)
        .unwrap_err();
    assert_eq!(err.to_string(), error_text("embedding_oob"));
    let err = emb
        .forward(&Tensor::from_vec(vec![-1.0f32], &[1])?)
        .unwrap_err();
    assert_eq!(err.to_string(), error_text("embedding_oob"));
    assert!(emb.forward(&Tensor::from_vec(vec![1.5f32], &[1])?).is_err());
    let err = Embedding::new(6, 3, 0)?.with_padding_idx(6).unwrap_err();
    assert_eq!(err.to_string(), error_text("padding_idx"));
    Ok(())
}

// ----- losses --------------------------------------------------------------------------------------

fn class_weight() -> Tensor {
    f64_tensor(floats(&data()["inputs"]["class_weight"]), &[4])
}

fn targets() -> Vec<usize> {
    usizes(&data()["inputs"]["targets"])
}

#[test]
fn cross_entropy_matches_pytorch() -> Result<()> {
    let w = Some(class_weight());
    let variants: Vec<(&str, CrossEntropyOptions)> = vec![
        ("ce_mean", CrossEntropyOptions::default()),
        (
            "ce_sum",
            CrossEntropyOptions {
                reduction: Reduction::Sum,
                ..Default::default()
            },
        ),
        (
            "ce_none",
            CrossEntropyOptions {
                reduction: Reduction::None,
                ..Default::default()
            },
        ),
        (
            "ce_smooth",
            CrossEntropyOptions {
                label_smoothing: 0.1,
                ..Default::default()
            },
        ),
        (
            "ce_smooth_none",
            CrossEntropyOptions {
                label_smoothing: 0.25,
                reduction: Reduction::None,
                ..Default::default()
            },
        ),
        (
            "ce_ignore",
            CrossEntropyOptions {
                ignore_index: Some(3),
                ..Default::default()
            },
        ),
        (
            "ce_ignore_none",
            CrossEntropyOptions {
                ignore_index: Some(3),
                reduction: Reduction::None,
                ..Default::default()
            },
        ),
        (
            "ce_weight",
            CrossEntropyOptions {
                weight: w.clone(),
                ..Default::default()
            },
        ),
        (
            "ce_weight_ignore_smooth",
            CrossEntropyOptions {
                weight: w.clone(),
                ignore_index: Some(0),
                label_smoothing: 0.2,
                ..Default::default()
            },
        ),
        (
            "ce_weight_smooth_sum",
            CrossEntropyOptions {
                weight: w,
                label_smoothing: 0.3,
                reduction: Reduction::Sum,
                ..Default::default()
            },
        ),
    ];
    for (name, options) in variants {
        let x = input("logits");
        check_forward_and_backward(name, &F::cross_entropy(&x, &targets(), &options)?)?;
        check_grad(name, "x", &x)?;
    }
    Ok(())
}

#[test]
fn nll_loss_matches_pytorch() -> Result<()> {
    let variants: Vec<(&str, NllLossOptions)> = vec![
        ("nll_mean", NllLossOptions::default()),
        (
            "nll_sum",
            NllLossOptions {
                reduction: Reduction::Sum,
                ..Default::default()
            },
        ),
        (
            "nll_none",
            NllLossOptions {
                reduction: Reduction::None,
                ..Default::default()
            },
        ),
        (
            "nll_weight_ignore",
            NllLossOptions {
                weight: Some(class_weight()),
                ignore_index: Some(3),
                ..Default::default()
            },
        ),
    ];
    for (name, options) in variants {
        let x = input("logits");
        check_forward_and_backward(name, &F::nll_loss(&x, &targets(), &options)?)?;
        check_grad(name, "x", &x)?;
    }
    Ok(())
}

#[test]
fn mse_loss_matches_pytorch() -> Result<()> {
    let y = f64_tensor(floats(&data()["inputs"]["mse_target"]), &[3, 4]);
    for (name, reduction) in [
        ("mse_mean", Reduction::Mean),
        ("mse_sum", Reduction::Sum),
        ("mse_none", Reduction::None),
    ] {
        let x = input("act_x");
        check_forward_and_backward(name, &F::mse_loss(&x, &y, reduction)?)?;
        check_grad(name, "x", &x)?;
    }
    Ok(())
}

#[test]
fn binary_cross_entropy_with_logits_matches_pytorch() -> Result<()> {
    let inputs = &data()["inputs"];
    let target = f64_tensor(floats(&inputs["bce_target"]), &[3, 4]);
    let pos_weight = Some(f64_tensor(floats(&inputs["pos_weight"]), &[4]));
    let weight = Some(f64_tensor(floats(&inputs["bce_weight"]), &[3, 4]));
    let variants: Vec<(&str, BceWithLogitsOptions)> = vec![
        ("bce_mean", BceWithLogitsOptions::default()),
        (
            "bce_sum",
            BceWithLogitsOptions {
                reduction: Reduction::Sum,
                ..Default::default()
            },
        ),
        (
            "bce_none",
            BceWithLogitsOptions {
                reduction: Reduction::None,
                ..Default::default()
            },
        ),
        (
            "bce_pos_weight",
            BceWithLogitsOptions {
                pos_weight: pos_weight.clone(),
                ..Default::default()
            },
        ),
        (
            "bce_weight_pos_weight_sum",
            BceWithLogitsOptions {
                weight,
                pos_weight,
                reduction: Reduction::Sum,
            },
        ),
    ];
    for (name, options) in variants {
        let x = input("act_x");
        let loss = F::binary_cross_entropy_with_logits(&x, &target, &options)?;
        check_forward_and_backward(name, &loss)?;
        check_grad(name, "x", &x)?;
    }
    Ok(())
}

#[test]
fn loss_errors_are_pytorchs() -> Result<()> {
    let x = input("logits");
    let ce = CrossEntropyOptions::default();
    let err = F::cross_entropy(&x, &[1, 0, 4, 3, 2], &ce).unwrap_err();
    assert_eq!(err.to_string(), error_text("target_oob"));
    let err = F::nll_loss(&x, &[1, 0, 7, 3, 2], &NllLossOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), error_text("nll_target_oob"));
    let err = F::cross_entropy(&x, &[1, 0], &ce).unwrap_err();
    assert_eq!(err.to_string(), error_text("batch_mismatch"));
    let smoothing = CrossEntropyOptions {
        label_smoothing: 1.5,
        ..Default::default()
    };
    let err = F::cross_entropy(&x, &targets(), &smoothing).unwrap_err();
    assert_eq!(err.to_string(), error_text("label_smoothing"));
    // An ignored target may be out of range, as in PyTorch (-100 is).
    let ignore = CrossEntropyOptions {
        ignore_index: Some(9),
        ..Default::default()
    };
    assert!(F::cross_entropy(&x, &[1, 9, 0, 0, 0], &ignore).is_ok());
    let err = F::binary_cross_entropy_with_logits(
        &Tensor::zeros(&[3], DType::F64)?,
        &Tensor::zeros(&[2], DType::F64)?,
        &BceWithLogitsOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), error_text("bce_size"));
    Ok(())
}

#[test]
fn cross_entropy_mean_over_only_ignored_targets_is_nan() -> Result<()> {
    // PyTorch: 0 / 0.
    let x = input("logits");
    let options = CrossEntropyOptions {
        ignore_index: Some(3),
        ..Default::default()
    };
    let loss = F::cross_entropy(&x, &[3, 3, 3, 3, 3], &options)?;
    assert!(loss.item::<f64>()?.is_nan());
    Ok(())
}

// ----- Sequential ------------------------------------------------------------------------------------

fn mlp() -> Result<Sequential> {
    Ok(Sequential::new()
        .add(Linear::new(4, 8, 0)?)
        .add(Relu)
        .add(Dropout::new(0.1, 1)?)
        .add(Linear::new(8, 3, 2)?)
        .add(Tanh)
        .add(LayerNorm::new(&[3])?)
        .add(Linear::no_bias(3, 2, 3)?))
}

#[test]
fn sequential_keys_and_forward_match_pytorch() -> Result<()> {
    let recorded = &data()["sequential"];
    let mut model = mlp()?;
    let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
    let want: Vec<String> = recorded["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, want);
    let shapes: Vec<Vec<usize>> = model
        .parameters()
        .iter()
        .map(|p| p.shape().to_vec())
        .collect();
    let want_shapes: Vec<Vec<usize>> = recorded["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(usizes)
        .collect();
    assert_eq!(shapes, want_shapes);

    model.to_dtype(DType::F64)?;
    let mut dict = StateDict::new();
    for ((key, shape), values) in want
        .iter()
        .zip(&want_shapes)
        .zip(recorded["values"].as_array().unwrap())
    {
        dict.insert(key.clone(), f64_tensor(floats(values), shape));
    }
    model.load_state_dict(&dict)?;
    model.eval();
    let out = model.forward(&input("act_x"))?;
    assert_close(
        "sequential",
        &out.to_vec::<f64>()?,
        &floats(&recorded["out"]),
    );
    Ok(())
}

#[test]
fn sequential_indexing_and_modes_reach_children() -> Result<()> {
    let mut model = mlp()?;
    assert_eq!(model.len(), 7);
    assert!(!model.is_empty() && Sequential::new().is_empty());
    assert_eq!(names(&model[0]), ["weight", "bias"]);
    assert!(model.get(7).is_none());
    assert!(model.is_training() && model[2].is_training());
    model.eval();
    assert!(!model.is_training() && !model[2].is_training());
    let x = Tensor::ones(&[5, 4], DType::F32)?;
    let a = model.forward(&x)?.to_vec::<f32>()?;
    assert_eq!(a, model.forward(&x)?.to_vec::<f32>()?, "no dropout in eval");
    model.train();
    assert!(model.get(2).unwrap().is_training());
    // A layer pushed into a container in eval mode takes its mode.
    let mut frozen = Sequential::new();
    frozen.eval();
    frozen.push(Box::new(Dropout::new(0.5, 0)?));
    assert!(!frozen[0].is_training());
    // The empty container is the identity.
    assert!(Sequential::new().forward(&x)?.is_same(&x));
    Ok(())
}

// ----- Dropout ---------------------------------------------------------------------------------------

#[test]
fn dropout_zeroes_with_probability_p_and_scales_the_rest() -> Result<()> {
    let p = 0.3;
    let drop = Dropout::new(p, 42)?;
    let x = Tensor::ones(&[100_000], DType::F64)?.requires_grad_(true)?;
    let y = drop.forward(&x)?;
    let values = y.to_vec::<f64>()?;
    let scale = 1.0 / (1.0 - p);
    assert!(values.iter().all(|&v| v == 0.0 || v == scale));
    let zeroed = values.iter().filter(|&&v| v == 0.0).count() as f64 / values.len() as f64;
    assert!((zeroed - p).abs() < 0.01, "zeroed {zeroed}");
    // The gradient is the mask.
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, values);
    // A new mask each call; the same sequence from the same seed.
    let second = drop.forward(&x)?.to_vec::<f64>()?;
    assert_ne!(values, second);
    let again = Dropout::new(p, 42)?;
    assert_eq!(again.forward(&x)?.to_vec::<f64>()?, values);
    assert_eq!(again.forward(&x)?.to_vec::<f64>()?, second);
    Ok(())
}

#[test]
fn dropout_is_the_identity_in_eval_and_for_p_0_and_zeros_for_p_1() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3])?.requires_grad_(true)?;
    let mut drop = Dropout::new(0.5, 0)?;
    drop.eval();
    assert!(drop.forward(&x)?.is_same(&x));
    assert!(Dropout::new(0.0, 0)?.forward(&x)?.is_same(&x));
    let y = Dropout::new(1.0, 0)?.forward(&x)?;
    assert_eq!(y.to_vec::<f32>()?, vec![0.0; 3]);
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![0.0; 3]);
    assert!(F::dropout(&x, 0.7, false, 3)?.is_same(&x));
    let err = Dropout::new(1.5, 0).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p"));
    let err = F::dropout(&x, -0.25, true, 0).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_neg"));
    // Python's spelling of the float.
    let err = Dropout::new(2.0, 0).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_2"));
    let err = F::dropout(&x, -1e-5, true, 0).unwrap_err();
    assert_eq!(err.to_string(), error_text("dropout_p_tiny"));
    assert!(names(&drop).is_empty());
    Ok(())
}

#[test]
fn dropout_shared_between_threads_draws_distinct_masks() -> Result<()> {
    let drop = Dropout::new(0.5, 9)?;
    let x = Tensor::ones(&[256], DType::F32)?;
    let masks: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| drop.forward(&x).unwrap().to_vec::<f32>().unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for i in 0..masks.len() {
        for j in i + 1..masks.len() {
            assert_ne!(masks[i], masks[j], "masks {i} and {j}");
        }
    }
    Ok(())
}

// ----- initialisers ----------------------------------------------------------------------------------

fn nonlinearity(name: &str) -> Nonlinearity {
    match name {
        "linear" => Nonlinearity::Linear,
        "conv1d" => Nonlinearity::Conv1d,
        "conv2d" => Nonlinearity::Conv2d,
        "conv3d" => Nonlinearity::Conv3d,
        "conv_transpose1d" => Nonlinearity::ConvTranspose1d,
        "conv_transpose2d" => Nonlinearity::ConvTranspose2d,
        "conv_transpose3d" => Nonlinearity::ConvTranspose3d,
        "sigmoid" => Nonlinearity::Sigmoid,
        "tanh" => Nonlinearity::Tanh,
        "relu" => Nonlinearity::Relu,
        "leaky_relu" => Nonlinearity::LeakyRelu,
        "selu" => Nonlinearity::Selu,
        other => panic!("unknown nonlinearity {other}"),
    }
}

#[test]
fn fans_and_gains_match_pytorch() -> Result<()> {
    let rec = &data()["init"];
    for (shape, fans) in rec["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rec["fans"].as_array().unwrap())
    {
        let (fan_in, fan_out) = init::calculate_fan_in_and_fan_out(&usizes(shape))?;
        assert_eq!(vec![fan_in, fan_out], usizes(fans), "{shape}");
    }
    for (name, gain) in rec["gains"].as_object().unwrap() {
        let got = init::calculate_gain(nonlinearity(name), None)?;
        assert_close(name, &[got], &[gain.as_f64().unwrap()]);
    }
    let got = init::calculate_gain(Nonlinearity::LeakyRelu, Some(0.2))?;
    assert_close(
        "leaky_relu 0.2",
        &[got],
        &[rec["leaky_relu_gain_02"].as_f64().unwrap()],
    );
    let err = init::calculate_fan_in_and_fan_out(&[5]).unwrap_err();
    assert_eq!(err.to_string(), error_text("fan_1d"));
    assert!(init::calculate_gain(Nonlinearity::LeakyRelu, Some(f64::NAN)).is_err());
    Ok(())
}

/// Each initialiser draws exactly what `uniform_`/`normal_` draw with PyTorch's bound or std.
#[test]
fn kaiming_and_xavier_use_pytorchs_bounds_and_stds() -> Result<()> {
    let rec = &data()["init"];
    let same = |what: &str, a: &Tensor, b: &Tensor| {
        assert_close(
            what,
            &a.to_vec::<f64>().unwrap(),
            &b.to_vec::<f64>().unwrap(),
        );
    };
    for (k, case) in rec["kaiming"].as_array().unwrap().iter().enumerate() {
        let shape = usizes(&case["shape"]);
        let a = case["a"].as_f64().unwrap();
        let mode = match case["mode"].as_str().unwrap() {
            "fan_in" => FanMode::FanIn,
            _ => FanMode::FanOut,
        };
        let nl = nonlinearity(case["nonlinearity"].as_str().unwrap());
        let (bound, std) = (
            case["bound"].as_f64().unwrap(),
            case["std"].as_f64().unwrap(),
        );
        let seed = k as u64;
        let (got, want) = (
            Tensor::zeros(&shape, DType::F64)?,
            Tensor::zeros(&shape, DType::F64)?,
        );
        init::kaiming_uniform_(&got, a, mode, nl, seed)?;
        init::uniform_(&want, -bound, bound, seed)?;
        same(&format!("kaiming_uniform_ {case}"), &got, &want);
        init::kaiming_normal_(&got, a, mode, nl, seed)?;
        init::normal_(&want, 0.0, std, seed)?;
        same(&format!("kaiming_normal_ {case}"), &got, &want);
    }
    for (k, case) in rec["xavier"].as_array().unwrap().iter().enumerate() {
        let shape = usizes(&case["shape"]);
        let gain = case["gain"].as_f64().unwrap();
        let (bound, std) = (
            case["bound"].as_f64().unwrap(),
            case["std"].as_f64().unwrap(),
        );
        let (got, want) = (
            Tensor::zeros(&shape, DType::F64)?,
            Tensor::zeros(&shape, DType::F64)?,
        );
        init::xavier_uniform_(&got, gain, k as u64)?;
        init::uniform_(&want, -bound, bound, k as u64)?;
        same(&format!("xavier_uniform_ {case}"), &got, &want);
        init::xavier_normal_(&got, gain, k as u64)?;
        init::normal_(&want, 0.0, std, k as u64)?;
        same(&format!("xavier_normal_ {case}"), &got, &want);
    }
    Ok(())
}

fn mean_std(t: &Tensor) -> (f64, f64, f64) {
    let v = t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let max = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    (mean, var.sqrt(), max)
}

#[test]
fn initialisers_sample_the_right_distributions() -> Result<()> {
    // [out 256, in 64, 3, 3]: fan_in 576, fan_out 2304.
    let shape = [256, 64, 3, 3];
    let w = Tensor::zeros(&shape, DType::F32)?.requires_grad_(true)?;
    init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu, 1)?;
    assert!(w.is_leaf() && w.requires_grad());
    let bound = (6.0f64 / 576.0).sqrt();
    let (mean, std, max) = mean_std(&w);
    assert!(max <= bound && max > 0.999 * bound, "{max} vs {bound}");
    assert!(mean.abs() < 0.005 * bound && (std / (bound / 3f64.sqrt()) - 1.0).abs() < 0.01);

    init::kaiming_normal_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu, 2)?;
    let (mean, std, _) = mean_std(&w);
    let want = (2.0f64 / 2304.0).sqrt();
    assert!(
        mean.abs() < 0.01 * want && (std / want - 1.0).abs() < 0.01,
        "{std} vs {want}"
    );

    init::xavier_uniform_(&w, 1.0, 3)?;
    let (_, std, max) = mean_std(&w);
    let bound = (6.0f64 / (576.0 + 2304.0)).sqrt();
    assert!(max <= bound && (std / (bound / 3f64.sqrt()) - 1.0).abs() < 0.01);

    init::normal_(&w, 2.0, 0.5, 4)?;
    let (mean, std, _) = mean_std(&w);
    assert!((mean - 2.0).abs() < 0.005 && (std - 0.5).abs() < 0.005);
    init::constant_(&w, 0.75)?;
    assert!(w.to_vec::<f32>()?.iter().all(|&v| v == 0.75));
    init::zeros_(&w)?;
    assert_eq!(mean_std(&w).2, 0.0);
    init::ones_(&w)?;
    assert_eq!(mean_std(&w), (1.0, 0.0, 1.0));
    assert!(init::uniform_(&w, 1.0, 0.0, 0).is_err());
    assert!(init::normal_(&w, 0.0, -1.0, 0).is_err());
    Ok(())
}

#[test]
fn linear_default_init_is_pytorchs() -> Result<()> {
    for case in data()["init"]["linear_bounds"].as_array().unwrap() {
        let (fan_in, fan_out) = (
            case["in"].as_u64().unwrap() as usize,
            case["out"].as_u64().unwrap() as usize,
        );
        let wb = case["weight"].as_f64().unwrap();
        let bb = case["bias"].as_f64().unwrap();
        let seed = 11;
        let layer = Linear::new(fan_in, fan_out, seed)?;
        let want_w = Tensor::zeros(&[fan_out, fan_in], DType::F32)?;
        init::uniform_(&want_w, -wb, wb, seed)?;
        let want_b = Tensor::zeros(&[fan_out], DType::F32)?;
        init::uniform_(&want_b, -bb, bb, seed + 1)?;
        assert_eq!(layer.weight().to_vec::<f32>()?, want_w.to_vec::<f32>()?);
        assert_eq!(
            layer.bias().unwrap().to_vec::<f32>()?,
            want_b.to_vec::<f32>()?
        );
        assert!(layer.weight().is_leaf() && layer.weight().requires_grad());
        assert!(layer.bias().unwrap().requires_grad());
    }
    Ok(())
}

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
    if !autograd::cuda::is_available() {
        let why = autograd::cuda::unavailable_reason(0).unwrap_or_default();
        println!("skipped layers_and_losses_on_cuda_match_the_cpu: no CUDA device ({why})");
        return Ok(());
    }
    let gpu = autograd::Device::Cuda(0);
    let build = || -> Result<Sequential> {
        let mut m = Sequential::new()
            .add(Linear::new(4, 8, 0)?)
            .add(Gelu::new())
            .add(LayerNorm::new(&[8])?)
            .add(Dropout::new(0.5, 3)?)
            .add(Linear::new(8, 3, 1)?);
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
    let mut emb = Embedding::new(6, 3, 0)?.with_padding_idx(1)?;
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
