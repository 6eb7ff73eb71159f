//! `Conv1d`, `ConvTranspose2d` and their functionals against PyTorch: outputs and gradients
//! recorded in f64 by `conv_layers.py` (beside this file: `data/conv_layers.json`, replayed at
//! rtol 1e-10), the initial parameters after `manual_seed`, state dicts loaded (a decoder's
//! from a safetensors file PyTorch wrote), reprs, PyTorch's error texts, gradcheck and
//! gradgradcheck.

use std::sync::OnceLock;

use autograd::nn::functional as F;
use autograd::nn::{Conv1d, ConvTranspose2d, Forward, Module, Sequential, Tanh};
use autograd::{
    BackwardOptions, DType, Error, Result, StateDict, Tensor, gradcheck, gradgradcheck,
};
use serde_json::Value;

const RTOL: f64 = 1e-10;
const ATOL: f64 = 1e-12;

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/conv_layers.json"))
            .expect("tests/nn/data/conv_layers.json parses")
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

/// A recorded tensor (`{"shape", "data"}`) in f64.
fn tensor(v: &Value) -> Tensor {
    Tensor::from_vec(floats(&v["data"]), &usizes(&v["shape"])).unwrap()
}

fn leaf(v: &Value) -> Tensor {
    tensor(v).requires_grad_(true).unwrap()
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

/// An argument recorded as an int or a list: the list (one entry per dim), `default` when
/// absent.
fn size_arg(args: &Value, key: &str, dims: usize, default: usize) -> Vec<usize> {
    match &args[key] {
        Value::Null => vec![default; dims],
        Value::Array(_) => usizes(&args[key]),
        v => vec![v.as_u64().unwrap() as usize; dims],
    }
}

fn pair(args: &Value, key: &str, default: usize) -> [usize; 2] {
    let v = size_arg(args, key, 2, default);
    [v[0], v[1]]
}

fn single(args: &Value, key: &str, default: usize) -> usize {
    size_arg(args, key, 1, default)[0]
}

fn run_conv1d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, args: &Value) -> Result<Tensor> {
    F::conv1d(
        x,
        w,
        b,
        single(args, "stride", 1),
        single(args, "padding", 0),
        single(args, "dilation", 1),
        single(args, "groups", 1),
    )
}

fn run_conv_transpose2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    args: &Value,
) -> Result<Tensor> {
    F::conv_transpose2d(
        x,
        w,
        b,
        pair(args, "stride", 1),
        pair(args, "padding", 0),
        pair(args, "output_padding", 0),
        single(args, "groups", 1),
        pair(args, "dilation", 1),
    )
}

type Functional = fn(&Tensor, &Tensor, Option<&Tensor>, &Value) -> Result<Tensor>;

fn replay_functional(section: &str, f: Functional, at_least: usize) {
    let cases = data()[section].as_array().unwrap();
    assert!(cases.len() >= at_least);
    for case in cases {
        let name = format!("{section} {}", case["name"].as_str().unwrap());
        let x = leaf(&case["input"]);
        let w = leaf(&case["weight"]);
        let b = (!case["bias"].is_null()).then(|| leaf(&case["bias"]));
        let y = f(&x, &w, b.as_ref(), &case["args"]).unwrap();
        assert_close(&format!("{name}: output"), &y, &case["output"]);
        y.backward_with(BackwardOptions::new().gradient(tensor(&case["grad_output"])))
            .unwrap();
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

// ----- the functionals -------------------------------------------------------------------------

#[test]
fn conv1d_matches_pytorch() {
    replay_functional("conv1d", run_conv1d, 9);
}

#[test]
fn conv_transpose2d_matches_pytorch() {
    replay_functional("conv_transpose2d", run_conv_transpose2d, 13);
}

/// `conv_transpose2d` is the adjoint of `conv2d` in its input: `<conv2d(x, w), y> =
/// <x, conv_transpose2d(y, w)>` for the same stride, padding, dilation and groups.
#[test]
fn conv_transpose2d_is_the_adjoint_of_conv2d() -> Result<()> {
    let x = arg(&[2, 4, 7, 6], 11);
    let w = arg(&[6, 2, 3, 2], 12);
    let y = F::conv2d(&x, &w, None, (2, 1), (1, 0), (1, 2), 2)?;
    assert_eq!(y.shape(), &[2, 6, 4, 4]);
    let v = arg(y.shape(), 13);
    // Back from 4×4: (4 − 1)·2 − 2 + 2 + 1 = 7 rows, (4 − 1)·1 + 2·1 + 1 = 6 columns.
    let back = F::conv_transpose2d(&v, &w, None, (2, 1), (1, 0), 0, 2, (1, 2))?;
    assert_eq!(back.shape(), x.shape());
    let lhs = y.mul(&v)?.sum()?.item::<f64>()?;
    let rhs = x.mul(&back)?.sum()?.item::<f64>()?;
    assert!(
        (lhs - rhs).abs() <= 1e-12 * lhs.abs().max(1.0),
        "{lhs} vs {rhs}"
    );
    // And conv2d's input gradient is that same product.
    y.backward_with(BackwardOptions::new().gradient(v.detach()))?;
    let grad = x.grad().unwrap().to_vec::<f64>()?;
    for (g, b) in grad.iter().zip(back.to_vec::<f64>()?) {
        assert!((g - b).abs() <= 1e-12, "{g} vs {b}");
    }
    Ok(())
}

#[test]
fn conv_transpose2d_of_an_empty_batch_is_empty() -> Result<()> {
    let w = Tensor::ones(&[3, 2, 3, 3], DType::F64)?;
    let y = F::conv_transpose2d(
        &Tensor::zeros(&[0, 3, 4, 4], DType::F64)?,
        &w,
        None,
        1,
        0,
        0,
        1,
        1,
    )?;
    assert_eq!(y.shape(), &[0, 2, 6, 6]); // PyTorch: torch.Size([0, 2, 6, 6])
    let y = F::conv1d(
        &Tensor::zeros(&[0, 3, 10], DType::F64)?,
        &Tensor::ones(&[4, 3, 3], DType::F64)?,
        None,
        1,
        0,
        1,
        1,
    )?;
    assert_eq!(y.shape(), &[0, 4, 8]);
    Ok(())
}

// ----- the layers --------------------------------------------------------------------------------

fn state_dict(v: &Value) -> StateDict {
    let mut dict = StateDict::new();
    for (k, t) in v.as_object().unwrap() {
        dict.insert(k.clone(), tensor(t));
    }
    dict
}

/// The recorded `state_dict().keys()`, in PyTorch's order.
fn keys(case: &Value) -> Vec<&str> {
    case["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect()
}

/// The recorded initial state dict (f32 values written as doubles) against the layer's, bit
/// for bit, and the next draw of the global generator against PyTorch's `torch.rand(1)`.
fn assert_init(case: &Value, layer: &dyn Module) {
    let name = case["name"].as_str().unwrap();
    let want = case["state_dict"].as_object().unwrap();
    let got = layer.state_dict();
    assert_eq!(got.keys().collect::<Vec<_>>(), keys(case), "{name}: keys");
    for (k, t) in want {
        let ours = got.get(k).unwrap();
        assert_eq!(ours.dtype(), DType::F32, "{name}.{k}");
        assert_eq!(ours.shape(), usizes(&t["shape"]), "{name}.{k}: shape");
        let want: Vec<f32> = floats(&t["data"]).iter().map(|&v| v as f32).collect();
        assert_eq!(ours.to_vec::<f32>().unwrap(), want, "{name}.{k}");
    }
    let next = Tensor::rand(&[1], DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()[0];
    assert_eq!(
        next,
        case["next"].as_f64().unwrap() as f32,
        "{name}: next draw"
    );
}

#[test]
fn layers_draw_pytorchs_initial_parameters() -> Result<()> {
    let cases = data()["init"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    for case in cases {
        let _rng = crate::common::global_rng(case["seed"].as_u64().unwrap());
        let layer: Box<dyn Module> = match case["name"].as_str().unwrap() {
            "conv1d" => Box::new(Conv1d::new(3, 4, 3)?),
            "conv1d_groups" => Box::new(Conv1d::new(4, 6, 5)?.groups(2)?),
            "conv1d_no_bias" => Box::new(Conv1d::new(2, 3, 2)?.without_bias()),
            "conv_transpose2d" => Box::new(ConvTranspose2d::new(3, 4, 3)?),
            "conv_transpose2d_rect" => Box::new(ConvTranspose2d::new(5, 2, (2, 3))?.stride(2)),
            "conv_transpose2d_groups" => Box::new(ConvTranspose2d::new(4, 6, 3)?.groups(2)?),
            "conv_transpose2d_no_bias" => Box::new(ConvTranspose2d::new(2, 3, 2)?.without_bias()),
            other => panic!("unknown case {other}"),
        };
        assert_init(case, &*layer);
    }
    Ok(())
}

/// Loads a recorded layer case into `layer` (built with the recorded options): its repr, the
/// f64 state dict PyTorch's layer had, then the output of `forward` and the gradients of the
/// input and of every parameter.
fn check_layer<L: Module>(
    case: &Value,
    mut layer: L,
    forward: impl Fn(&L, &Tensor) -> Result<Tensor>,
) -> Result<()> {
    let name = case["name"].as_str().unwrap();
    assert_eq!(layer.repr(), case["repr"].as_str().unwrap(), "{name}");
    assert_eq!(
        layer.state_dict().keys().collect::<Vec<_>>(),
        keys(case),
        "{name}"
    );
    if name.contains("eval") {
        // The forward does not depend on the mode: like `Conv2d`, the layer keeps none.
        layer.eval();
    }
    layer.to_dtype(DType::F64)?;
    layer.load_state_dict(&state_dict(&case["state_dict"]))?;
    let x = leaf(&case["input"]);
    let y = forward(&layer, &x)?;
    assert_close(&format!("{name}: output"), &y, &case["output"]);
    y.backward_with(BackwardOptions::new().gradient(tensor(&case["grad_output"])))?;
    assert_close(
        &format!("{name}: grad input"),
        &x.grad().unwrap(),
        &case["grad_input"],
    );
    let grads = case["grad_params"].as_object().unwrap();
    let params = layer.named_parameters();
    assert_eq!(params.len(), grads.len(), "{name}: parameters");
    for (k, p) in params {
        assert_close(&format!("{name}: grad {k}"), &p.grad().unwrap(), &grads[&k]);
    }
    Ok(())
}

#[test]
fn layers_match_pytorch_and_load_its_state_dict() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let cases = data()["modules"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    let forward = |l: &Conv1d, x: &Tensor| l.forward(x);
    let forward_t = |l: &ConvTranspose2d, x: &Tensor| l.forward(x);
    for case in cases {
        match case["name"].as_str().unwrap() {
            "conv1d" => {
                let layer = Conv1d::new(4, 6, 3)?
                    .stride(2)
                    .padding(1)
                    .dilation(2)
                    .groups(2)?;
                check_layer(case, layer, forward)?;
            }
            "conv1d_no_bias" => {
                check_layer(case, Conv1d::new(3, 2, 2)?.without_bias(), forward)?;
            }
            "conv_transpose2d" => {
                let layer = ConvTranspose2d::new(4, 6, (3, 2))?
                    .stride(2)
                    .padding(1)
                    .output_padding(1)
                    .dilation((1, 2))
                    .groups(2)?;
                check_layer(case, layer, forward_t)?;
            }
            "conv_transpose2d_eval_no_bias" => {
                let layer = ConvTranspose2d::new(3, 2, 3)?.without_bias();
                check_layer(case, layer, forward_t)?;
            }
            name => {
                let layer = if name.ends_with("full") {
                    ConvTranspose2d::new(3, 2, 3)?.stride(2)
                } else {
                    ConvTranspose2d::new(3, 2, 3)?.stride(3).padding(1)
                };
                let size = usizes(&case["output_size"]);
                check_layer(case, layer, |l, x| l.forward_with_output_size(x, &size))?;
            }
        }
    }
    Ok(())
}

// ----- a decoder from PyTorch's checkpoint -------------------------------------------------------

/// `conv_layers.py`'s `Decoder`: `net` a `Sequential` of three transposed convolutions with
/// `Tanh` between, 8×3×3 latents to 1×24×24 images.
#[derive(Debug, Module)]
struct Decoder {
    net: Sequential,
}

impl Decoder {
    fn new() -> Result<Decoder> {
        Ok(Decoder {
            net: Sequential::new()
                .add(
                    ConvTranspose2d::new(8, 6, 3)?
                        .stride(2)
                        .padding(1)
                        .output_padding(1),
                )
                .add(Tanh::new())
                .add(
                    ConvTranspose2d::new(6, 4, 4)?
                        .stride(2)
                        .padding(1)
                        .groups(2)?,
                )
                .add(Tanh::new())
                .add(
                    ConvTranspose2d::new(4, 1, 4)?
                        .stride(2)
                        .padding(1)
                        .without_bias(),
                ),
        })
    }
}

impl Forward for Decoder {
    fn forward(&self, z: &Tensor) -> Result<Tensor> {
        self.net.forward(z)
    }
}

#[test]
fn decoder_loads_pytorchs_checkpoint_and_matches_its_output() -> Result<()> {
    let case = &data()["decoder"];
    let mut decoder = {
        let _rng = crate::common::global_rng(7);
        Decoder::new()?
    };
    assert_eq!(decoder.net.to_string(), case["repr"].as_str().unwrap());
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/nn/data/conv_decoder.safetensors"
    );
    let dict = StateDict::load(path)?;
    let keys: Vec<&str> = dict.keys().collect();
    assert_eq!(
        keys,
        [
            "net.0.bias",
            "net.0.weight",
            "net.2.bias",
            "net.2.weight",
            "net.4.weight"
        ]
    );
    assert_eq!(dict.get("net.2.weight").unwrap().shape(), &[6, 2, 4, 4]);
    decoder.to_dtype(DType::F64)?;
    decoder.load_state_dict(&dict)?;
    let z = leaf(&case["input"]);
    let y = decoder.forward(&z)?;
    assert_eq!(y.shape(), &[2, 1, 24, 24]);
    assert_close("decoder: output", &y, &case["output"]);
    y.backward_with(BackwardOptions::new().gradient(tensor(&case["grad_output"])))?;
    assert_close(
        "decoder: grad input",
        &z.grad().unwrap(),
        &case["grad_input"],
    );
    let grads = case["grad_params"].as_object().unwrap();
    let params = decoder.named_parameters();
    assert_eq!(params.len(), 5);
    for (k, p) in params {
        assert_close(
            &format!("decoder: grad {k}"),
            &p.grad().unwrap(),
            &grads[&k],
        );
    }
    Ok(())
}

// ----- errors, in PyTorch's words ---------------------------------------------------------------

#[test]
fn functional_errors_match_pytorch() {
    let cases = data()["errors"].as_array().unwrap();
    assert!(cases.len() >= 40);
    for case in cases {
        let zeros = |key: &str| Tensor::zeros(&usizes(&case[key]), DType::F64).unwrap();
        let (x, w) = (zeros("input_shape"), zeros("weight_shape"));
        let b = (!case["bias_shape"].is_null()).then(|| zeros("bias_shape"));
        let result = match case["op"].as_str().unwrap() {
            "conv1d" => run_conv1d(&x, &w, b.as_ref(), &case["args"]),
            _ => run_conv_transpose2d(&x, &w, b.as_ref(), &case["args"]),
        };
        let want = case["message"].as_str().unwrap();
        match result {
            Ok(y) => panic!("{case}: no error, output of shape {:?}", y.shape()),
            Err(e) => {
                assert!(matches!(e, Error::InvalidArgument(_)), "{case}: {e:?}");
                assert_eq!(e.to_string(), want, "{case}");
            }
        }
    }
}

#[test]
fn layer_errors_match_pytorch() -> Result<()> {
    let _rng = crate::common::global_rng(0);
    let want: Vec<&str> = data()["module_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let msg = |e: Error| e.to_string();
    let up = ConvTranspose2d::new(3, 4, 3)?.stride(2);
    let x = Tensor::zeros(&[1, 3, 4, 4], DType::F32)?;
    let got = [
        msg(ConvTranspose2d::new(3, 4, 3)?.groups(2).unwrap_err()),
        msg(ConvTranspose2d::new(4, 3, 3)?.groups(2).unwrap_err()),
        msg(ConvTranspose2d::new(4, 4, 3)?.groups(0).unwrap_err()),
        msg(Conv1d::new(3, 4, 3)?.groups(2).unwrap_err()),
        msg(Conv1d::new(4, 3, 3)?.groups(2).unwrap_err()),
        msg(Conv1d::new(4, 4, 3)?.groups(0).unwrap_err()),
        msg(up.forward_with_output_size(&x, &[11, 11]).unwrap_err()),
        msg(up.forward_with_output_size(&x, &[8, 10]).unwrap_err()),
        msg(up.forward_with_output_size(&x, &[4, 10, 10]).unwrap_err()),
        msg(up
            .forward_with_output_size(&x, &[1, 2, 3, 4, 10])
            .unwrap_err()),
        msg(up
            .forward_with_output_size(&Tensor::zeros(&[3, 4, 4], DType::F32)?, &[11, 10])
            .unwrap_err()),
    ];
    assert_eq!(got.as_slice(), want.as_slice());
    // Mixed dtypes are refused, not promoted.
    let e = up.forward(&x.to_dtype(DType::F64)?).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
    let e = Conv1d::new(1, 1, 3)?
        .forward(&Tensor::zeros(&[1, 1, 4], DType::F64)?)
        .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { .. }), "{e}");
    Ok(())
}

// ----- gradcheck and gradgradcheck (f64, small) -----------------------------------------------------

/// Deterministic, distinct values in [-1, 1].
fn arg(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|i| {
            let t = (i as f64 + 1.0) * 0.618_033_988_749_895 + seed as f64 * 0.414_213_562;
            2.0 * (t - t.floor()) - 1.0
        })
        .collect();
    Tensor::from_vec(values, shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn check_both(what: &str, f: impl Fn(&[Tensor]) -> Result<Tensor> + Copy, inputs: &[Tensor]) {
    gradcheck(f, inputs).unwrap_or_else(|e| panic!("{what}: gradcheck: {e}"));
    gradgradcheck(f, inputs).unwrap_or_else(|e| panic!("{what}: gradgradcheck: {e}"));
}

#[test]
fn conv1d_passes_gradcheck_and_gradgradcheck() {
    check_both(
        "conv1d plain",
        |i| F::conv1d(&i[0], &i[1], Some(&i[2]), 1, 0, 1, 1),
        &[arg(&[2, 2, 5], 1), arg(&[3, 2, 2], 2), arg(&[3], 3)],
    );
    check_both(
        "conv1d strided, padded, dilated, grouped",
        |i| F::conv1d(&i[0], &i[1], Some(&i[2]), 2, 1, 2, 2),
        &[arg(&[2, 4, 7], 4), arg(&[4, 2, 2], 5), arg(&[4], 6)],
    );
    check_both(
        "conv1d unbatched",
        |i| F::conv1d(&i[0], &i[1], None, 1, 1, 1, 1),
        &[arg(&[2, 4], 7), arg(&[2, 2, 3], 8)],
    );
}

#[test]
fn conv_transpose2d_passes_gradcheck_and_gradgradcheck() {
    check_both(
        "conv_transpose2d plain",
        |i| F::conv_transpose2d(&i[0], &i[1], Some(&i[2]), 1, 0, 0, 1, 1),
        &[arg(&[2, 2, 2, 3], 1), arg(&[2, 3, 2, 2], 2), arg(&[3], 3)],
    );
    check_both(
        "conv_transpose2d strided, padded, output padding, dilated, grouped",
        |i| F::conv_transpose2d(&i[0], &i[1], Some(&i[2]), (2, 1), 1, (1, 0), 2, (1, 2)),
        &[arg(&[1, 4, 3, 2], 4), arg(&[4, 2, 2, 3], 5), arg(&[4], 6)],
    );
    check_both(
        "conv_transpose2d unbatched",
        |i| F::conv_transpose2d(&i[0], &i[1], None, 2, 0, 1, 1, 1),
        &[arg(&[2, 2, 2], 7), arg(&[2, 1, 3, 3], 8)],
    );
}
