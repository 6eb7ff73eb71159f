//! The recurrent layers (`Lstm`, `Gru`, `Rnn`, `LstmCell`, `GruCell`, `RnnCell`) against the
//! numbers PyTorch recorded (`tests/nn/rnn_layers.py` wrote `data/rnn_layers.json` and
//! `data/rnn_lm_*.safetensors`): the initial state dict after `manual_seed` (exact, f32), the
//! parameter names and repr, then in f64 the outputs, final states and the gradients of the
//! input, the initial states and every parameter at 1e-10 (two layers, bidirectional,
//! batch-first, unbatched, no bias, dropout in training and evaluation mode); PyTorch's error
//! texts; and an LSTM language model (Embedding + LSTM + Linear, derived) that loads PyTorch's
//! checkpoint and matches its loss and gradients.

use std::path::PathBuf;
use std::sync::OnceLock;

use autograd::nn::functional::{CrossEntropyOptions, cross_entropy};
use autograd::nn::{
    Embedding, Forward, Gru, GruCell, Linear, Lstm, LstmCell, Module, Rnn, RnnCell,
    RnnNonlinearity, RnnOptions,
};
use autograd::{DType, Result, StateDict, Tensor, manual_seed};
use serde_json::Value;

// ----- the recorded data ------------------------------------------------------------------------

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/rnn_layers.json")).expect("rnn_layers.json parses")
    })
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nn/data")
        .join(name)
}

fn floats(v: &Value) -> Vec<f64> {
    v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|x| x.as_u64().expect("a size") as usize)
        .collect()
}

/// A recorded tensor as an f64 leaf that requires grad.
fn leaf(v: &Value) -> Tensor {
    Tensor::from_vec(floats(v), &shape(v))
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// `got` equals the recorded `want` (shape and values) within 1e-10, relative to the value's
/// size (absolute below 1).
fn assert_close(what: &str, got: &Tensor, want: &Value) {
    assert_eq!(got.shape(), &shape(want)[..], "{what}: shape");
    let (g, w) = (values(got), floats(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= 1e-10 * b.abs().max(1.0),
            "{what}[{i}]: got {a}, PyTorch {b}"
        );
    }
}

fn usize_arg(args: &Value, key: &str, default: usize) -> usize {
    args.get(key)
        .and_then(Value::as_u64)
        .map_or(default, |v| v as usize)
}

fn bool_arg(args: &Value, key: &str, default: bool) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(default)
}

// ----- one driver for the six layers ------------------------------------------------------------

enum Layer {
    Lstm(Lstm),
    Gru(Gru),
    Rnn(Rnn),
    LstmCell(LstmCell),
    GruCell(GruCell),
    RnnCell(RnnCell),
}

impl Layer {
    /// The layer a case describes, built as PyTorch's constructor with those arguments.
    fn build(kind: &str, args: &Value) -> Result<Layer> {
        let (i, h) = (
            usize_arg(args, "input_size", 0),
            usize_arg(args, "hidden_size", 0),
        );
        let bias = bool_arg(args, "bias", true);
        let options = RnnOptions::default()
            .num_layers(usize_arg(args, "num_layers", 1))
            .bias(bias)
            .batch_first(bool_arg(args, "batch_first", false))
            .dropout(args.get("dropout").and_then(Value::as_f64).unwrap_or(0.0))
            .bidirectional(bool_arg(args, "bidirectional", false));
        let nonlinearity = match args.get("nonlinearity").and_then(Value::as_str) {
            Some("relu") => RnnNonlinearity::Relu,
            _ => RnnNonlinearity::Tanh,
        };
        Ok(match kind {
            "LSTM" => Layer::Lstm(Lstm::with_options(i, h, options)?),
            "GRU" => Layer::Gru(Gru::with_options(i, h, options)?),
            "RNN" => Layer::Rnn(Rnn::with_options(i, h, nonlinearity, options)?),
            "LSTMCell" => Layer::LstmCell(LstmCell::with_bias(i, h, bias)?),
            "GRUCell" => Layer::GruCell(GruCell::with_bias(i, h, bias)?),
            "RNNCell" => Layer::RnnCell(RnnCell::with_options(i, h, bias, nonlinearity)?),
            other => panic!("unknown layer {other}"),
        })
    }

    fn module(&self) -> &dyn Module {
        match self {
            Layer::Lstm(m) => m,
            Layer::Gru(m) => m,
            Layer::Rnn(m) => m,
            Layer::LstmCell(m) => m,
            Layer::GruCell(m) => m,
            Layer::RnnCell(m) => m,
        }
    }

    fn module_mut(&mut self) -> &mut dyn Module {
        match self {
            Layer::Lstm(m) => m,
            Layer::Gru(m) => m,
            Layer::Rnn(m) => m,
            Layer::LstmCell(m) => m,
            Layer::GruCell(m) => m,
            Layer::RnnCell(m) => m,
        }
    }

    /// The forward with the recorded initial states (none, `[h]` or `[h, c]`), its outputs
    /// flattened as the recording flattened them: output, h_n, c_n.
    fn forward(&self, x: &Tensor, hx: &[Tensor]) -> Result<Vec<Tensor>> {
        let pair = match hx {
            [h, c] => Some((h, c)),
            _ => None,
        };
        let one = hx.first();
        Ok(match self {
            Layer::Lstm(m) => {
                let (out, (h, c)) = m.forward(x, pair)?;
                vec![out, h, c]
            }
            Layer::Gru(m) => {
                let (out, h) = m.forward(x, one)?;
                vec![out, h]
            }
            Layer::Rnn(m) => {
                let (out, h) = m.forward(x, one)?;
                vec![out, h]
            }
            Layer::LstmCell(m) => {
                let (h, c) = m.forward(x, pair)?;
                vec![h, c]
            }
            Layer::GruCell(m) => vec![m.forward(x, one)?],
            Layer::RnnCell(m) => vec![m.forward(x, one)?],
        })
    }
}

/// Replays one recorded case: init, names and repr, then the f64 forward and backward.
fn replay(name: &str) -> Result<()> {
    let case = &data()["cases"][name];
    let kind = case["kind"].as_str().unwrap();
    let seed = case["seed"].as_u64().unwrap();
    let _rng = crate::common::global_rng(seed);
    let mut layer = Layer::build(kind, &case["args"])?;

    // PyTorch's initial parameters, bit for bit, under PyTorch's names and order.
    let names: Vec<String> = layer
        .module()
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let want_names: Vec<&str> = case["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names, want_names, "{name}: parameter names");
    let dict = layer.module().state_dict();
    assert_eq!(dict.len(), want_names.len(), "{name}: state dict size");
    for (key, want) in case["init"].as_object().unwrap() {
        let got = dict.get(key).unwrap_or_else(|| panic!("{name}: no {key}"));
        assert_eq!(got.dtype(), DType::F32);
        assert_eq!(got.shape(), &shape(want)[..], "{name}.{key}: shape");
        let want: Vec<f32> = floats(want).into_iter().map(|v| v as f32).collect();
        assert_eq!(got.to_vec::<f32>()?, want, "{name}.{key}: initial values");
    }
    assert_eq!(
        layer.module().repr(),
        case["repr"].as_str().unwrap(),
        "{name}: repr"
    );

    // f64, the recorded mode, inputs and upstreams.
    layer.module_mut().to_dtype(DType::F64)?;
    if !case["train"].as_bool().unwrap() {
        layer.module_mut().eval();
    }
    assert_eq!(
        layer.module().is_training(),
        case["train"].as_bool().unwrap()
    );
    let x = leaf(&case["input"]);
    let hx: Vec<Tensor> = match case["hx"].as_array() {
        Some(states) => states.iter().map(leaf).collect(),
        None => Vec::new(),
    };
    if let Some(s) = case["forward_seed"].as_u64() {
        manual_seed(s);
    }
    let outs = layer.forward(&x, &hx)?;
    let want_outs = case["outputs"].as_array().unwrap();
    assert_eq!(outs.len(), want_outs.len(), "{name}: number of outputs");
    let mut loss: Option<Tensor> = None;
    for (k, ((out, want), up)) in outs
        .iter()
        .zip(want_outs)
        .zip(case["upstreams"].as_array().unwrap())
        .enumerate()
    {
        assert_close(&format!("{name}: output {k}"), out, want);
        let term = out.mul(&Tensor::from_vec(floats(up), &shape(up))?)?.sum()?;
        loss = Some(match loss {
            Some(l) => l.add(&term)?,
            None => term,
        });
    }
    loss.expect("at least one output").backward()?;

    let grads = &case["grads"];
    let grad = |t: &Tensor, what: &str| {
        let g = t
            .grad()
            .unwrap_or_else(|| panic!("{name}: no grad of {what}"));
        assert_close(&format!("{name}: grad of {what}"), &g, &grads[what]);
    };
    grad(&x, "input");
    for (i, h) in hx.iter().enumerate() {
        grad(h, &format!("hx{i}"));
    }
    for (key, p) in layer.module().named_parameters() {
        grad(&p, &key);
    }
    Ok(())
}

// ----- the layers against PyTorch ----------------------------------------------------------------

#[test]
fn lstm_two_layers_bidirectional_matches_pytorch() -> Result<()> {
    replay("lstm_2l_bi")
}

#[test]
fn lstm_batch_first_without_state_matches_pytorch() -> Result<()> {
    replay("lstm_batch_first")
}

#[test]
fn lstm_unbatched_matches_pytorch() -> Result<()> {
    replay("lstm_unbatched_2l")
}

#[test]
fn lstm_without_bias_batch_first_bidirectional_matches_pytorch() -> Result<()> {
    replay("lstm_no_bias_bf_bi")
}

#[test]
fn lstm_dropout_between_layers_draws_pytorchs_masks() -> Result<()> {
    replay("lstm_dropout_train")
}

#[test]
fn lstm_dropout_is_off_in_eval_mode() -> Result<()> {
    replay("lstm_dropout_eval")
}

#[test]
fn gru_two_layers_bidirectional_matches_pytorch() -> Result<()> {
    replay("gru_2l_bi")
}

#[test]
fn gru_unbatched_batch_first_matches_pytorch() -> Result<()> {
    replay("gru_unbatched_bf")
}

#[test]
fn gru_dropout_and_no_bias_match_pytorch() -> Result<()> {
    replay("gru_dropout_train")?;
    replay("gru_no_bias")
}

#[test]
fn rnn_tanh_and_relu_match_pytorch() -> Result<()> {
    replay("rnn_tanh_2l_bi")?;
    replay("rnn_relu_bf")
}

#[test]
fn lstm_cell_matches_pytorch() -> Result<()> {
    replay("lstm_cell")?;
    replay("lstm_cell_unbatched_zero_state")?;
    replay("lstm_cell_no_bias_unbatched")
}

#[test]
fn gru_and_rnn_cells_match_pytorch() -> Result<()> {
    replay("gru_cell")?;
    replay("gru_cell_unbatched")?;
    replay("rnn_cell_tanh")?;
    replay("rnn_cell_relu")
}

#[test]
fn reprs_are_pytorchs() -> Result<()> {
    let reprs = &data()["reprs"];
    let o = RnnOptions::default();
    let lstm = Lstm::with_options(4, 8, o.num_layers(2).batch_first(true).bidirectional(true))?;
    assert_eq!(lstm.to_string(), reprs["lstm_big"].as_str().unwrap());
    let gru = Gru::with_options(4, 8, o.num_layers(3).bias(false).dropout(0.25))?;
    assert_eq!(gru.to_string(), reprs["gru_dropout"].as_str().unwrap());
    let rnn = Rnn::with_options(4, 8, RnnNonlinearity::Relu, o)?;
    assert_eq!(rnn.to_string(), reprs["rnn_relu"].as_str().unwrap());
    assert_eq!(rnn.nonlinearity(), RnnNonlinearity::Relu);
    assert_eq!((lstm.input_size(), lstm.hidden_size()), (4, 8));
    assert_eq!(lstm.options().num_layers, 2);
    assert_eq!(
        lstm.parameter("weight_hh_l1_reverse").unwrap().shape(),
        &[32, 8]
    );
    assert_eq!(lstm.parameter("weight_ih_l1").unwrap().shape(), &[32, 16]);
    assert!(lstm.parameter("weight_ih_l2").is_none());
    Ok(())
}

#[test]
fn train_and_eval_switch_the_mode() -> Result<()> {
    let mut lstm = Lstm::new(2, 3)?;
    assert!(lstm.is_training());
    lstm.eval();
    assert!(!lstm.is_training());
    lstm.train();
    assert!(lstm.is_training());
    let mut cell = GruCell::new(2, 3)?;
    cell.eval();
    assert!(!cell.is_training());
    Ok(())
}

#[test]
fn state_dict_round_trips_between_layers() -> Result<()> {
    let options = RnnOptions::default().num_layers(2).bidirectional(true);
    let (source, mut target) = {
        let _rng = crate::common::global_rng(3);
        (
            Gru::with_options(3, 4, options)?,
            Gru::with_options(3, 4, options)?,
        )
    };
    let before = values(target.parameter("bias_hh_l1_reverse").unwrap());
    assert_ne!(
        before,
        values(source.parameter("bias_hh_l1_reverse").unwrap())
    );
    target.load_state_dict(&source.state_dict())?;
    for (key, p) in source.named_parameters() {
        assert_eq!(values(target.parameter(&key).unwrap()), values(&p), "{key}");
    }
    // A dict of the wrong architecture is refused with PyTorch's key report.
    let err = Gru::new(3, 4)?
        .load_state_dict(&source.state_dict())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Unexpected key(s) in state_dict: \"weight_ih_l0_reverse\""),
        "{err}"
    );
    Ok(())
}

// ----- PyTorch's error texts ---------------------------------------------------------------

fn expect_err(name: &str, got: Result<impl Sized>) {
    let want = data()["errors"][name].as_str().unwrap();
    match got {
        Ok(_) => panic!("{name}: no error, PyTorch says {want:?}"),
        Err(e) => assert_eq!(e.to_string(), want, "{name}"),
    }
}

#[test]
fn layer_errors_are_pytorchs() -> Result<()> {
    let z = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
    let o = RnnOptions::default();
    let lstm = Lstm::with_options(4, 8, o.num_layers(2).batch_first(true).bidirectional(true))?;
    expect_err("lstm_input_size", lstm.forward(&z(&[2, 5, 3]), None));
    expect_err("lstm_4d", lstm.forward(&z(&[2, 5, 4, 1]), None));
    let (h, c) = (z(&[4, 2, 8]), z(&[3, 2, 8]));
    expect_err("lstm_hidden1", lstm.forward(&z(&[2, 5, 4]), Some((&h, &c))));
    let (h, c) = (z(&[4, 3, 8]), z(&[4, 2, 8]));
    expect_err("lstm_hidden0", lstm.forward(&z(&[2, 5, 4]), Some((&h, &c))));
    let (h, c) = (z(&[4, 2, 8]), z(&[2, 8]));
    expect_err(
        "lstm_hx_dims_batched",
        lstm.forward(&z(&[2, 5, 4]), Some((&h, &c))),
    );
    expect_err(
        "lstm_hx_dims_unbatched",
        lstm.forward(&z(&[5, 4]), Some((&h, &c))),
    );
    let x64 = Tensor::zeros(&[2, 5, 4], DType::F64)?;
    expect_err("lstm_dtype", lstm.forward(&x64, None));
    expect_err("lstm_empty", lstm.forward(&z(&[2, 0, 4]), None));

    let gru = Gru::new(4, 8)?;
    expect_err(
        "gru_hidden",
        gru.forward(&z(&[5, 2, 4]), Some(&z(&[1, 3, 8]))),
    );
    expect_err(
        "gru_hx_dims_batched",
        gru.forward(&z(&[5, 2, 4]), Some(&z(&[3, 8]))),
    );
    expect_err(
        "gru_hx_dims_unbatched",
        gru.forward(&z(&[5, 4]), Some(&z(&[1, 1, 8]))),
    );
    expect_err(
        "gru_hidden_unbatched",
        gru.forward(&z(&[5, 4]), Some(&z(&[2, 8]))),
    );
    expect_err("gru_1d", gru.forward(&z(&[4]), None));
    expect_err("rnn_4d", Rnn::new(4, 8)?.forward(&z(&[1, 2, 3, 4]), None));

    expect_err("input_size_zero", Lstm::new(0, 8));
    expect_err("hidden_size_zero", Gru::new(4, 0));
    expect_err("num_layers_zero", Lstm::with_options(4, 8, o.num_layers(0)));
    expect_err("dropout_range", Lstm::with_options(4, 8, o.dropout(1.5)));
    expect_err("gru_proj_size", Gru::with_options(4, 8, o.proj_size(2)));
    // Projections are not implemented: a clear refusal, not a silent wrong layer.
    let err = Lstm::with_options(4, 8, o.proj_size(2))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "LSTM: proj_size=2 is not supported here (only proj_size=0)"
    );
    Ok(())
}

#[test]
fn cell_errors_are_pytorchs() -> Result<()> {
    let z = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
    let cell = LstmCell::new(4, 8)?;
    expect_err("lstm_cell_3d", cell.forward(&z(&[2, 2, 4]), None));
    let (h, c) = (z(&[1, 2, 8]), z(&[2, 8]));
    expect_err("lstm_cell_hx_3d", cell.forward(&z(&[2, 4]), Some((&h, &c))));
    expect_err("lstm_cell_input_size", cell.forward(&z(&[2, 3]), None));
    let (h, c) = (z(&[3, 8]), z(&[3, 8]));
    expect_err("lstm_cell_batch", cell.forward(&z(&[2, 4]), Some((&h, &c))));
    let (h, c) = (z(&[2, 8]), z(&[8]));
    expect_err(
        "lstm_cell_unbatched_2d_state",
        cell.forward(&z(&[4]), Some((&h, &c))),
    );
    let gru = GruCell::new(4, 8)?;
    expect_err(
        "gru_cell_hidden_3d",
        gru.forward(&z(&[2, 4]), Some(&z(&[2, 2, 8]))),
    );
    expect_err(
        "gru_cell_hidden_size",
        gru.forward(&z(&[2, 4]), Some(&z(&[2, 7]))),
    );
    let rnn = RnnCell::new(4, 8)?;
    expect_err("rnn_cell_input_size", rnn.forward(&z(&[2, 3]), None));
    expect_err("rnn_cell_3d", rnn.forward(&z(&[1, 2, 4]), None));
    Ok(())
}

// ----- an LSTM language model written as a user writes one -------------------------------------

/// PyTorch's `LM` of the recording script: token embeddings, a two-layer batch-first LSTM and
/// a linear head over the vocabulary.
#[derive(Debug, Module)]
#[module(name = "LM")]
struct LanguageModel {
    embed: Embedding,
    lstm: Lstm,
    head: Linear,
}

impl LanguageModel {
    fn new() -> Result<LanguageModel> {
        Ok(LanguageModel {
            embed: Embedding::new(11, 6)?,
            lstm: Lstm::with_options(6, 8, RnnOptions::default().num_layers(2).batch_first(true))?,
            head: Linear::new(8, 11)?,
        })
    }
}

impl Forward for LanguageModel {
    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let (out, _) = self.lstm.forward(&self.embed.forward(tokens)?, None)?;
        self.head.forward(&out)
    }
}

#[test]
fn lstm_language_model_loads_pytorchs_weights_and_matches_its_loss_and_gradients() -> Result<()> {
    let lm_case = &data()["lm"];
    let mut lm = {
        let _rng = crate::common::global_rng(7);
        LanguageModel::new()?
    };
    assert_eq!(lm.to_string(), lm_case["repr"].as_str().unwrap());

    // Built after manual_seed(7), the model starts from PyTorch's weights.
    let init = StateDict::load(fixture("rnn_lm_init.safetensors"))?;
    let ours = lm.state_dict();
    // (safetensors stores the keys sorted)
    let mut keys: Vec<&str> = ours.keys().collect();
    keys.sort_unstable();
    assert_eq!(keys, init.keys().collect::<Vec<_>>());
    for (key, want) in init.iter() {
        assert_eq!(
            ours.get(key).unwrap().to_vec::<f32>()?,
            want.to_vec::<f32>()?,
            "{key}"
        );
    }

    // PyTorch's checkpoint after one SGD step, in f64.
    lm.to_dtype(DType::F64)?;
    lm.load_state_dict(&StateDict::load(fixture("rnn_lm_trained.safetensors"))?)?;

    let rows: Vec<Vec<i64>> = lm_case["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_i64().unwrap())
                .collect()
        })
        .collect();
    let (batch, len) = (rows.len(), rows[0].len() - 1);
    let inputs: Vec<i64> = rows.iter().flat_map(|r| r[..len].to_vec()).collect();
    let targets: Vec<usize> = rows
        .iter()
        .flat_map(|r| r[1..].iter().map(|&t| t as usize))
        .collect();
    let logits = lm.forward(&Tensor::from_vec(inputs, &[batch, len])?)?;
    assert_eq!(logits.shape(), &[batch, len, 11]);
    let loss = cross_entropy(
        &logits.reshape(&[batch * len, 11])?,
        &targets,
        &CrossEntropyOptions::default(),
    )?;
    let want = lm_case["loss"].as_f64().unwrap();
    let got = loss.to_vec::<f64>()?[0];
    assert!(
        (got - want).abs() <= 1e-12 * want.abs(),
        "loss {got}, PyTorch {want}"
    );
    loss.backward()?;
    let grads = lm_case["grads"].as_object().unwrap();
    let params = lm.named_parameters();
    assert_eq!(params.len(), grads.len());
    for (key, p) in params {
        let g = p.grad().unwrap_or_else(|| panic!("no grad of {key}"));
        assert_close(&format!("grad of {key}"), &g, &grads[&key]);
    }
    Ok(())
}
