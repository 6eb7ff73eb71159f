//! `BatchNorm1d/2d/3d`, `GroupNorm`, `RmsNorm`, `AdaptiveAvgPool2d`, `Upsample` (with
//! `interpolate` and `adaptive_avg_pool2d`) and the activation modules against PyTorch:
//! `tests/nn/norm_layers.py` recorded `data/norm_layers.json` and `data/norm_resnet.safetensors`
//! (f64 outputs, gradients and buffers, replayed at rtol 1e-10), the state dicts after
//! `manual_seed`, PyTorch's error texts and reprs, and a ResNet block declared with
//! `#[derive(Module)]` that loads PyTorch's checkpoint and follows it in train and eval mode.

use std::sync::OnceLock;

use autograd::nn::functional as F;
use autograd::nn::{
    AdaptiveAvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, Celu, Conv2d, Elu, Forward,
    GroupNorm, Hardtanh, InterpolateMode, Linear, Mish, Module, Relu6, RmsNorm, Selu, Sequential,
    Silu, Softplus, Spatial, Upsample,
};
use autograd::{DType, Result, StateDict, Tensor, gradcheck, gradgradcheck, manual_seed};
use serde_json::Value;

const RTOL: f64 = 1e-10;
const ATOL: f64 = 1e-12;

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/norm_layers.json")).expect("norm_layers.json")
    })
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("a size") as usize)
        .collect()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// A recorded tensor (`{"shape", "dtype", "data"}`) in its dtype.
fn tensor(v: &Value) -> Tensor {
    let shape = usizes(&v["shape"]);
    match v["dtype"].as_str().unwrap() {
        "int64" => {
            let d = v["data"].as_array().unwrap();
            Tensor::from_vec(d.iter().map(|x| x.as_i64().unwrap()).collect(), &shape)
        }
        "float32" => Tensor::from_vec(
            floats(&v["data"]).into_iter().map(|x| x as f32).collect(),
            &shape,
        ),
        _ => Tensor::from_vec(floats(&v["data"]), &shape),
    }
    .unwrap()
}

fn leaf(v: &Value) -> Tensor {
    tensor(v).requires_grad_(true).unwrap()
}

fn state_dict(v: &Value) -> StateDict {
    let mut dict = StateDict::new();
    for pair in v.as_array().unwrap() {
        dict.insert(pair[0].as_str().unwrap(), tensor(&pair[1]));
    }
    dict
}

fn assert_close(what: &str, got: &Tensor, want: &Value) {
    assert_eq!(got.shape(), usizes(&want["shape"]), "{what}: shape");
    if want["dtype"] == "int64" {
        assert_eq!(got.dtype(), DType::I64, "{what}: dtype");
        assert_eq!(
            got.to_vec::<i64>().unwrap(),
            tensor(want).to_vec::<i64>().unwrap(),
            "{what}"
        );
        return;
    }
    let got = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    for (i, (g, w)) in got.iter().zip(floats(&want["data"])).enumerate() {
        assert!(
            (g - w).abs() <= ATOL + RTOL * w.abs(),
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

/// Every key of PyTorch's state dict (recorded as `[key, tensor]` pairs), in PyTorch's order,
/// with its values.
fn assert_state(what: &str, module: &dyn Module, want: &Value) {
    let got = module.state_dict();
    let want = want.as_array().unwrap();
    let keys: Vec<&str> = got.keys().collect();
    let want_keys: Vec<&str> = want.iter().map(|p| p[0].as_str().unwrap()).collect();
    assert_eq!(keys, want_keys, "{what}: state_dict keys");
    for ((k, t), pair) in got.iter().zip(want) {
        assert_close(&format!("{what}: {k}"), t, &pair[1]);
    }
}

/// The upstream gradient the script used: `cos(0.37 k + 0.1)`.
fn upstream(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|k| (k as f64 * 0.37 + 0.1).cos()).collect(),
        shape,
    )
    .unwrap()
}

fn backward_from(y: &Tensor) {
    y.mul(&upstream(y.shape()))
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
}

// ----- single layers --------------------------------------------------------------------------

fn layer(name: &str) -> Result<Box<dyn Forward>> {
    Ok(match name {
        "bn1d_2d_train" => Box::new(BatchNorm1d::new(4)?),
        "bn1d_3d_train_momentum_none" => Box::new(BatchNorm1d::new(3)?.momentum(None).eps(1e-3)),
        "bn1d_eval" => Box::new(BatchNorm1d::new(3)?),
        "bn1d_no_running_stats_eval" => Box::new(BatchNorm1d::new(3)?.track_running_stats(false)?),
        "bn2d_train_no_affine" => Box::new(BatchNorm2d::new(3)?.affine(false)?.momentum(Some(0.3))),
        "bn2d_eval_no_bias" => Box::new(BatchNorm2d::new(3)?.without_bias()),
        "group_norm_3d" => Box::new(GroupNorm::new(2, 6)?),
        "group_norm_4d_no_affine" => Box::new(GroupNorm::new(3, 6)?.eps(1e-3).without_affine()),
        "rms_norm" => Box::new(RmsNorm::new(&[3, 4])?),
        "rms_norm_eps_no_affine" => Box::new(
            RmsNorm::new(&[4])?
                .eps(Some(1e-2))
                .without_elementwise_affine(),
        ),
        "silu" => Box::new(Silu::new()),
        "mish" => Box::new(Mish::new()),
        "softplus" => Box::new(Softplus::with_options(2.0, 1.5)),
        "hardtanh" => Box::new(Hardtanh::with_range(-0.5, 0.75)?),
        "relu6" => Box::new(Relu6::new()),
        "elu" => Box::new(Elu::new(0.7)),
        "selu" => Box::new(Selu::new()),
        "celu" => Box::new(Celu::new(1.3)),
        other => panic!("no layer for case {other}"),
    })
}

#[test]
fn layers_match_pytorch_in_train_and_eval_mode() -> Result<()> {
    let cases = data()["layers"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut m = layer(name)?;
        m.to_dtype(DType::F64)?;
        // Strict: the keys are PyTorch's, no more, no fewer.
        m.load_state_dict(&state_dict(&case["state"]))?;
        if name.contains("eval") {
            m.eval();
        }
        for (k, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let what = format!("{name} step {k}");
            let x = leaf(&step["input"]);
            m.zero_grad();
            let y = m.forward(&x)?;
            assert_close(&format!("{what}: output"), &y, &step["output"]);
            backward_from(&y);
            assert_close(
                &format!("{what}: grad input"),
                &x.grad().unwrap(),
                &step["grad_input"],
            );
            let grads = step["grads"].as_object().unwrap();
            assert_eq!(
                m.named_parameters().len(),
                grads.len(),
                "{what}: parameters"
            );
            for (p, t) in m.named_parameters() {
                assert_close(&format!("{what}: grad {p}"), &t.grad().unwrap(), &grads[&p]);
            }
            assert_state(&what, m.as_module(), &step["state_after"]);
        }
    }
    Ok(())
}

#[test]
fn initial_state_dicts_are_pytorchs() -> Result<()> {
    let init = &data()["init"];
    manual_seed(7);
    assert_state("bn1d", &BatchNorm1d::new(5)?, &init["batch_norm1d"]);
    assert_state(
        "bn2d no affine",
        &BatchNorm2d::new(3)?.affine(false)?,
        &init["batch_norm2d_no_affine"],
    );
    assert_state("group_norm", &GroupNorm::new(2, 6)?, &init["group_norm"]);
    assert_state("rms_norm", &RmsNorm::new(&[2, 3])?, &init["rms_norm"]);
    let bn = BatchNorm2d::new(3)?.track_running_stats(false)?;
    assert_eq!(
        bn.state_dict().keys().collect::<Vec<_>>(),
        ["weight", "bias"]
    );
    assert!(bn.buffers().is_empty());
    Ok(())
}

#[test]
fn momentum_none_is_the_cumulative_average_of_the_batches() -> Result<()> {
    let mut bn = BatchNorm1d::new(2)?.momentum(None);
    bn.to_dtype(DType::F64)?;
    let batches = [
        [1.0, 2.0, 3.0, 5.0],
        [7.0, 0.0, 9.0, 2.0],
        [4.0, 4.0, 8.0, 8.0],
    ];
    for b in &batches {
        bn.forward(&Tensor::from_vec(b.to_vec(), &[2, 2])?)?;
    }
    // The running mean is the plain average of the three batch means.
    let means = [(1.0 + 3.0) / 2.0, (7.0 + 9.0) / 2.0, (4.0 + 8.0) / 2.0];
    let rm = bn.running_mean().unwrap().to_vec::<f64>()?;
    assert!((rm[0] - means.iter().sum::<f64>() / 3.0).abs() < 1e-14);
    assert_eq!(bn.num_batches_tracked().unwrap().item::<i64>()?, 3);
    // Evaluation mode neither counts nor updates.
    bn.eval();
    bn.forward(&Tensor::from_vec(vec![100.0, 100.0, -100.0, 0.0], &[2, 2])?)?;
    assert_eq!(bn.running_mean().unwrap().to_vec::<f64>()?, rm);
    assert_eq!(bn.num_batches_tracked().unwrap().item::<i64>()?, 3);
    bn.reset_running_stats()?;
    assert_eq!(bn.running_var().unwrap().to_vec::<f64>()?, [1.0, 1.0]);
    assert_eq!(bn.num_batches_tracked().unwrap().item::<i64>()?, 0);
    Ok(())
}

// ----- interpolate and adaptive pooling ---------------------------------------------------------

fn spatial_usize(v: &Value) -> Option<Spatial<usize>> {
    match v {
        Value::Null => None,
        Value::Array(_) => Some(Spatial::Each(usizes(v))),
        _ => Some(Spatial::All(v.as_u64().unwrap() as usize)),
    }
}

fn mode(v: &Value) -> InterpolateMode {
    match v.as_str().unwrap() {
        "nearest" => InterpolateMode::Nearest,
        "nearest-exact" => InterpolateMode::NearestExact,
        "linear" => InterpolateMode::Linear,
        "bilinear" => InterpolateMode::Bilinear,
        "trilinear" => InterpolateMode::Trilinear,
        "area" => InterpolateMode::Area,
        other => panic!("mode {other}"),
    }
}

fn run_resize(case: &Value, x: &Tensor) -> Result<Tensor> {
    if case["op"] == "adaptive_avg_pool2d" {
        let size: Spatial<Option<usize>> = match &case["output_size"] {
            Value::Array(a) => {
                Spatial::Each(a.iter().map(|v| v.as_u64().map(|v| v as usize)).collect())
            }
            v => Spatial::All(Some(v.as_u64().unwrap() as usize)),
        };
        return F::adaptive_avg_pool2d(x, size);
    }
    let scale = match &case["scale_factor"] {
        Value::Null => None,
        Value::Array(_) => Some(Spatial::Each(floats(&case["scale_factor"]))),
        v => Some(Spatial::All(v.as_f64().unwrap())),
    };
    F::interpolate(
        x,
        spatial_usize(&case["size"]),
        scale,
        mode(&case["mode"]),
        case["align_corners"].as_bool(),
        case["recompute_scale_factor"].as_bool(),
    )
}

#[test]
fn interpolate_and_adaptive_pooling_match_pytorch() -> Result<()> {
    let cases = data()["resize"].as_array().unwrap();
    assert_eq!(cases.len(), 25);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let x = leaf(&case["input"]);
        let y = run_resize(case, &x)?;
        assert_close(&format!("{name}: output"), &y, &case["output"]);
        backward_from(&y);
        assert_close(
            &format!("{name}: grad input"),
            &x.grad().unwrap(),
            &case["grad_input"],
        );
    }
    Ok(())
}

#[test]
fn resizing_is_differentiable_twice() -> Result<()> {
    let x = Tensor::randn(&[1, 2, 3, 4], DType::F64)?.requires_grad_(true)?;
    let fs: [fn(&Tensor) -> Result<Tensor>; 4] = [
        |x| {
            F::interpolate(
                x,
                Some((5, 3).into()),
                None,
                InterpolateMode::Bilinear,
                None,
                None,
            )
        },
        |x| {
            let s = Some(Spatial::Each(vec![1.5, 2.0]));
            F::interpolate(x, None, s, InterpolateMode::Bilinear, Some(true), None)
        },
        |x| {
            F::interpolate(
                x,
                Some(7.into()),
                None,
                InterpolateMode::Nearest,
                None,
                None,
            )
        },
        |x| F::adaptive_avg_pool2d(x, (2, 3)),
    ];
    for f in fs {
        gradcheck(|t| f(&t[0]), std::slice::from_ref(&x))?;
        gradgradcheck(|t| f(&t[0]), std::slice::from_ref(&x))?;
    }
    Ok(())
}

#[test]
fn nearest_indices_use_pytorchs_float_scale() -> Result<()> {
    // PyTorch's `floorf(dst * (float)(in / out))`: output 23 of 46 over 14 inputs is exactly
    // input 7 in real numbers, but 23 · 0.30434781f32 is just below 7, so PyTorch reads 6
    // (in every dtype, as here).
    let x = Tensor::from_vec((0..14).map(f64::from).collect(), &[1, 1, 14])?;
    let y = F::interpolate(
        &x,
        Some(46.into()),
        None,
        InterpolateMode::Nearest,
        None,
        None,
    )?;
    let y = y.to_vec::<f64>()?;
    assert_eq!((y[22], y[23], y[24]), (6.0, 6.0, 7.0));
    // And with a scale factor the kernel scales by 1 / 1.5 (7 inputs, 10 outputs).
    let x = Tensor::from_vec((0..7).map(|v| v as f32).collect(), &[1, 1, 7])?;
    let up = Upsample::with_scale_factor(1.5);
    assert_eq!(
        up.forward(&x)?.to_vec::<f32>()?,
        [0.0, 0.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0]
    );
    Ok(())
}

// ----- errors and reprs ---------------------------------------------------------------------------

fn err_of<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn errors_are_pytorchs() -> Result<()> {
    let e = &data()["errors"];
    let z = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
    let want = |k: &str| e[k].as_str().unwrap().to_owned();
    let nearest = InterpolateMode::Nearest;
    let bilinear = InterpolateMode::Bilinear;
    let cases: Vec<(&str, String)> = vec![
        (
            "bn1d_4d",
            err_of(BatchNorm1d::new(3)?.forward(&z(&[2, 3, 4, 5]))),
        ),
        (
            "bn2d_3d",
            err_of(BatchNorm2d::new(3)?.forward(&z(&[2, 3, 4]))),
        ),
        (
            "bn3d_4d",
            err_of(BatchNorm3d::new(3)?.forward(&z(&[2, 3, 4, 4]))),
        ),
        (
            "bn1d_one_value",
            err_of(BatchNorm1d::new(3)?.forward(&z(&[1, 3]))),
        ),
        (
            "bn1d_channels",
            err_of(BatchNorm1d::new(3)?.forward(&z(&[2, 4]))),
        ),
        ("bn1d_channels_eval", {
            let mut bn = BatchNorm1d::new(3)?;
            bn.eval();
            err_of(bn.forward(&z(&[2, 4])))
        }),
        ("gn_divisible", err_of(GroupNorm::new(4, 6))),
        (
            "gn_channels",
            err_of(GroupNorm::new(2, 4)?.forward(&z(&[2, 6, 3]))),
        ),
        (
            "rms_shape",
            err_of(RmsNorm::new(&[4])?.forward(&z(&[2, 3]))),
        ),
        (
            "adaptive_2d",
            err_of(F::adaptive_avg_pool2d(&z(&[2, 3]), 2)),
        ),
        (
            "adaptive_5d",
            err_of(F::adaptive_avg_pool2d(&z(&[2, 3, 4, 5, 6]), 2)),
        ),
        (
            "adaptive_len",
            err_of(F::adaptive_avg_pool2d(&z(&[2, 3, 4, 5]), [Some(2); 3])),
        ),
        (
            "adaptive_short",
            err_of(F::adaptive_avg_pool2d(&z(&[3, 4]), (None, Some(2)))),
        ),
        (
            "adaptive_empty",
            err_of(F::adaptive_avg_pool2d(&z(&[2, 3, 0, 5]), (2, 2))),
        ),
        (
            "interp_neither",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                None,
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_both",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                Some(3.into()),
                Some(2.0.into()),
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_align_nearest",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                Some(3.into()),
                None,
                nearest,
                Some(true),
                None,
            )),
        ),
        (
            "interp_bilinear_3d",
            err_of(F::interpolate(
                &z(&[2, 3, 4]),
                Some(3.into()),
                None,
                bilinear,
                None,
                None,
            )),
        ),
        (
            "interp_linear_4d",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 4]),
                Some(3.into()),
                None,
                InterpolateMode::Linear,
                None,
                None,
            )),
        ),
        (
            "interp_size_len",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                Some((3, 4, 5).into()),
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_scale_len",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                None,
                Some((3.0, 4.0, 5.0).into()),
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_2d",
            err_of(F::interpolate(
                &z(&[2, 3]),
                Some(3.into()),
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_zero_out",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                Some((0, 3).into()),
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_zero_scale",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                None,
                Some(0.1.into()),
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_zero_in",
            err_of(F::interpolate(
                &z(&[2, 3, 0, 5]),
                Some((2, 3).into()),
                None,
                bilinear,
                None,
                None,
            )),
        ),
        (
            "interp_zero_1d",
            err_of(F::interpolate(
                &z(&[2, 3, 4]),
                Some(0.into()),
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_zero_3d",
            err_of(F::interpolate(
                &z(&[1, 1, 2, 3, 4]),
                Some((1, 0, 2).into()),
                None,
                nearest,
                None,
                None,
            )),
        ),
        (
            "interp_recompute_size",
            err_of(F::interpolate(
                &z(&[2, 3, 4, 5]),
                Some(3.into()),
                None,
                nearest,
                None,
                Some(true),
            )),
        ),
        ("hardtanh_range", err_of(Hardtanh::with_range(2.0, 1.0))),
    ];
    assert_eq!(cases.len(), e.as_object().unwrap().len());
    for (k, got) in cases {
        assert_eq!(got, want(k), "{k}");
    }
    Ok(())
}

#[test]
fn reprs_are_pytorchs() -> Result<()> {
    let r = &data()["reprs"];
    let bilinear = InterpolateMode::Bilinear;
    let modules: Vec<(&str, Box<dyn Module>)> = vec![
        ("bn1d", Box::new(BatchNorm1d::new(4)?)),
        (
            "bn2d_options",
            Box::new(
                BatchNorm2d::new(3)?
                    .eps(1e-3)
                    .momentum(None)
                    .affine(false)?
                    .track_running_stats(false)?,
            ),
        ),
        (
            "bn2d_no_bias",
            Box::new(BatchNorm2d::new(3)?.momentum(Some(0.25)).without_bias()),
        ),
        ("bn3d", Box::new(BatchNorm3d::new(2)?)),
        ("gn", Box::new(GroupNorm::new(2, 4)?)),
        (
            "gn_options",
            Box::new(GroupNorm::new(2, 4)?.eps(1e-6).without_affine()),
        ),
        ("rms", Box::new(RmsNorm::new(&[4])?)),
        (
            "rms_options",
            Box::new(
                RmsNorm::new(&[2, 3])?
                    .eps(Some(1e-6))
                    .without_elementwise_affine(),
            ),
        ),
        ("pool_1", Box::new(AdaptiveAvgPool2d::new(1))),
        (
            "pool_none",
            Box::new(AdaptiveAvgPool2d::new((None, Some(7)))),
        ),
        ("pool_pair", Box::new(AdaptiveAvgPool2d::new((5, 7)))),
        ("up_scale", Box::new(Upsample::with_scale_factor(2.0))),
        (
            "up_size_pair",
            Box::new(
                Upsample::with_size((4, 6))
                    .mode(bilinear)
                    .align_corners(Some(true)),
            ),
        ),
        ("up_size", Box::new(Upsample::with_size(5).mode(bilinear))),
        (
            "up_scale_pair",
            Box::new(Upsample::with_scale_factor((2.0, 1.5)).mode(InterpolateMode::NearestExact)),
        ),
        ("silu", Box::new(Silu::new())),
        ("mish", Box::new(Mish::new())),
        ("softplus", Box::new(Softplus::new())),
        (
            "softplus_options",
            Box::new(Softplus::with_options(2.0, 10.0)),
        ),
        ("hardtanh", Box::new(Hardtanh::new())),
        (
            "hardtanh_options",
            Box::new(Hardtanh::with_range(-2.0, 3.0)?),
        ),
        ("relu6", Box::new(Relu6::new())),
        ("elu", Box::new(Elu::default())),
        ("selu", Box::new(Selu::new())),
        ("celu", Box::new(Celu::new(0.5))),
    ];
    assert_eq!(modules.len() + 1, r.as_object().unwrap().len());
    for (k, m) in modules {
        assert_eq!(m.repr(), r[k].as_str().unwrap(), "{k}");
    }
    Ok(())
}

// ----- a ResNet block, declared with the derive -------------------------------------------------

#[derive(Debug, Module)]
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    downsample: Sequential,
}

impl BasicBlock {
    fn new(cin: usize, cout: usize, stride: usize) -> Result<BasicBlock> {
        Ok(BasicBlock {
            conv1: Conv2d::new(cin, cout, 3)?
                .stride(stride)
                .padding(1)
                .without_bias(),
            bn1: BatchNorm2d::new(cout)?,
            conv2: Conv2d::new(cout, cout, 3)?.padding(1).without_bias(),
            bn2: BatchNorm2d::new(cout)?,
            downsample: Sequential::new()
                .add(Conv2d::new(cin, cout, 1)?.stride(stride).without_bias())
                .add(BatchNorm2d::new(cout)?),
        })
    }
}

impl Forward for BasicBlock {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?;
        out.add(&self.downsample.forward(x)?)?.relu()
    }
}

#[derive(Debug, Module)]
struct Net {
    block: BasicBlock,
    pool: AdaptiveAvgPool2d,
    fc: Linear,
}

impl Forward for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let pooled = self.pool.forward(&self.block.forward(x)?)?;
        self.fc.forward(&pooled.flatten(1, -1)?)
    }
}

fn net() -> Result<Net> {
    Ok(Net {
        block: BasicBlock::new(3, 4, 2)?,
        pool: AdaptiveAvgPool2d::new(1),
        fc: Linear::new(4, 3)?,
    })
}

#[test]
fn resnet_block_starts_from_pytorchs_weights_and_prints_as_pytorch() -> Result<()> {
    manual_seed(7);
    let net = net()?;
    assert_state("resnet init", &net, &data()["init"]["resnet"]);
    assert_eq!(net.to_string(), data()["reprs"]["resnet"].as_str().unwrap());
    Ok(())
}

#[test]
fn resnet_block_loads_pytorchs_checkpoint_and_matches_it_in_train_and_eval_mode() -> Result<()> {
    let mut net = net()?;
    net.to_dtype(DType::F64)?;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/nn/data/norm_resnet.safetensors"
    );
    net.load_state_dict(&StateDict::load(path)?)?;
    assert_eq!(
        net.block.bn1.num_batches_tracked().unwrap().item::<i64>()?,
        5
    );
    for step in data()["resnet"]["steps"].as_array().unwrap() {
        let what = step["mode"].as_str().unwrap();
        if what == "train" {
            net.train();
        } else {
            net.eval();
        }
        net.zero_grad();
        let x = leaf(&step["input"]);
        let y = net.forward(&x)?;
        assert_close(&format!("{what}: output"), &y, &step["output"]);
        backward_from(&y);
        assert_close(
            &format!("{what}: grad input"),
            &x.grad().unwrap(),
            &step["grad_input"],
        );
        let grads = step["grads"].as_object().unwrap();
        assert_eq!(net.named_parameters().len(), grads.len());
        for (p, t) in net.named_parameters() {
            assert_close(&format!("{what}: grad {p}"), &t.grad().unwrap(), &grads[&p]);
        }
        // The running statistics (and batch counts) moved in training mode only.
        assert_state(what, &net, &step["state_after"]);
    }
    // What we save is what PyTorch would load: the same keys, int64 batch counts.
    let saved = net.state_dict();
    assert_eq!(
        saved.get("block.bn2.num_batches_tracked").unwrap().dtype(),
        DType::I64
    );
    assert_eq!(
        saved
            .get("block.bn2.num_batches_tracked")
            .unwrap()
            .item::<i64>()?,
        6
    );
    Ok(())
}

#[test]
fn integer_inputs_are_refused_as_pytorch_refuses_them() -> Result<()> {
    // PyTorch 2.15, int32 inputs of 3 channels: each mode's kernel refuses the dtype.
    let cases: [(&[usize], InterpolateMode, Vec<usize>, &str); 5] = [
        (
            &[1, 3, 2, 2],
            InterpolateMode::Bilinear,
            vec![3, 3],
            "upsample_bilinear2d_channels_last",
        ),
        (
            &[1, 3, 2, 2],
            InterpolateMode::Nearest,
            vec![3, 3],
            "upsample_nearest2d_channels_last",
        ),
        (
            &[1, 3, 2],
            InterpolateMode::Linear,
            vec![3],
            "compute_indices_weights_linear",
        ),
        (
            &[1, 3, 2],
            InterpolateMode::Nearest,
            vec![3],
            "compute_indices_weights_nearest",
        ),
        (
            &[1, 3, 2, 2],
            InterpolateMode::Area,
            vec![3, 3],
            "adaptive_avg_pool2d",
        ),
    ];
    for (shape, mode, size, kernel) in cases {
        let x = Tensor::ones(shape, DType::I32)?;
        let err = F::interpolate(&x, Some(Spatial::Each(size)), None, mode, None, None)
            .expect_err("an integer input is refused");
        assert_eq!(
            err.to_string(),
            format!("\"{kernel}\" not implemented for 'Int'")
        );
    }
    Ok(())
}
