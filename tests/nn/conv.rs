//! `conv2d`, `max_pool2d`, `avg_pool2d` and their modules (`Conv2d`, `MaxPool2d`, `AvgPool2d`,
//! `Flatten`) against PyTorch: outputs and gradients recorded in f64 by `benches/record_conv.py`
//! (`tests/nn/data/conv.json`, replayed at rtol 1e-10), PyTorch's error texts, gradcheck and
//! gradgradcheck, and the shapes through a small CNN.

use autograd::nn::functional as F;
use autograd::nn::{AvgPool2d, Conv2d, Flatten, Forward, MaxPool2d, Module, Size2};
use autograd::{BackwardOptions, DType, Error, Result, Tensor, gradcheck, gradgradcheck};
use serde_json::Value;

const DATA: &str = include_str!("data/conv.json");
const RTOL: f64 = 1e-10;
const ATOL: f64 = 1e-12;

fn data() -> Value {
    serde_json::from_str(DATA).expect("tests/nn/data/conv.json parses")
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("a size") as usize)
        .collect()
}

fn pair(v: &Value) -> [usize; 2] {
    let p = usizes(v);
    [p[0], p[1]]
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// A recorded tensor (`{"shape", "data"}`) as an f64 leaf that requires grad.
fn leaf(v: &Value) -> Tensor {
    Tensor::from_vec(floats(&v["data"]), &usizes(&v["shape"]))
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn assert_close(what: &str, got: &Tensor, expected: &Value) {
    assert_eq!(got.shape(), usizes(&expected["shape"]), "{what}: shape");
    let got = got.to_vec::<f64>().unwrap();
    let want = floats(&expected["data"]);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= ATOL + RTOL * w.abs(),
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

// ----- replay of PyTorch's numbers -------------------------------------------------------------

#[test]
fn conv2d_matches_pytorch() {
    let data = data();
    let cases = data["conv2d"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let x = leaf(&case["input"]);
        let w = leaf(&case["weight"]);
        let b = (!case["bias"].is_null()).then(|| leaf(&case["bias"]));
        let y = F::conv2d(
            &x,
            &w,
            b.as_ref(),
            pair(&case["stride"]),
            pair(&case["padding"]),
            pair(&case["dilation"]),
            case["groups"].as_u64().unwrap() as usize,
        )
        .unwrap();
        assert_close(&format!("{name}: output"), &y, &case["output"]);
        let g = leaf(&case["grad_output"]).detach();
        y.backward_with(BackwardOptions::new().gradient(g)).unwrap();
        assert_close(
            &format!("{name}: grad input"),
            &x.grad().unwrap(),
            &case["grad_input"],
        );
        assert_close(
            &format!("{name}: grad weight"),
            &w.grad().unwrap(),
            &case["grad_weight"],
        );
        if let Some(b) = &b {
            assert_close(
                &format!("{name}: grad bias"),
                &b.grad().unwrap(),
                &case["grad_bias"],
            );
        }
    }
}

fn run_pool(case: &Value, x: &Tensor) -> Result<Tensor> {
    let (k, s, p) = (
        pair(&case["kernel_size"]),
        pair(&case["stride"]),
        pair(&case["padding"]),
    );
    let ceil = case["ceil_mode"].as_bool().unwrap();
    match case["op"].as_str().unwrap() {
        "max" => F::max_pool2d(x, k, s, p, pair(&case["dilation"]), ceil),
        _ => F::avg_pool2d(
            x,
            k,
            s,
            p,
            ceil,
            case["count_include_pad"].as_bool().unwrap(),
            case["divisor_override"].as_u64().map(|d| d as usize),
        ),
    }
}

#[test]
fn pooling_matches_pytorch() {
    let data = data();
    let cases = data["pool2d"].as_array().unwrap();
    assert!(cases.len() >= 14);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let x = leaf(&case["input"]);
        let y = run_pool(case, &x).unwrap();
        assert_close(&format!("{name}: output"), &y, &case["output"]);
        let g = leaf(&case["grad_output"]).detach();
        y.backward_with(BackwardOptions::new().gradient(g)).unwrap();
        assert_close(
            &format!("{name}: grad input"),
            &x.grad().unwrap(),
            &case["grad_input"],
        );
    }
}

/// The recorded tie cases really have ties, and the gradient of each window goes to one entry:
/// the first maximum in row-major order, as PyTorch's (checked here without the recording too).
#[test]
fn max_pool_ties_send_the_gradient_to_the_first_maximum() {
    let x = Tensor::from_vec(
        vec![1.0f64, 3.0, 3.0, 0.0, 3.0, 3.0, 2.0, 3.0, 1.0],
        &[1, 1, 3, 3],
    )
    .unwrap()
    .requires_grad_(true)
    .unwrap();
    // Four overlapping 2×2 windows, each with several 3s.
    let y = F::max_pool2d(&x, 2, 1, 0, 1, false).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![3.0; 4]);
    y.sum().unwrap().backward().unwrap();
    // Windows: (0,0) first max at (0,1); (0,1) at (0,1); (1,0) at (1,1); (1,1) at (1,1).
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![0.0, 2.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    );
    let data = data();
    let tie_cases: Vec<&Value> = data["pool2d"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().contains("ties"))
        .collect();
    assert_eq!(tie_cases.len(), 2);
    for case in tie_cases {
        let input = floats(&case["input"]["data"]);
        let distinct: std::collections::BTreeSet<u64> = input.iter().map(|v| v.to_bits()).collect();
        assert!(distinct.len() <= 3, "few distinct values, so windows tie");
    }
}

// ----- errors, in PyTorch's words ---------------------------------------------------------------

#[test]
fn errors_match_pytorch() {
    let data = data();
    let cases = data["errors"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let x = Tensor::zeros(&usizes(&case["input_shape"]), DType::F64).unwrap();
        let args = &case["args"];
        let size = |key: &str, default: [usize; 2]| -> [usize; 2] {
            if args[key].is_null() {
                default
            } else {
                pair(&args[key])
            }
        };
        let result = match case["op"].as_str().unwrap() {
            "conv2d" => {
                let w = Tensor::zeros(&usizes(&case["weight_shape"]), DType::F64).unwrap();
                let b = (!case["bias_shape"].is_null())
                    .then(|| Tensor::zeros(&usizes(&case["bias_shape"]), DType::F64).unwrap());
                F::conv2d(
                    &x,
                    &w,
                    b.as_ref(),
                    size("stride", [1, 1]),
                    size("padding", [0, 0]),
                    size("dilation", [1, 1]),
                    args["groups"].as_u64().unwrap_or(1) as usize,
                )
            }
            "max_pool2d" => {
                let k = size("kernel_size", [0, 0]);
                F::max_pool2d(
                    &x,
                    k,
                    size("stride", k),
                    size("padding", [0, 0]),
                    size("dilation", [1, 1]),
                    false,
                )
            }
            _ => {
                let k = size("kernel_size", [0, 0]);
                F::avg_pool2d(
                    &x,
                    k,
                    size("stride", k),
                    size("padding", [0, 0]),
                    false,
                    true,
                    args["divisor_override"].as_u64().map(|d| d as usize),
                )
            }
        };
        let want = case["message"].as_str().unwrap();
        match result {
            Ok(y) => panic!("{case}: no error, output of shape {:?}", y.shape()),
            Err(e) => assert_eq!(e.to_string(), want, "{case}"),
        }
    }
}

#[test]
fn module_errors_match_pytorch() {
    let _rng = crate::common::global_rng(0);
    let msg = |r: Result<Conv2d>| r.unwrap_err().to_string();
    assert_eq!(
        msg(Conv2d::new(3, 4, 3).unwrap().groups(2)),
        "in_channels must be divisible by groups"
    );
    assert_eq!(
        msg(Conv2d::new(4, 3, 3).unwrap().groups(2)),
        "out_channels must be divisible by groups"
    );
    assert_eq!(
        msg(Conv2d::new(4, 4, 3).unwrap().groups(0)),
        "groups must be a positive integer"
    );
    let e = Flatten::with_dims(2, 1)
        .forward(&Tensor::zeros(&[2, 3, 4], DType::F32).unwrap())
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    assert_eq!(
        e.to_string(),
        "flatten() has invalid args: start_dim cannot come after end_dim"
    );
    let e = Flatten::with_dims(0, 5)
        .forward(&Tensor::zeros(&[2, 3], DType::F32).unwrap())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Dimension out of range (expected to be in range of [-2, 1], but got 5)"
    );
    let e = Flatten::new()
        .forward(&Tensor::zeros(&[3], DType::F32).unwrap())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    // Mixed dtypes are refused, not promoted.
    let conv = Conv2d::new(1, 1, 3).unwrap();
    let e = conv
        .forward(&Tensor::zeros(&[1, 1, 4, 4], DType::F64).unwrap())
        .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
}

// ----- gradcheck and gradgradcheck (f64, small) -----------------------------------------------------

/// Deterministic values in [-1, 1], distinct (no ties for the max pool's finite differences).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n)
        .map(|i| {
            let t = (i as f64 + 1.0) * 0.618_033_988_749_895 + seed as f64 * 0.414_213_562;
            2.0 * (t - t.floor()) - 1.0
        })
        .collect();
    // Distinct by construction (irrational steps); spread them a little more apart.
    v.iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x += i as f64 * 1e-3);
    v
}

fn arg(shape: &[usize], seed: u64) -> Tensor {
    Tensor::from_vec(values(shape.iter().product(), seed), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn conv_inputs() -> Vec<Tensor> {
    vec![arg(&[2, 2, 4, 5], 1), arg(&[4, 1, 2, 3], 2), arg(&[4], 3)]
}

fn conv_f(i: &[Tensor]) -> Result<Tensor> {
    // Groups, stride, padding and dilation at once.
    F::conv2d(&i[0], &i[1], Some(&i[2]), (2, 1), 1, (1, 2), 2)
}

#[test]
fn conv2d_gradcheck() -> Result<()> {
    gradcheck(conv_f, &conv_inputs())?;
    gradcheck(
        |i| F::conv2d(&i[0], &i[1], None, 1, 0, 1, 1),
        &[arg(&[1, 3, 4, 4], 4), arg(&[2, 3, 3, 2], 5)],
    )
}

#[test]
fn conv2d_gradgradcheck() -> Result<()> {
    gradgradcheck(conv_f, &conv_inputs())?;
    gradgradcheck(
        |i| F::conv2d(&i[0], &i[1], None, 1, 1, 1, 1),
        &[arg(&[3, 4, 4], 6), arg(&[2, 3, 2, 2], 7)],
    )
}

#[test]
fn max_pool2d_gradcheck_and_gradgradcheck() -> Result<()> {
    let f = |i: &[Tensor]| F::max_pool2d(&i[0], 3, 2, 1, 1, true);
    let g = |i: &[Tensor]| F::max_pool2d(&i[0], (2, 3), 1, (1, 0), (2, 1), false);
    gradcheck(f, &[arg(&[2, 2, 5, 6], 8)])?;
    gradgradcheck(f, &[arg(&[2, 2, 5, 6], 8)])?;
    gradcheck(g, &[arg(&[1, 2, 5, 5], 9)])?;
    gradgradcheck(g, &[arg(&[1, 2, 5, 5], 9)])
}

#[test]
fn avg_pool2d_gradcheck_and_gradgradcheck() -> Result<()> {
    let f = |i: &[Tensor]| F::avg_pool2d(&i[0], 3, 2, 1, true, false, None);
    let g = |i: &[Tensor]| F::avg_pool2d(&i[0], (2, 3), (1, 2), (1, 1), false, true, Some(5));
    gradcheck(f, &[arg(&[2, 2, 6, 6], 10)])?;
    gradgradcheck(f, &[arg(&[2, 2, 6, 6], 10)])?;
    gradcheck(g, &[arg(&[1, 2, 5, 6], 11)])?;
    gradgradcheck(g, &[arg(&[1, 2, 5, 6], 11)])
}

// ----- modules ----------------------------------------------------------------------------------

#[test]
fn conv2d_module_matches_the_function_and_names_parameters_as_pytorch() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let conv = Conv2d::new(4, 6, (3, 2))?
        .stride(2)
        .padding((1, 0))
        .dilation((1, 2))
        .groups(2)?;
    assert_eq!(conv.weight().shape(), &[6, 2, 3, 2]);
    assert_eq!(conv.bias().unwrap().shape(), &[6]);
    let keys: Vec<String> = conv.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, ["weight", "bias"]);
    assert_eq!(conv.parameter_count(), 6 * 2 * 3 * 2 + 6);
    let x = Tensor::randn_seeded(&[2, 4, 7, 7], DType::F32, 3)?;
    let y = conv.forward(&x)?;
    let want = F::conv2d(&x, conv.weight(), conv.bias(), 2, (1, 0), (1, 2), 2)?;
    assert_eq!(y.shape(), &[2, 6, 4, 3]);
    assert_eq!(y.to_vec::<f32>()?, want.to_vec::<f32>()?);
    // Without a bias: one parameter, and the output is the weight's part alone (the same
    // weight from the same seed).
    autograd::manual_seed(0);
    let plain = Conv2d::new(4, 6, (3, 2))?
        .stride(2)
        .padding((1, 0))
        .dilation((1, 2))
        .groups(2)?
        .without_bias();
    assert_eq!(plain.named_parameters().len(), 1);
    assert_eq!(
        plain.weight().to_vec::<f32>()?,
        conv.weight().to_vec::<f32>()?
    );
    let with_bias = plain
        .forward(&x)?
        .add(&conv.bias().unwrap().reshape(&[6, 1, 1])?)?;
    let (a, b) = (with_bias.to_vec::<f32>()?, y.to_vec::<f32>()?);
    assert!(
        a.iter()
            .zip(&b)
            .all(|(p, q)| (p - q).abs() <= 1e-6 * q.abs().max(1.0))
    );
    Ok(())
}

/// PyTorch's default init: uniform in ±1/√fan_in, `fan_in = in/groups · kh · kw`, for weight and
/// bias; seeded, so the same seed gives the same layer.
#[test]
fn conv2d_init_is_pytorchs_default() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    for (cin, cout, k, groups) in [(16, 32, 3, 1), (8, 8, 5, 4), (3, 64, 2, 1)] {
        let conv = Conv2d::new(cin, cout, k)?.groups(groups)?;
        let bound = 1.0 / ((cin / groups * k * k) as f32).sqrt();
        for p in conv.parameters() {
            assert!(p.requires_grad() && p.is_leaf());
            let v = p.to_vec::<f32>()?;
            let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!(
                max <= bound,
                "{cin}->{cout} k{k} g{groups}: {max} > {bound}"
            );
            let mean = v.iter().sum::<f32>() / v.len() as f32;
            assert!(mean.abs() < bound / 2.0, "mean {mean}");
        }
        let w = conv.weight().to_vec::<f32>()?;
        let max = w.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        assert!(
            max > 0.9 * bound,
            "the weight spans its bound: {max} vs {bound}"
        );
    }
    // The same seed gives the same layer; the stream moves on after it.
    autograd::manual_seed(5);
    let a = Conv2d::new(2, 3, 3)?;
    autograd::manual_seed(5);
    let b = Conv2d::new(2, 3, 3)?;
    let c = Conv2d::new(2, 3, 3)?;
    assert_eq!(a.weight().to_vec::<f32>()?, b.weight().to_vec::<f32>()?);
    assert_ne!(a.weight().to_vec::<f32>()?, c.weight().to_vec::<f32>()?);
    // `groups` draws what a layer built with the option from the start draws, and leaves the
    // generator where that layer leaves it.
    autograd::manual_seed(6);
    let g1 = Conv2d::new(4, 4, 3)?.groups(2)?;
    let after1 = Tensor::rand(&[3], DType::F32)?.to_vec::<f32>()?;
    autograd::manual_seed(6);
    let g2 = Conv2d::new(4, 4, 3)?.groups(4)?.groups(2)?;
    let after2 = Tensor::rand(&[3], DType::F32)?.to_vec::<f32>()?;
    assert_eq!(g1.weight().to_vec::<f32>()?, g2.weight().to_vec::<f32>()?);
    assert_eq!(
        g1.bias().unwrap().to_vec::<f32>()?,
        g2.bias().unwrap().to_vec::<f32>()?
    );
    assert_eq!(after1, after2);
    Ok(())
}

#[test]
fn pool_modules_use_pytorchs_defaults() -> Result<()> {
    let x = arg(&[2, 3, 7, 6], 12);
    // MaxPool2d(k): stride = k, padding 0, dilation 1, floor.
    let y = MaxPool2d::new(2).forward(&x)?;
    assert_eq!(y.shape(), &[2, 3, 3, 3]);
    assert_eq!(
        y.to_vec::<f64>()?,
        F::max_pool2d(&x, 2, 2, 0, 1, false)?.to_vec::<f64>()?
    );
    let y = MaxPool2d::new((3, 2))
        .stride(2)
        .padding(1)
        .dilation((1, 2))
        .ceil_mode(true)
        .forward(&x)?;
    let want = F::max_pool2d(&x, (3, 2), 2, 1, (1, 2), true)?;
    assert_eq!(y.to_vec::<f64>()?, want.to_vec::<f64>()?);
    let y = AvgPool2d::new(3).forward(&x)?;
    assert_eq!(y.shape(), &[2, 3, 2, 2]);
    assert_eq!(
        y.to_vec::<f64>()?,
        F::avg_pool2d(&x, 3, 3, 0, false, true, None)?.to_vec::<f64>()?
    );
    let y = AvgPool2d::new(2)
        .stride(1)
        .padding(1)
        .ceil_mode(true)
        .count_include_pad(false)
        .divisor_override(Some(3))
        .forward(&x)?;
    let want = F::avg_pool2d(&x, 2, 1, 1, true, false, Some(3))?;
    assert_eq!(y.to_vec::<f64>()?, want.to_vec::<f64>()?);
    assert!(MaxPool2d::new(2).parameters().is_empty());
    assert!(AvgPool2d::new(2).parameters().is_empty());
    assert!(Flatten::default().parameters().is_empty());
    Ok(())
}

#[test]
fn flatten_merges_dims_as_pytorch() -> Result<()> {
    let x = arg(&[2, 3, 4, 5], 13);
    assert_eq!(Flatten::new().forward(&x)?.shape(), &[2, 60]);
    assert_eq!(Flatten::with_dims(0, -1).forward(&x)?.shape(), &[120]);
    assert_eq!(Flatten::with_dims(1, 2).forward(&x)?.shape(), &[2, 12, 5]);
    assert_eq!(
        Flatten::with_dims(-1, -1).forward(&x)?.shape(),
        &[2, 3, 4, 5]
    );
    assert_eq!(
        Flatten::with_dims(0, 0)
            .forward(&Tensor::scalar(2.0f64))?
            .shape(),
        &[1]
    );
    // Values in C order, and the gradient flows back through.
    let y = Flatten::new().forward(&x)?;
    assert_eq!(y.to_vec::<f64>()?, x.to_vec::<f64>()?);
    y.sum()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0; 120]);
    Ok(())
}

/// The main job's CNN, chained by hand: shapes at each step, unbatched input, and gradients on
/// every parameter.
#[test]
fn cnn_chain_shapes() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let conv1 = Conv2d::new(1, 16, 3)?.padding(1);
    let conv2 = Conv2d::new(16, 32, 3)?.padding(1);
    let pool = MaxPool2d::new(2);
    let flatten = Flatten::new();
    let forward = |x: &Tensor| -> Result<Vec<Tensor>> {
        let a = conv1.forward(x)?.relu()?;
        let b = pool.forward(&a)?;
        let c = conv2.forward(&b)?.relu()?;
        let d = pool.forward(&c)?;
        let e = flatten.forward(&d)?;
        Ok(vec![a, b, c, d, e])
    };
    let x = Tensor::randn_seeded(&[64, 1, 8, 8], DType::F32, 4)?;
    let steps = forward(&x)?;
    let shapes: Vec<&[usize]> = steps.iter().map(Tensor::shape).collect();
    assert_eq!(
        shapes,
        [
            &[64, 16, 8, 8][..],
            &[64, 16, 4, 4],
            &[64, 32, 4, 4],
            &[64, 32, 2, 2],
            &[64, 128]
        ]
    );
    steps[4].sum()?.backward()?;
    for p in conv1.parameters().iter().chain(&conv2.parameters()) {
        let g = p.grad().expect("every parameter gets a gradient");
        assert_eq!(g.shape(), p.shape());
        assert!(g.to_vec::<f32>()?.iter().any(|v| *v != 0.0));
    }
    // Unbatched [C, H, W]: the batched result's first entry.
    let one = x.narrow(0, 0, 1)?.reshape(&[1, 8, 8])?;
    let steps_one = forward(&one)?;
    let shapes: Vec<&[usize]> = steps_one.iter().map(Tensor::shape).collect();
    assert_eq!(
        shapes,
        [
            &[16, 8, 8][..],
            &[16, 4, 4],
            &[32, 4, 4],
            &[32, 2, 2],
            &[32, 4]
        ]
    );
    let batched = steps[3].narrow(0, 0, 1)?.to_vec::<f32>()?;
    let single = steps_one[3].to_vec::<f32>()?;
    assert!(
        batched
            .iter()
            .zip(&single)
            .all(|(a, b)| (a - b).abs() <= 1e-5)
    );
    assert_eq!(Size2::from(2), Size2([2, 2]));
    Ok(())
}

#[test]
fn empty_batch_gives_an_empty_result() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let conv = Conv2d::new(2, 3, 3)?.padding(1);
    let y = conv.forward(&Tensor::zeros(&[0, 2, 5, 5], DType::F32)?)?;
    assert_eq!(y.shape(), &[0, 3, 5, 5]);
    let y = MaxPool2d::new(2).forward(&Tensor::zeros(&[0, 2, 4, 4], DType::F32)?)?;
    assert_eq!(y.shape(), &[0, 2, 2, 2]);
    let y = AvgPool2d::new(2).forward(&Tensor::zeros(&[0, 2, 4, 4], DType::F32)?)?;
    assert_eq!(y.shape(), &[0, 2, 2, 2]);
    Ok(())
}

/// On a device other than the CPU (`Virtual(1)`: host memory, scheduled as an accelerator), the
/// layers build their constants (padding row, divisors) there and give the CPU's numbers, with
/// the gradients on that device.
#[test]
fn layers_run_on_another_device() -> Result<()> {
    let device = autograd::Device::Virtual(1);
    let x_cpu = arg(&[2, 2, 5, 5], 14);
    let w_cpu = arg(&[4, 1, 3, 3], 15);
    let b_cpu = arg(&[4], 16);
    let f = |x: &Tensor, w: &Tensor, b: &Tensor| -> Result<Tensor> {
        let y = F::conv2d(x, w, Some(b), 1, 1, 1, 2)?.relu()?;
        let p = F::max_pool2d(&y, 2, 2, 1, 1, false)?;
        let q = F::avg_pool2d(&y, 3, 2, 1, true, false, None)?;
        p.sum()?.add(&q.sum()?)
    };
    f(&x_cpu, &w_cpu, &b_cpu)?.backward()?;
    let moved: Vec<Tensor> = [&x_cpu, &w_cpu, &b_cpu]
        .iter()
        .map(|t| t.detach().to(device)?.requires_grad_(true))
        .collect::<Result<_>>()?;
    let out = f(&moved[0], &moved[1], &moved[2])?;
    assert_eq!(out.device(), device);
    out.backward()?;
    for (cpu, dev) in [&x_cpu, &w_cpu, &b_cpu].iter().zip(&moved) {
        let g = dev.grad().unwrap();
        assert_eq!(g.device(), device);
        let (a, b) = (
            cpu.grad().unwrap().to_vec::<f64>()?,
            g.to(autograd::Device::Cpu)?.to_vec::<f64>()?,
        );
        assert!(
            a.iter()
                .zip(&b)
                .all(|(p, q)| (p - q).abs() <= 1e-12 * p.abs().max(1.0))
        );
    }
    Ok(())
}

// ----- the fused kernels on shapes cut into several blocks and runs ------------------------------

/// `conv2d` and its three gradients by the definition, one multiply-add at a time (f64):
/// `(y, dx, dw, db)` for the incoming gradient `g`.
#[allow(clippy::too_many_arguments)]
fn naive_conv2d(
    x: &[f64],
    [n, c, h, w]: [usize; 4],
    wt: &[f64],
    [o, cg, kh, kw]: [usize; 4],
    b: &[f64],
    g: &[f64],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let groups = c / cg;
    let og = o / groups;
    let out = |d: usize, size: usize, k: usize| {
        (size + 2 * padding[d] - dilation[d] * (k - 1) - 1) / stride[d] + 1
    };
    let (oh, ow) = (out(0, h, kh), out(1, w, kw));
    let mut y = vec![0.0; n * o * oh * ow];
    let (mut dx, mut dw, mut db) = (vec![0.0; x.len()], vec![0.0; wt.len()], vec![0.0; o]);
    for bn in 0..n {
        for oc in 0..o {
            let grp = oc / og;
            for oy in 0..oh {
                for ox in 0..ow {
                    let at = ((bn * o + oc) * oh + oy) * ow + ox;
                    let mut acc = b[oc];
                    db[oc] += g[at];
                    for ci in 0..cg {
                        let ch = grp * cg + ci;
                        for i in 0..kh {
                            for j in 0..kw {
                                let yy = (oy * stride[0] + i * dilation[0]) as isize
                                    - padding[0] as isize;
                                let xx = (ox * stride[1] + j * dilation[1]) as isize
                                    - padding[1] as isize;
                                if yy < 0 || xx < 0 || yy >= h as isize || xx >= w as isize {
                                    continue;
                                }
                                let xi = ((bn * c + ch) * h + yy as usize) * w + xx as usize;
                                let wi = ((oc * cg + ci) * kh + i) * kw + j;
                                acc += wt[wi] * x[xi];
                                dx[xi] += wt[wi] * g[at];
                                dw[wi] += x[xi] * g[at];
                            }
                        }
                    }
                    y[at] = acc;
                }
            }
        }
    }
    (y, dx, dw, db)
}

fn close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
            "{what}: element {i}: {a} against {b}"
        );
    }
}

/// The fused CPU kernels cut large inputs into blocks of output rows (a patch matrix of at
/// most 2^18 elements each) and the batch into runs: every block, run, group and both input
/// gradient paths (stride 1 as a convolution of the gradient, stride 2 through col2im) against
/// the definition.
#[test]
fn conv2d_on_several_blocks_matches_the_definition() -> Result<()> {
    // (x shape, weight shape, stride, padding, dilation)
    type Case = ([usize; 4], [usize; 4], [usize; 2], [usize; 2], [usize; 2]);
    let cases: [Case; 3] = [
        // K = 144, OW = 64: blocks of 19 of the 38 output rows; two groups.
        ([3, 16, 40, 64], [6, 8, 3, 3], [1, 1], [1, 1], [2, 1]),
        // Stride 2: OH = 80 in blocks of 40.
        ([3, 16, 160, 64], [6, 8, 3, 3], [2, 2], [1, 1], [1, 1]),
        // One group, padding 2 of a 3x3 kernel, odd widths: uneven blocks.
        ([2, 12, 130, 45], [5, 12, 3, 3], [1, 1], [2, 1], [1, 1]),
    ];
    for (k, (xs, ws, stride, padding, dilation)) in cases.into_iter().enumerate() {
        let seed = 10 * k as u64;
        let x = arg(&xs, seed + 1);
        let w = arg(&ws, seed + 2);
        let b = arg(&[ws[0]], seed + 3);
        let groups = xs[1] / ws[1];
        let y = F::conv2d(&x, &w, Some(&b), stride, padding, dilation, groups)?;
        let g = Tensor::from_vec(values(y.numel(), seed + 4), y.shape())?;
        let (want_y, want_dx, want_dw, want_db) = naive_conv2d(
            &x.to_vec::<f64>()?,
            xs,
            &w.to_vec::<f64>()?,
            ws,
            &b.to_vec::<f64>()?,
            &g.to_vec::<f64>()?,
            stride,
            padding,
            dilation,
        );
        close(&format!("case {k}: output"), &y.to_vec::<f64>()?, &want_y);
        y.backward_with(BackwardOptions::new().gradient(g))?;
        let grad = |t: &Tensor| t.grad().unwrap().to_vec::<f64>();
        close(&format!("case {k}: grad input"), &grad(&x)?, &want_dx);
        close(&format!("case {k}: grad weight"), &grad(&w)?, &want_dw);
        close(&format!("case {k}: grad bias"), &grad(&b)?, &want_db);
    }
    Ok(())
}
