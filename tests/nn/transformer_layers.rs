//! `MultiheadAttention`, the transformer encoder and decoder layers and their stacks against
//! PyTorch 2.15 (`tests/nn/transformer_layers.py` wrote `data/transformer_layers.json` and
//! `data/transformer_encoder_f64.safetensors`): the initial state dicts after `manual_seed`,
//! outputs and gradients of inputs and parameters in f64 at rtol 1e-10 (train and eval mode,
//! post- and pre-norm, ReLU and GELU, causal, padding and float masks, the attention weights,
//! dropout masks), PyTorch's state dicts loaded from JSON and from a safetensors file, the
//! `repr`s and the error messages.

use std::collections::HashMap;
use std::sync::OnceLock;

use autograd::nn::{
    Activation, DecoderForwardOptions, EncoderForwardOptions, LayerNorm, Module,
    MultiheadAttention, MultiheadAttentionConfig, MultiheadAttentionForwardOptions,
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
    TransformerLayerConfig,
};
use autograd::{DType, Result, StateDict, Tensor};
use serde_json::Value;

use crate::common::global_rng;

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/transformer_layers.json"))
            .expect("transformer_layers.json parses")
    })
}

fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => v.as_f64().expect("a number"),
    }
}

fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a dim") as usize)
        .collect()
}

fn values(v: &Value) -> Vec<f64> {
    v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(number)
        .collect()
}

/// A recorded tensor in its recorded dtype.
fn tensor(v: &Value) -> Tensor {
    let (shape, vals) = (shape(v), values(v));
    match v["dtype"].as_str().expect("a dtype") {
        "float64" => Tensor::from_vec(vals, &shape),
        "float32" => Tensor::from_vec(vals.iter().map(|&x| x as f32).collect(), &shape),
        "bool" => Tensor::from_vec(vals.iter().map(|&x| x != 0.0).collect(), &shape),
        other => panic!("dtype {other}"),
    }
    .unwrap()
}

fn state_dict(v: &Value) -> StateDict {
    let mut dict = StateDict::new();
    for entry in v.as_array().expect("a list of [name, tensor]") {
        dict.insert(entry[0].as_str().unwrap(), tensor(&entry[1]));
    }
    dict
}

fn assert_close(what: &str, got: &Tensor, want: &Value) {
    assert_eq!(got.shape(), shape(want), "{what}: shape");
    let got = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    for (i, (g, w)) in got.iter().zip(values(want)).enumerate() {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs() + 1e-12,
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

/// `cos(0.7 i + k)` over the flattened output `k`, as the recording script's upstream.
fn upstream(shape: &[usize], k: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| (i as f64 * 0.7 + k as f64).cos()).collect();
    Tensor::from_vec(v, shape).unwrap()
}

type Inputs = HashMap<String, Tensor>;

/// Loads the case's PyTorch state dict into `module` (made f64), sets its mode, calls `call` on
/// the recorded inputs (float ones require grad), and compares the outputs, then the gradients
/// of the inputs and of every parameter, with PyTorch's.
fn replay<M: Module>(
    name: &str,
    module: &mut M,
    call: impl Fn(&M, &Inputs) -> Result<Vec<Option<Tensor>>>,
) -> Result<()> {
    let case = &data()["cases"][name];
    assert!(case.is_object(), "no case {name}");
    module.to_dtype(DType::F64)?;
    let want = state_dict(&case["state"]);
    let keys: Vec<&str> = want.keys().collect();
    let ours = module.state_dict();
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        keys,
        "{name}: state-dict keys"
    );
    module.load_state_dict(&want)?;
    if case["train"].as_bool().unwrap() {
        module.train();
    } else {
        module.eval();
    }
    let mut inputs = Inputs::new();
    for (k, v) in case["inputs"].as_object().unwrap() {
        let t = tensor(v);
        let t = if t.dtype().is_floating_point() {
            t.requires_grad_(true)?
        } else {
            t
        };
        inputs.insert(k.clone(), t);
    }
    let _rng = case["seed"].as_u64().map(global_rng);
    let outs: Vec<Tensor> = call(module, &inputs)?.into_iter().flatten().collect();
    drop(_rng);
    let want_outs = case["outputs"].as_array().unwrap();
    assert_eq!(outs.len(), want_outs.len(), "{name}: outputs");
    let mut loss = Tensor::scalar(0.0f64);
    for (k, (o, w)) in outs.iter().zip(want_outs).enumerate() {
        assert_close(&format!("{name}: output {k}"), o, w);
        loss = loss.add(&o.mul(&upstream(o.shape(), k))?.sum()?)?;
    }
    loss.backward()?;
    for (k, w) in case["input_grads"].as_object().unwrap() {
        let grad = inputs[k].grad();
        if w.is_null() {
            assert!(grad.is_none(), "{name}: {k} takes no part in PyTorch");
        } else {
            let grad = grad.unwrap_or_else(|| panic!("{name}: no gradient for {k}"));
            assert_close(&format!("{name}: d {k}"), &grad, w);
        }
    }
    let want_grads = case["param_grads"].as_object().unwrap();
    let params = module.named_parameters();
    assert_eq!(params.len(), want_grads.len(), "{name}: parameters");
    for (k, p) in params {
        let grad = p
            .grad()
            .unwrap_or_else(|| panic!("{name}: no gradient for {k}"));
        assert_close(&format!("{name}: d {k}"), &grad, &want_grads[&k]);
    }
    Ok(())
}

fn mha(embed_dim: usize, num_heads: usize, bias: bool, batch_first: bool) -> MultiheadAttention {
    let cfg = MultiheadAttentionConfig {
        bias,
        batch_first,
        ..Default::default()
    };
    MultiheadAttention::with_config(embed_dim, num_heads, cfg).unwrap()
}

fn layer_config(dim_feedforward: usize, dropout: f64) -> TransformerLayerConfig {
    TransformerLayerConfig {
        dim_feedforward,
        dropout,
        ..Default::default()
    }
}

fn pre_gelu(cfg: TransformerLayerConfig) -> TransformerLayerConfig {
    TransformerLayerConfig {
        activation: Activation::Gelu,
        norm_first: true,
        ..cfg
    }
}

// ----- initialisation ----------------------------------------------------------------------------

/// Builds the layer after `manual_seed(seed)` and compares its state dict with PyTorch's, bit
/// for bit, then the generator's next draws (the stacks' copies draw nothing).
fn check_init(name: &str, build: impl FnOnce() -> Result<Box<dyn Module>>) -> Result<()> {
    let rec = &data()["inits"][name];
    let _rng = global_rng(rec["seed"].as_u64().unwrap());
    let module = build()?;
    let after = Tensor::rand(&[4], DType::F32)?;
    drop(_rng);
    let want = state_dict(&rec["state"]);
    let ours = module.state_dict();
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{name}: keys"
    );
    for (k, w) in want.iter() {
        let got = ours.get(k).unwrap();
        assert_eq!(got.dtype(), DType::F32, "{name}: {k}");
        assert_eq!(got.shape(), w.shape(), "{name}: {k}");
        assert_eq!(got.to_vec::<f32>()?, w.to_vec::<f32>()?, "{name}: {k}");
    }
    assert_eq!(
        after.to_vec::<f32>()?,
        tensor(&rec["rand_after"]).to_vec::<f32>()?,
        "{name}: the generator after construction"
    );
    Ok(())
}

#[test]
fn multihead_attention_starts_from_pytorchs_weights() -> Result<()> {
    check_init("mha", || Ok(Box::new(MultiheadAttention::new(8, 2)?)))?;
    check_init("mha_no_bias", || Ok(Box::new(mha(8, 2, false, false))))
}

#[test]
fn transformer_layers_start_from_pytorchs_weights() -> Result<()> {
    check_init("encoder_layer", || {
        Ok(Box::new(TransformerEncoderLayer::with_config(
            8,
            2,
            layer_config(16, 0.1),
        )?))
    })?;
    check_init("decoder_layer_no_bias", || {
        let cfg = TransformerLayerConfig {
            bias: false,
            ..layer_config(16, 0.1)
        };
        Ok(Box::new(TransformerDecoderLayer::with_config(8, 2, cfg)?))
    })
}

#[test]
fn stacks_copy_the_first_layer_as_pytorchs_get_clones() -> Result<()> {
    check_init("encoder_stack", || {
        let layer = TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.1))?;
        Ok(Box::new(TransformerEncoder::new(
            layer,
            3,
            Some(LayerNorm::new(&[8])?),
        )?))
    })?;
    check_init("decoder_stack", || {
        let cfg = TransformerLayerConfig {
            norm_first: true,
            ..layer_config(16, 0.1)
        };
        let layer = TransformerDecoderLayer::with_config(8, 2, cfg)?;
        Ok(Box::new(TransformerDecoder::new(layer, 2, None)?))
    })
}

#[test]
fn stacked_layers_are_copies_not_shared() -> Result<()> {
    let _rng = global_rng(0);
    let mut layer = TransformerEncoderLayer::with_config(4, 2, layer_config(8, 0.0))?;
    layer.eval();
    let encoder = TransformerEncoder::new(layer, 2, None)?;
    drop(_rng);
    let [a, b] = encoder.layers() else {
        panic!("two layers")
    };
    // The copies keep the layer's mode, and own their parameters.
    assert!(!a.is_training() && !b.is_training());
    let (pa, pb) = (a.parameters(), b.parameters());
    assert_eq!(pa.len(), pb.len());
    for (x, y) in pa.iter().zip(&pb) {
        assert!(!x.is_same(y));
        assert!(x.requires_grad() && x.is_leaf());
        assert_eq!(x.to_vec::<f32>()?, y.to_vec::<f32>()?);
    }
    autograd::nn::init::constant_(&pa[0], 3.0)?;
    assert_ne!(pa[0].to_vec::<f32>()?, pb[0].to_vec::<f32>()?);
    Ok(())
}

// ----- MultiheadAttention ------------------------------------------------------------------------

#[test]
fn multihead_attention_self_attention_with_weights() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        MultiheadAttention::new(8, 2)?
    };
    replay("mha_self_weights", &mut m, |m, i| {
        let x = &i["x"];
        let (y, w) = m.forward(x, x, x, &MultiheadAttentionForwardOptions::default())?;
        Ok(vec![Some(y), w])
    })
}

#[test]
fn multihead_attention_cross_batch_first_masks_per_head_weights() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        mha(8, 2, true, true)
    };
    replay("mha_cross_masks_per_head", &mut m, |m, i| {
        let opts = MultiheadAttentionForwardOptions {
            key_padding_mask: Some(&i["key_padding_mask"]),
            attn_mask: Some(&i["attn_mask"]),
            average_attn_weights: false,
            ..Default::default()
        };
        let (y, w) = m.forward(&i["q"], &i["k"], &i["v"], &opts)?;
        assert_eq!(w.as_ref().unwrap().shape(), &[3, 2, 4, 6]);
        Ok(vec![Some(y), w])
    })
}

#[test]
fn multihead_attention_causal_without_weights() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        MultiheadAttention::new(8, 4)?
    };
    replay("mha_causal_no_weights", &mut m, |m, i| {
        let x = &i["x"];
        let opts = MultiheadAttentionForwardOptions {
            attn_mask: Some(&i["attn_mask"]),
            need_weights: false,
            is_causal: true,
            ..Default::default()
        };
        let (y, w) = m.forward(x, x, x, &opts)?;
        assert!(w.is_none());
        Ok(vec![Some(y)])
    })
}

#[test]
fn multihead_attention_unbatched_without_bias() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        mha(8, 2, false, false)
    };
    replay("mha_unbatched_no_bias", &mut m, |m, i| {
        let opts = MultiheadAttentionForwardOptions {
            attn_mask: Some(&i["attn_mask"]),
            key_padding_mask: Some(&i["key_padding_mask"]),
            ..Default::default()
        };
        let (y, w) = m.forward(&i["q"], &i["kv"], &i["kv"], &opts)?;
        Ok(vec![Some(y), w])
    })
}

#[test]
fn multihead_attention_3d_float_mask_without_weights() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        MultiheadAttention::new(8, 2)?
    };
    replay("mha_3d_mask_no_weights", &mut m, |m, i| {
        let opts = MultiheadAttentionForwardOptions {
            attn_mask: Some(&i["attn_mask"]),
            need_weights: false,
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["q"], &i["kv"], &i["kv"], &opts)?.0)])
    })
}

// ----- encoder and decoder layers ----------------------------------------------------------------

#[test]
fn encoder_layer_post_norm_relu_train_with_masks() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.0))?
    };
    replay("encoder_post_relu_train", &mut m, |m, i| {
        let opts = EncoderForwardOptions {
            src_mask: Some(&i["src_mask"]),
            src_key_padding_mask: Some(&i["src_key_padding_mask"]),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["src"], &opts)?)])
    })
}

#[test]
fn encoder_layer_pre_norm_gelu_batch_first_eval() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        let cfg = TransformerLayerConfig {
            batch_first: true,
            ..pre_gelu(layer_config(16, 0.1))
        };
        TransformerEncoderLayer::with_config(8, 2, cfg)?
    };
    replay("encoder_pre_gelu_batch_first_eval", &mut m, |m, i| {
        let opts = EncoderForwardOptions {
            src_key_padding_mask: Some(&i["src_key_padding_mask"]),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["src"], &opts)?)])
    })
}

#[test]
fn encoder_layer_causal_hint_unbatched_without_bias() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        let cfg = TransformerLayerConfig {
            bias: false,
            ..layer_config(12, 0.0)
        };
        TransformerEncoderLayer::with_config(8, 4, cfg)?
    };
    replay("encoder_causal_hint_unbatched", &mut m, |m, i| {
        let opts = EncoderForwardOptions {
            src_mask: Some(&i["src_mask"]),
            is_causal: Some(true),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["src"], &opts)?)])
    })
}

#[test]
fn encoder_layer_dropout_masks_are_pytorchs() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        let cfg = TransformerLayerConfig {
            activation: Activation::Gelu,
            ..layer_config(16, 0.25)
        };
        TransformerEncoderLayer::with_config(8, 2, cfg)?
    };
    replay("encoder_dropout_train", &mut m, |m, i| {
        Ok(vec![Some(
            m.forward(&i["src"], &EncoderForwardOptions::default())?,
        )])
    })
}

#[test]
fn decoder_layer_post_norm_relu_train_causal() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        TransformerDecoderLayer::with_config(8, 2, layer_config(16, 0.0))?
    };
    replay("decoder_post_relu_train", &mut m, |m, i| {
        let opts = DecoderForwardOptions {
            tgt_mask: Some(&i["tgt_mask"]),
            tgt_is_causal: Some(true),
            memory_key_padding_mask: Some(&i["memory_key_padding_mask"]),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["tgt"], &i["memory"], &opts)?)])
    })
}

#[test]
fn decoder_layer_pre_norm_gelu_batch_first_eval() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        let cfg = TransformerLayerConfig {
            batch_first: true,
            ..pre_gelu(layer_config(16, 0.1))
        };
        TransformerDecoderLayer::with_config(8, 2, cfg)?
    };
    replay("decoder_pre_gelu_batch_first_eval", &mut m, |m, i| {
        let opts = DecoderForwardOptions {
            memory_mask: Some(&i["memory_mask"]),
            tgt_key_padding_mask: Some(&i["tgt_key_padding_mask"]),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["tgt"], &i["memory"], &opts)?)])
    })
}

// ----- stacks ------------------------------------------------------------------------------------

fn encoder_stack() -> Result<TransformerEncoder> {
    let _rng = global_rng(0);
    let layer = TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.0))?;
    TransformerEncoder::new(layer, 2, Some(LayerNorm::new(&[8])?))
}

fn encoder_stack_call(m: &TransformerEncoder, i: &Inputs) -> Result<Vec<Option<Tensor>>> {
    let opts = EncoderForwardOptions {
        src_mask: Some(&i["mask"]),
        src_key_padding_mask: Some(&i["src_key_padding_mask"]),
        ..Default::default()
    };
    Ok(vec![Some(m.forward(&i["src"], &opts)?)])
}

#[test]
fn encoder_stack_with_norm_detects_the_causal_mask() -> Result<()> {
    replay(
        "encoder_stack_train",
        &mut encoder_stack()?,
        encoder_stack_call,
    )
}

#[test]
fn decoder_stack_with_norm_eval() -> Result<()> {
    let mut m = {
        let _rng = global_rng(0);
        let layer = TransformerDecoderLayer::with_config(8, 2, pre_gelu(layer_config(16, 0.1)))?;
        TransformerDecoder::new(layer, 2, Some(LayerNorm::new(&[8])?))?
    };
    replay("decoder_stack_eval", &mut m, |m, i| {
        let opts = DecoderForwardOptions {
            tgt_mask: Some(&i["tgt_mask"]),
            ..Default::default()
        };
        Ok(vec![Some(m.forward(&i["tgt"], &i["memory"], &opts)?)])
    })
}

#[test]
fn encoder_stack_loads_pytorchs_safetensors_checkpoint() -> Result<()> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/nn/data/transformer_encoder_f64.safetensors"
    );
    let dict = StateDict::load(path)?;
    let case = &data()["cases"]["encoder_stack_train"];
    // The file holds the case's state dict (after the recorded forward and backward, which do
    // not change it): load it into an f32 stack and compare with the JSON copy.
    let mut m = encoder_stack()?;
    m.load_state_dict(&dict)?;
    let want = state_dict(&case["state"]);
    let ours = m.state_dict();
    assert_eq!(ours.len(), want.len());
    for (k, w) in want.iter() {
        let got = ours.get(k).unwrap();
        assert_eq!(got.dtype(), DType::F32);
        let w32: Vec<f32> = w.to_vec::<f64>()?.iter().map(|&x| x as f32).collect();
        assert_eq!(got.to_vec::<f32>()?, w32, "{k}");
    }
    // Made f64, the stack reproduces the recorded case from the file's weights.
    let mut m = encoder_stack()?;
    m.to_dtype(DType::F64)?;
    m.load_state_dict(&dict)?;
    replay("encoder_stack_train", &mut m, encoder_stack_call)
}

// ----- repr and errors ---------------------------------------------------------------------------

#[test]
fn reprs_are_pytorchs() -> Result<()> {
    let _rng = global_rng(0);
    let reprs = &data()["reprs"];
    assert_eq!(MultiheadAttention::new(8, 2)?.to_string(), reprs["mha"]);
    let cfg = TransformerLayerConfig {
        activation: Activation::Gelu,
        bias: false,
        layer_norm_eps: 1e-6,
        ..layer_config(16, 0.1)
    };
    assert_eq!(
        TransformerEncoderLayer::with_config(8, 2, cfg)?.to_string(),
        reprs["encoder_layer_gelu_no_bias"]
    );
    let enc = TransformerEncoder::new(
        TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.1))?,
        3,
        Some(LayerNorm::new(&[8])?),
    )?;
    assert_eq!(enc.to_string(), reprs["encoder_stack"]);
    let dec = TransformerDecoder::new(
        TransformerDecoderLayer::with_config(8, 2, layer_config(32, 0.0))?,
        2,
        None,
    )?;
    assert_eq!(dec.to_string(), reprs["decoder_stack"]);
    Ok(())
}

fn error_text(r: Result<impl std::fmt::Debug>) -> String {
    r.expect_err("an error").to_string()
}

#[test]
fn errors_are_pytorchs() -> Result<()> {
    let _rng = global_rng(0);
    let want = |k: &str| data()["errors"][k].as_str().unwrap().to_string();
    assert_eq!(
        error_text(MultiheadAttention::new(6, 4)),
        want("not_divisible")
    );
    assert_eq!(
        error_text(MultiheadAttention::new(8, 0)),
        want("zero_heads")
    );
    assert_eq!(error_text("tanh".parse::<Activation>()), want("activation"));
    let bad_dropout = TransformerLayerConfig {
        dropout: 1.5,
        ..Default::default()
    };
    assert_eq!(
        error_text(TransformerEncoderLayer::with_config(8, 2, bad_dropout)),
        want("dropout")
    );
    let m = MultiheadAttention::new(8, 2)?;
    let q6 = Tensor::zeros(&[3, 2, 6], DType::F32)?.requires_grad_(true)?;
    let defaults = MultiheadAttentionForwardOptions::default();
    assert_eq!(
        error_text(m.forward(&q6, &q6, &q6, &defaults)),
        want("embed_dim")
    );
    let q8 = Tensor::zeros(&[3, 2, 8], DType::F32)?.requires_grad_(true)?;
    let causal = MultiheadAttentionForwardOptions {
        is_causal: true,
        ..Default::default()
    };
    assert_eq!(
        error_text(m.forward(&q8, &q8, &q8, &causal)),
        want("causal_without_mask")
    );
    let bad_mask = Tensor::zeros(&[3, 4], DType::F32)?;
    let opts = MultiheadAttentionForwardOptions {
        attn_mask: Some(&bad_mask),
        ..Default::default()
    };
    assert_eq!(
        error_text(m.forward(&q8, &q8, &q8, &opts)),
        want("attn_mask_shape")
    );
    let int_kpm = Tensor::zeros(&[2, 3], DType::I64)?;
    let layer = TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.1))?;
    let opts = EncoderForwardOptions {
        src_key_padding_mask: Some(&int_kpm),
        ..Default::default()
    };
    assert_eq!(
        error_text(layer.forward(&q8, &opts)),
        want("int_padding_mask")
    );
    let int_mask = Tensor::zeros(&[3, 3], DType::I64)?;
    let stack = TransformerEncoder::new(
        TransformerEncoderLayer::with_config(8, 2, layer_config(16, 0.1))?,
        1,
        None,
    )?;
    let opts = EncoderForwardOptions {
        src_mask: Some(&int_mask),
        ..Default::default()
    };
    assert_eq!(
        error_text(stack.forward(&q8, &opts)),
        want("int_stack_mask")
    );
    let empty = TransformerEncoder::new(layer, 0, None)?;
    assert_eq!(
        error_text(empty.forward(&q8, &EncoderForwardOptions::default())),
        want("empty_stack")
    );
    // kdim/vdim other than embed_dim (separate projection weights) are not supported.
    let cfg = MultiheadAttentionConfig {
        kdim: Some(4),
        ..Default::default()
    };
    let err = error_text(MultiheadAttention::with_config(8, 2, cfg));
    assert!(err.contains("kdim=4 differs from embed_dim=8"), "{err}");
    Ok(())
}
