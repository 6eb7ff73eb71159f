//! Initialisers: PyTorch's fans, gains, bounds and standard deviations, the distributions
//! of large samples, and `Linear`'s default initialisation.

use super::*;
use autograd::Generator;

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
    let _rng = crate::common::global_rng(0);
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
        let g = |s: u64| Generator::new().manual_seed(s);
        init::kaiming_uniform_with(&got, a, mode, nl, &g(seed))?;
        init::uniform_with(&want, -bound, bound, &g(seed))?;
        same(&format!("kaiming_uniform_ {case}"), &got, &want);
        init::kaiming_normal_with(&got, a, mode, nl, &g(seed))?;
        init::normal_with(&want, 0.0, std, &g(seed))?;
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
        let g = || Generator::new().manual_seed(k as u64);
        init::xavier_uniform_with(&got, gain, &g())?;
        init::uniform_with(&want, -bound, bound, &g())?;
        same(&format!("xavier_uniform_ {case}"), &got, &want);
        init::xavier_normal_with(&got, gain, &g())?;
        init::normal_with(&want, 0.0, std, &g())?;
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
    let _rng = crate::common::global_rng(0);
    // [out 256, in 64, 3, 3]: fan_in 576, fan_out 2304.
    let shape = [256, 64, 3, 3];
    let w = Tensor::zeros(&shape, DType::F32)?.requires_grad_(true)?;
    init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu)?;
    assert!(w.is_leaf() && w.requires_grad());
    let bound = (6.0f64 / 576.0).sqrt();
    let (mean, std, max) = mean_std(&w);
    assert!(max <= bound && max > 0.999 * bound, "{max} vs {bound}");
    assert!(mean.abs() < 0.005 * bound && (std / (bound / 3f64.sqrt()) - 1.0).abs() < 0.01);

    init::kaiming_normal_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu)?;
    let (mean, std, _) = mean_std(&w);
    let want = (2.0f64 / 2304.0).sqrt();
    assert!(
        mean.abs() < 0.01 * want && (std / want - 1.0).abs() < 0.01,
        "{std} vs {want}"
    );

    init::xavier_uniform_(&w, 1.0)?;
    let (_, std, max) = mean_std(&w);
    let bound = (6.0f64 / (576.0 + 2304.0)).sqrt();
    assert!(max <= bound && (std / (bound / 3f64.sqrt()) - 1.0).abs() < 0.01);

    init::normal_(&w, 2.0, 0.5)?;
    let (mean, std, _) = mean_std(&w);
    assert!((mean - 2.0).abs() < 0.005 && (std - 0.5).abs() < 0.005);
    init::constant_(&w, 0.75)?;
    assert!(w.to_vec::<f32>()?.iter().all(|&v| v == 0.75));
    init::zeros_(&w)?;
    assert_eq!(mean_std(&w).2, 0.0);
    init::ones_(&w)?;
    assert_eq!(mean_std(&w), (1.0, 0.0, 1.0));
    assert!(init::uniform_(&w, 1.0, 0.0).is_err());
    assert!(init::normal_(&w, 0.0, -1.0).is_err());
    Ok(())
}

#[test]
fn linear_default_init_is_pytorchs() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    for case in data()["init"]["linear_bounds"].as_array().unwrap() {
        let (fan_in, fan_out) = (
            case["in"].as_u64().unwrap() as usize,
            case["out"].as_u64().unwrap() as usize,
        );
        let wb = case["weight"].as_f64().unwrap();
        let bb = case["bias"].as_f64().unwrap();
        let seed = 11;
        autograd::manual_seed(seed);
        let layer = Linear::new(fan_in, fan_out)?;
        // The weight, then the bias, from the same stream.
        autograd::manual_seed(seed);
        let want_w = Tensor::zeros(&[fan_out, fan_in], DType::F32)?;
        init::uniform_(&want_w, -wb, wb)?;
        let want_b = Tensor::zeros(&[fan_out], DType::F32)?;
        init::uniform_(&want_b, -bb, bb)?;
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
