//! The functional layers of issue 36 (`batch_norm`, `group_norm`, `rms_norm`,
//! `scaled_dot_product_attention`, `multi_head_attention_forward`, `lstm_cell`, `gru_cell`, the
//! ELU family and the functional names of the tensor's activations) against PyTorch 2.15:
//! `functional_values.py` (beside this file) recorded `data/functional.json`: f64 inputs, the
//! outputs, the gradients of `Σ (out · upstream)`, the running statistics after two `batch_norm`
//! calls, dropout masks after a seed, and PyTorch's error messages. Replayed at rtol 1e-10; then
//! gradcheck and gradgradcheck of each function.

use std::sync::OnceLock;

use autograd::nn::functional::{self as F, MultiHeadAttentionOptions};
use autograd::{DType, Result, Tensor, gradcheck, gradgradcheck, manual_seed};
use serde_json::Value;

// ----- the recorded data ------------------------------------------------------------------------

fn data() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        serde_json::from_str(include_str!("data/functional.json")).expect("functional.json parses")
    })
}

fn shape_of(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a size") as usize)
        .collect()
}

fn floats(v: &Value) -> Vec<f64> {
    v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| match x.as_str() {
            Some(s) => s.parse().expect("inf or -inf"),
            None => x.as_f64().expect("a number"),
        })
        .collect()
}

/// A recorded tensor: f64, or a bool mask.
fn tensor(v: &Value) -> Tensor {
    let shape = shape_of(v);
    match v["dtype"].as_str().expect("a dtype") {
        "float64" => Tensor::from_vec(floats(v), &shape).unwrap(),
        "bool" => {
            let values = v["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|x| x.as_bool().expect("a bool"))
                .collect();
            Tensor::from_vec::<bool>(values, &shape).unwrap()
        }
        other => panic!("unexpected dtype {other}"),
    }
}

fn case(name: &str) -> &'static Value {
    let c = &data()["cases"][name];
    assert!(c.is_object(), "no recorded case {name}");
    c
}

/// The case's inputs, as leaves that require grad where PyTorch's did.
fn inputs(name: &str) -> Vec<Tensor> {
    let c = case(name);
    let flags = c["requires_grad"].as_array().expect("flags");
    c["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .zip(flags)
        .map(|(v, g)| {
            let t = tensor(v);
            if g.as_bool().unwrap() {
                t.requires_grad_(true).unwrap()
            } else {
                t
            }
        })
        .collect()
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs() + 1e-12,
            "{what}[{i}]: got {g:e}, PyTorch {w:e}"
        );
    }
}

fn assert_tensor(what: &str, got: &Tensor, want: &Value) {
    assert_eq!(got.shape(), shape_of(want).as_slice(), "{what}: shape");
    assert_close(what, &got.to_vec::<f64>().unwrap(), &floats(want));
}

/// Replays case `name`: `f` on its inputs (after `manual_seed(seed)` when given), its outputs
/// against PyTorch's, then the gradients of `Σ (out · upstream)` and the inputs that changed.
fn replay(name: &str, seed: Option<u64>, f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>) {
    let c = case(name);
    let x = inputs(name);
    if let Some(seed) = seed {
        manual_seed(seed);
    }
    let outs = f(&x).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = c["outputs"].as_array().unwrap();
    assert_eq!(outs.len(), want.len(), "{name}: number of outputs");
    let mut loss: Option<Tensor> = None;
    for (k, (o, w)) in outs.iter().zip(want).enumerate() {
        assert_tensor(&format!("{name}: output {k}"), o, w);
        let term = o.mul(&tensor(&c["upstreams"][k])).unwrap().sum().unwrap();
        loss = Some(match loss {
            Some(l) => l.add(&term).unwrap(),
            None => term,
        });
    }
    if x.iter().any(Tensor::requires_grad) {
        loss.unwrap().backward().unwrap();
    }
    for (i, t) in x.iter().enumerate() {
        let g = &c["grads"][i];
        if g.is_null() {
            assert!(t.grad().is_none(), "{name}: input {i} has a gradient");
        } else {
            let grad = t
                .grad()
                .unwrap_or_else(|| panic!("{name}: no gradient for input {i}"));
            assert_tensor(&format!("{name}: grad of input {i}"), &grad, g);
        }
        let after = &c["after"][i];
        if !after.is_null() {
            assert_tensor(&format!("{name}: input {i} after the call"), t, after);
        }
    }
}

fn error_text(name: &str) -> &'static str {
    data()["errors"][name].as_str().expect("a message")
}

fn assert_error<T: std::fmt::Debug>(name: &str, r: Result<T>) {
    assert_eq!(r.unwrap_err().to_string(), error_text(name), "{name}");
}

// ----- batch_norm, group_norm, rms_norm ---------------------------------------------------------

#[test]
fn batch_norm_matches_pytorch_and_updates_running_stats() {
    // Two training calls: outputs, gradients, and the running statistics after both.
    replay("batch_norm_train_2d_twice", None, |x| {
        let (rm, rv, w, b) = (&x[2], &x[3], Some(&x[4]), Some(&x[5]));
        let y1 = F::batch_norm(&x[0], Some(rm), Some(rv), w, b, true, 0.1, 1e-5)?;
        let y2 = F::batch_norm(&x[1], Some(rm), Some(rv), w, b, true, 0.1, 1e-5)?;
        Ok(vec![y1, y2])
    });
    replay("batch_norm_train_3d_no_stats", None, |x| {
        Ok(vec![F::batch_norm(
            &x[0],
            None,
            None,
            Some(&x[1]),
            Some(&x[2]),
            true,
            0.1,
            1e-5,
        )?])
    });
    replay("batch_norm_train_4d_momentum", None, |x| {
        Ok(vec![F::batch_norm(
            &x[0],
            Some(&x[1]),
            Some(&x[2]),
            None,
            None,
            true,
            0.3,
            1e-3,
        )?])
    });
    replay("batch_norm_eval_4d", None, |x| {
        Ok(vec![F::batch_norm(
            &x[0],
            Some(&x[1]),
            Some(&x[2]),
            Some(&x[3]),
            Some(&x[4]),
            false,
            0.1,
            1e-4,
        )?])
    });
}

#[test]
fn batch_norm_running_stats_are_not_recorded() {
    let x = Tensor::randn_seeded(&[4, 2], DType::F64, 3)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let (rm, rv) = (
        Tensor::zeros(&[2], DType::F64).unwrap(),
        Tensor::ones(&[2], DType::F64).unwrap(),
    );
    let y = F::batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 1e-5).unwrap();
    assert!(y.requires_grad());
    assert!(!rm.requires_grad() && !rv.requires_grad());
    assert!(rm.grad_fn().is_none() && rv.grad_fn().is_none());
    // Evaluation leaves them alone.
    let before = rm.to_vec::<f64>().unwrap();
    F::batch_norm(&x, Some(&rm), Some(&rv), None, None, false, 0.1, 1e-5).unwrap();
    assert_eq!(rm.to_vec::<f64>().unwrap(), before);
}

#[test]
fn group_norm_and_rms_norm_match_pytorch() {
    replay("group_norm_affine", None, |x| {
        Ok(vec![F::group_norm(
            &x[0],
            3,
            Some(&x[1]),
            Some(&x[2]),
            1e-5,
        )?])
    });
    replay("group_norm_plain_4d", None, |x| {
        Ok(vec![F::group_norm(&x[0], 2, None, None, 1e-3)?])
    });
    replay("rms_norm_weight", None, |x| {
        Ok(vec![F::rms_norm(&x[0], &[4], Some(&x[1]), Some(1e-5))?])
    });
    replay("rms_norm_default_eps", None, |x| {
        Ok(vec![F::rms_norm(&x[0], &[3, 4], None, None)?])
    });
}

#[test]
fn rms_norm_default_eps_is_the_compute_dtypes_epsilon() {
    // Tiny values, where eps dominates: f64's epsilon for f64, f32's for f32 and f16
    // (PyTorch computes f16 in f32).
    let x = Tensor::from_vec(vec![1e-9f64, 2e-9, 1e-9], &[1, 3]).unwrap();
    let y = F::rms_norm(&x, &[3], None, None)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let z = F::rms_norm(&x, &[3], None, Some(f64::EPSILON))
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(y, z);
    let h = Tensor::from_vec(vec![1e-3f64, 2e-3, 1e-3], &[1, 3])
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    let y = F::rms_norm(&h, &[3], None, None).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    let y = y.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    // torch.nn.functional.rms_norm(x.half(), [3]) = [0.6870, 1.3740, 0.6870] (f16)
    assert_eq!(y, vec![0.68701171875, 1.3740234375, 0.68701171875]);
}

// ----- attention --------------------------------------------------------------------------------

fn sdpa(x: &[Tensor], mask: Option<&Tensor>, causal: bool, scale: Option<f64>) -> Result<Tensor> {
    F::scaled_dot_product_attention(&x[0], &x[1], &x[2], mask, 0.0, causal, scale)
}

#[test]
fn scaled_dot_product_attention_matches_pytorch() {
    replay("sdpa_plain", None, |x| {
        Ok(vec![sdpa(x, None, false, None)?])
    });
    // A bool mask, one query row masked throughout (zeros, as PyTorch's `_safe_softmax`).
    replay("sdpa_bool_mask", None, |x| {
        Ok(vec![sdpa(x, Some(&x[3]), false, None)?])
    });
    replay("sdpa_float_mask_broadcast", None, |x| {
        Ok(vec![sdpa(x, Some(&x[3]), false, None)?])
    });
    replay("sdpa_causal", None, |x| {
        Ok(vec![sdpa(x, None, true, None)?])
    });
    replay("sdpa_3d_causal_square", None, |x| {
        Ok(vec![sdpa(x, None, true, None)?])
    });
    replay("sdpa_scale", None, |x| {
        Ok(vec![sdpa(x, None, false, Some(0.3))?])
    });
    replay("sdpa_negative_scale", None, |x| {
        Ok(vec![sdpa(x, None, false, Some(-0.5))?])
    });
    replay("sdpa_broadcast_batch", None, |x| {
        Ok(vec![sdpa(x, None, false, None)?])
    });
    // Dropout on the weights: PyTorch's masks after torch.manual_seed(7).
    replay("sdpa_dropout", Some(7), |x| {
        Ok(vec![F::scaled_dot_product_attention(
            &x[0],
            &x[1],
            &x[2],
            Some(&x[3]),
            0.3,
            false,
            None,
        )?])
    });
}

/// `mha(x, key, value, weights..)` as `functional_values.py`'s: 2 heads of 3, with both biases.
fn mha_opts<'a>(w: &'a [Tensor]) -> MultiHeadAttentionOptions<'a> {
    MultiHeadAttentionOptions {
        in_proj_bias: Some(&w[1]),
        out_proj_bias: Some(&w[3]),
        ..MultiHeadAttentionOptions::new(2, &w[0], &w[2])
    }
}

fn pair((y, w): (Tensor, Option<Tensor>)) -> Vec<Tensor> {
    std::iter::once(y).chain(w).collect()
}

#[test]
fn multi_head_attention_forward_matches_pytorch() {
    replay("mha_self_weights", None, |x| {
        Ok(pair(F::multi_head_attention_forward(
            &x[0],
            &x[0],
            &x[0],
            &mha_opts(&x[1..]),
        )?))
    });
    replay("mha_cross_no_weights", None, |x| {
        let opts = MultiHeadAttentionOptions {
            need_weights: false,
            ..mha_opts(&x[3..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[1], &x[2], &opts,
        )?))
    });
    // Bool masks: true = ignore, per-head weights.
    replay("mha_masks_per_head_weights", None, |x| {
        let opts = MultiHeadAttentionOptions {
            key_padding_mask: Some(&x[3]),
            attn_mask: Some(&x[4]),
            average_attn_weights: false,
            ..mha_opts(&x[5..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[1], &x[2], &opts,
        )?))
    });
    // A bool key padding mask and a float attention mask, through sdpa.
    replay("mha_masks_sdpa", None, |x| {
        let opts = MultiHeadAttentionOptions {
            key_padding_mask: Some(&x[3]),
            attn_mask: Some(&x[4]),
            need_weights: false,
            ..mha_opts(&x[5..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[1], &x[2], &opts,
        )?))
    });
    replay("mha_causal_hint", None, |x| {
        let opts = MultiHeadAttentionOptions {
            attn_mask: Some(&x[1]),
            is_causal: true,
            need_weights: false,
            ..mha_opts(&x[2..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[0], &x[0], &opts,
        )?))
    });
    replay("mha_batch_first", None, |x| {
        let opts = MultiHeadAttentionOptions {
            batch_first: true,
            ..mha_opts(&x[3..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[1], &x[2], &opts,
        )?))
    });
    replay("mha_unbatched", None, |x| {
        let opts = MultiHeadAttentionOptions {
            key_padding_mask: Some(&x[3]),
            ..mha_opts(&x[4..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[1], &x[2], &opts,
        )?))
    });
    replay("mha_dropout_weights", Some(11), |x| {
        let opts = MultiHeadAttentionOptions {
            dropout_p: 0.25,
            ..mha_opts(&x[1..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[0], &x[0], &opts,
        )?))
    });
    replay("mha_dropout_sdpa", Some(12), |x| {
        let opts = MultiHeadAttentionOptions {
            dropout_p: 0.25,
            need_weights: false,
            ..mha_opts(&x[1..])
        };
        Ok(pair(F::multi_head_attention_forward(
            &x[0], &x[0], &x[0], &opts,
        )?))
    });
}

#[test]
fn multi_head_attention_without_training_draws_no_dropout() {
    let x = inputs("mha_self_weights");
    let opts = MultiHeadAttentionOptions {
        dropout_p: 0.5,
        training: false,
        ..mha_opts(&x[1..])
    };
    let (y, _) = F::multi_head_attention_forward(&x[0], &x[0], &x[0], &opts).unwrap();
    assert_tensor("eval", &y, &case("mha_self_weights")["outputs"][0]);
}

// ----- LSTM and GRU cells -----------------------------------------------------------------------

#[test]
fn lstm_and_gru_cells_match_pytorch() {
    replay("lstm_cell_bias", None, |x| {
        let (h, c) = F::lstm_cell(
            &x[0],
            (&x[1], &x[2]),
            &x[3],
            &x[4],
            Some(&x[5]),
            Some(&x[6]),
        )?;
        Ok(vec![h, c])
    });
    replay("lstm_cell_no_bias", None, |x| {
        let (h, c) = F::lstm_cell(&x[0], (&x[1], &x[2]), &x[3], &x[4], None, None)?;
        Ok(vec![h, c])
    });
    replay("gru_cell_bias", None, |x| {
        Ok(vec![F::gru_cell(
            &x[0],
            &x[1],
            &x[2],
            &x[3],
            Some(&x[4]),
            Some(&x[5]),
        )?])
    });
    replay("gru_cell_no_bias", None, |x| {
        Ok(vec![F::gru_cell(&x[0], &x[1], &x[2], &x[3], None, None)?])
    });
}

// ----- activations ------------------------------------------------------------------------------

type Activation = fn(&Tensor) -> Result<Tensor>;

fn activations() -> [(&'static str, Activation); 10] {
    [
        ("silu", F::silu),
        ("mish", F::mish),
        ("softplus", |x| F::softplus(x, 2.0, 5.0)),
        ("hardtanh", |x| F::hardtanh(x, -0.5, 0.7)),
        ("relu6", F::relu6),
        ("elu", |x| F::elu(x, 1.3)),
        ("selu", F::selu),
        ("celu", |x| F::celu(x, 0.8)),
        ("sigmoid", F::sigmoid),
        ("tanh", F::tanh),
    ]
}

#[test]
fn activations_match_pytorch() {
    for (name, f) in activations() {
        replay(&format!("act_{name}"), None, |x| Ok(vec![f(&x[0])?]));
    }
}

#[test]
fn elu_does_not_overflow_into_the_gradient() {
    // exp(800) overflows; the branch not taken must not turn the gradient into NaN.
    let x = Tensor::from_vec(vec![0.0f64, -1.0, 800.0], &[3])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = F::elu(&x, 2.0).unwrap();
    y.sum().unwrap().backward().unwrap();
    // PyTorch: [0.0, -1.2642411176571153, 800.0], grad [2.0, 0.7357588823428847, 1.0]
    assert_close(
        "elu",
        &y.to_vec::<f64>().unwrap(),
        &[0.0, -1.2642411176571153, 800.0],
    );
    assert_close(
        "elu grad",
        &x.grad().unwrap().to_vec::<f64>().unwrap(),
        &[2.0, 0.7357588823428847, 1.0],
    );
}

// ----- gradcheck and gradgradcheck --------------------------------------------------------------

fn check_both(what: &str, f: impl Fn(&[Tensor]) -> Result<Tensor>, x: &[Tensor]) {
    gradcheck(&f, x).unwrap_or_else(|e| panic!("{what}: gradcheck: {e}"));
    gradgradcheck(&f, x).unwrap_or_else(|e| panic!("{what}: gradgradcheck: {e}"));
}

#[test]
fn norms_pass_gradcheck_and_gradgradcheck() {
    let x = inputs("batch_norm_train_3d_no_stats");
    check_both(
        "batch_norm training",
        |i| F::batch_norm(&i[0], None, None, Some(&i[1]), Some(&i[2]), true, 0.1, 1e-5),
        &x,
    );
    let x = inputs("batch_norm_eval_4d");
    check_both(
        "batch_norm eval",
        |i| {
            F::batch_norm(
                &i[0],
                Some(&i[1]),
                Some(&i[2]),
                Some(&i[3]),
                Some(&i[4]),
                false,
                0.1,
                1e-4,
            )
        },
        &x,
    );
    let x = inputs("group_norm_affine");
    check_both(
        "group_norm",
        |i| F::group_norm(&i[0], 3, Some(&i[1]), Some(&i[2]), 1e-5),
        &x,
    );
    let x = inputs("rms_norm_weight");
    check_both(
        "rms_norm",
        |i| F::rms_norm(&i[0], &[4], Some(&i[1]), Some(1e-5)),
        &x,
    );
}

#[test]
fn attention_passes_gradcheck_and_gradgradcheck() {
    let x = inputs("sdpa_bool_mask");
    check_both("sdpa bool mask", |i| sdpa(i, Some(&i[3]), false, None), &x);
    let x = inputs("sdpa_3d_causal_square");
    check_both("sdpa causal", |i| sdpa(i, None, true, None), &x);
    let x = inputs("mha_unbatched");
    check_both(
        "multi_head_attention_forward",
        |i| {
            let opts = MultiHeadAttentionOptions {
                key_padding_mask: Some(&i[3]),
                ..mha_opts(&i[4..])
            };
            let (y, w) = F::multi_head_attention_forward(&i[0], &i[1], &i[2], &opts)?;
            // Both outputs in one (the weights squared: their rows sum to 1).
            y.sum_dims(&[1], false)?
                .add(&w.unwrap().pow(2.0)?.sum_dims(&[1], false)?)
        },
        &x,
    );
}

#[test]
fn cells_and_activations_pass_gradcheck_and_gradgradcheck() {
    let x = inputs("lstm_cell_bias");
    check_both(
        "lstm_cell",
        |i| {
            let (h, c) = F::lstm_cell(
                &i[0],
                (&i[1], &i[2]),
                &i[3],
                &i[4],
                Some(&i[5]),
                Some(&i[6]),
            )?;
            h.add(&c.mul_scalar(0.5)?)
        },
        &x,
    );
    let x = inputs("gru_cell_bias");
    check_both(
        "gru_cell",
        |i| F::gru_cell(&i[0], &i[1], &i[2], &i[3], Some(&i[4]), Some(&i[5])),
        &x,
    );
    let x = inputs("act_elu");
    for (name, f) in activations() {
        check_both(name, |i| f(&i[0]), &x);
    }
}

// ----- errors -----------------------------------------------------------------------------------

fn f64s(shape: &[usize]) -> Tensor {
    Tensor::randn_seeded(shape, DType::F64, 5).unwrap()
}

#[test]
fn norm_errors_are_pytorchs() {
    let (z3, o3, o4) = (
        Tensor::zeros(&[3], DType::F64).unwrap(),
        Tensor::ones(&[3], DType::F64).unwrap(),
        Tensor::ones(&[4], DType::F64).unwrap(),
    );
    let bn = |x: &Tensor,
              rm: Option<&Tensor>,
              rv: Option<&Tensor>,
              w: Option<&Tensor>,
              b: Option<&Tensor>,
              training: bool| F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
    assert_error(
        "bn_one_value",
        bn(&f64s(&[1, 3]), Some(&z3), Some(&o3), None, None, true),
    );
    assert_error(
        "bn_one_value_3d",
        bn(&f64s(&[1, 3, 1]), None, None, None, None, true),
    );
    assert_error(
        "bn_eval_no_mean",
        bn(&f64s(&[2, 3]), None, None, None, None, false),
    );
    assert_error(
        "bn_eval_no_var",
        bn(&f64s(&[2, 3]), Some(&z3), None, None, None, false),
    );
    assert_error(
        "bn_train_one_stat",
        bn(&f64s(&[2, 3]), Some(&z3), None, None, None, true),
    );
    let z4 = Tensor::zeros(&[4], DType::F64).unwrap();
    assert_error(
        "bn_running_mean_size",
        bn(&f64s(&[2, 3]), Some(&z4), Some(&o3), None, None, true),
    );
    assert_error(
        "bn_weight_size",
        bn(&f64s(&[2, 3]), Some(&z3), Some(&o3), Some(&o4), None, false),
    );
    assert_error(
        "bn_bias_size",
        bn(&f64s(&[2, 3]), Some(&z3), Some(&o3), None, Some(&o4), false),
    );
    let rm = Tensor::zeros(&[3], DType::F64)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    assert_error(
        "bn_stat_requires_grad",
        bn(&f64s(&[2, 3]), Some(&rm), Some(&o3), None, None, true),
    );

    assert_error(
        "gn_divisible",
        F::group_norm(&f64s(&[2, 6, 4]), 4, None, None, 1e-5),
    );
    assert_error("gn_1d", F::group_norm(&f64s(&[2]), 1, None, None, 1e-5));
    assert_error(
        "gn_one_value",
        F::group_norm(&f64s(&[1, 2, 1]), 2, None, None, 1e-5),
    );
    let o5 = Tensor::ones(&[5], DType::F64).unwrap();
    assert_error(
        "gn_weight",
        F::group_norm(&f64s(&[2, 6, 4]), 3, Some(&o5), None, 1e-5),
    );
    assert_error(
        "gn_bias",
        F::group_norm(&f64s(&[2, 6, 4]), 3, None, Some(&o5), 1e-5),
    );

    assert_error(
        "rms_shape",
        F::rms_norm(&f64s(&[2, 3, 4]), &[2, 4], None, None),
    );
    assert_error(
        "rms_weight",
        F::rms_norm(&f64s(&[2, 3]), &[3], Some(&o4), None),
    );
    assert_error("rms_empty", F::rms_norm(&f64s(&[2, 3]), &[], None, None));
}

#[test]
fn attention_errors_are_pytorchs() {
    let q = f64s(&[2, 4, 8]);
    let attend = |q: &Tensor, m: Option<&Tensor>, p: f64, causal: bool| {
        F::scaled_dot_product_attention(q, &f64s(&[2, 4, 8]), &f64s(&[2, 4, 8]), m, p, causal, None)
    };
    let bool_mask = Tensor::ones(&[4, 4], DType::Bool).unwrap();
    assert_error(
        "sdpa_causal_and_mask",
        attend(&q, Some(&bool_mask), 0.0, true),
    );
    assert_error("sdpa_dropout_p", attend(&q, None, 1.5, false));
    assert_error(
        "sdpa_dtypes",
        attend(&q.to_dtype(DType::F32).unwrap(), None, 0.0, false),
    );
    let long_mask = Tensor::ones(&[4, 4], DType::I64).unwrap();
    assert_error("sdpa_mask_dtype", attend(&q, Some(&long_mask), 0.0, false));
    let half_mask = Tensor::ones(&[4, 4], DType::F16).unwrap();
    assert_error("sdpa_mask_f16", attend(&q, Some(&half_mask), 0.0, false));
    let v = f64s(&[8]);
    assert_error(
        "sdpa_1d",
        F::scaled_dot_product_attention(&v, &v, &v, None, 0.0, false, None),
    );
    // An f32 mask is accepted with an f64 query, as PyTorch's ("bool or float").
    let f32_mask = Tensor::zeros(&[4, 4], DType::F32).unwrap();
    assert_eq!(
        attend(&q, Some(&f32_mask), 0.0, false).unwrap().dtype(),
        DType::F64
    );

    let x = inputs("mha_self_weights");
    let (xq, w) = (&x[0], &x[1..]);
    let mha =
        |opts: &MultiHeadAttentionOptions<'_>| F::multi_head_attention_forward(xq, xq, xq, opts);
    assert_error(
        "mha_heads",
        mha(&MultiHeadAttentionOptions {
            num_heads: 4,
            ..mha_opts(w)
        }),
    );
    assert_error(
        "mha_causal_without_mask",
        mha(&MultiHeadAttentionOptions {
            is_causal: true,
            ..mha_opts(w)
        }),
    );
    let m34 = Tensor::ones(&[3, 4], DType::F64).unwrap();
    assert_error(
        "mha_mask_2d_shape",
        mha(&MultiHeadAttentionOptions {
            attn_mask: Some(&m34),
            ..mha_opts(w)
        }),
    );
    let m544 = Tensor::ones(&[5, 4, 4], DType::F64).unwrap();
    assert_error(
        "mha_mask_3d_shape",
        mha(&MultiHeadAttentionOptions {
            attn_mask: Some(&m544),
            ..mha_opts(w)
        }),
    );
    let long44 = Tensor::ones(&[4, 4], DType::I64).unwrap();
    assert_error(
        "mha_mask_dtype",
        mha(&MultiHeadAttentionOptions {
            attn_mask: Some(&long44),
            ..mha_opts(w)
        }),
    );
    let key2d = f64s(&[5, 6]);
    assert_error(
        "mha_key_dims",
        F::multi_head_attention_forward(xq, &key2d, &f64s(&[5, 2, 6]), &mha_opts(w)),
    );
}

#[test]
fn cell_and_activation_errors_are_pytorchs() {
    let (wi, wh) = (f64s(&[8, 3]), f64s(&[8, 2]));
    let (h, c) = (f64s(&[1, 2]), f64s(&[1, 2]));
    assert_error(
        "lstm_1d",
        F::lstm_cell(&f64s(&[3]), (&h, &c), &wi, &wh, None, None),
    );
    assert_error(
        "lstm_input_size",
        F::lstm_cell(&f64s(&[1, 4]), (&h, &c), &wi, &wh, None, None),
    );
    assert_error(
        "lstm_weight_ih",
        F::lstm_cell(&f64s(&[1, 3]), (&h, &c), &f64s(&[7, 3]), &wh, None, None),
    );
    assert_error(
        "lstm_weight_hh",
        F::lstm_cell(&f64s(&[1, 3]), (&h, &c), &wi, &f64s(&[7, 2]), None, None),
    );
    assert_error(
        "lstm_batch",
        F::lstm_cell(&f64s(&[2, 3]), (&h, &c), &wi, &wh, None, None),
    );
    assert_error(
        "lstm_hidden1",
        F::lstm_cell(&f64s(&[1, 3]), (&h, &f64s(&[1, 3])), &wi, &wh, None, None),
    );
    assert_error(
        "gru_weight_ih",
        F::gru_cell(
            &f64s(&[1, 3]),
            &h,
            &f64s(&[5, 3]),
            &f64s(&[6, 2]),
            None,
            None,
        ),
    );
    assert_error(
        "gru_hidden",
        F::gru_cell(
            &f64s(&[1, 3]),
            &f64s(&[1, 3]),
            &f64s(&[6, 3]),
            &f64s(&[6, 2]),
            None,
            None,
        ),
    );
    assert_error("hardtanh_range", F::hardtanh(&f64s(&[3]), 2.0, 1.0));
    assert_error("celu_zero", F::celu(&f64s(&[3]), 0.0));
}

#[test]
fn activation_nodes_are_pytorchs() {
    let x = Tensor::randn_seeded(&[3], DType::F64, 1)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let name = |y: Tensor| y.grad_fn().map(|n| n.name().to_string()).unwrap();
    // PyTorch: F.elu(x).grad_fn and so on.
    assert_eq!(name(F::elu(&x, 1.0).unwrap()), "EluBackward0");
    assert_eq!(name(F::selu(&x).unwrap()), "EluBackward0");
    assert_eq!(name(F::celu(&x, 0.8).unwrap()), "CeluBackward0");
    assert_eq!(name(F::relu6(&x).unwrap()), "HardtanhBackward0");
    assert_eq!(name(F::silu(&x).unwrap()), "SiluBackward0");
}
