//! The `#[jvp]` rules of the softmax and normalisation ops (issue 38's fused kernels):
//! `softmax` (`y ⊙ (ẋ − Σ y ⊙ ẋ)`), `log_softmax` (`ẋ − Σ softmax ⊙ ẋ`), the masked softmax of
//! `scaled_dot_product_attention`, `layer_norm` (PyTorch's `layer_norm_jvp`, tangents of the
//! weight and bias too) and `rms_norm`, each checked by `ops::check` against finite differences
//! and reverse mode.

use autograd::nn::functional as F;
use autograd::{DType, Result, Tensor};

use crate::ops::{Op, check};

fn randn(shape: &[usize]) -> Result<Tensor> {
    Tensor::randn(shape, DType::F64)
}

#[test]
fn softmax_and_log_softmax_over_each_dim() -> Result<()> {
    autograd::manual_seed(11);
    let x = randn(&[3, 4, 5])?;
    let cases: [(&str, Op); 6] = [
        ("softmax last", |x| x[0].softmax(2)),
        ("softmax middle", |x| x[0].softmax(1)),
        ("softmax first", |x| x[0].softmax(0)),
        ("log_softmax last", |x| x[0].log_softmax(2)),
        ("log_softmax middle", |x| x[0].log_softmax(1)),
        ("log_softmax first", |x| x[0].log_softmax(0)),
    ];
    for (name, f) in cases {
        check(name, f, std::slice::from_ref(&x))?;
    }
    Ok(())
}

#[test]
fn layer_norm_with_weight_and_bias() -> Result<()> {
    autograd::manual_seed(12);
    let x = randn(&[2, 3, 4, 5])?;
    let (w, b) = (randn(&[4, 5])?, randn(&[4, 5])?);
    check(
        "layer_norm affine",
        |x| F::layer_norm(&x[0], &[4, 5], Some(&x[1]), Some(&x[2]), 1e-5),
        &[x.clone(), w.clone(), b],
    )?;
    check(
        "layer_norm weight only",
        |x| F::layer_norm(&x[0], &[4, 5], Some(&x[1]), None, 1e-3),
        &[x.clone(), w],
    )?;
    check(
        "layer_norm plain",
        |x| F::layer_norm(&x[0], &[5], None, None, 1e-5),
        std::slice::from_ref(&x),
    )
}

#[test]
fn rms_norm_with_and_without_weight() -> Result<()> {
    autograd::manual_seed(13);
    let x = randn(&[3, 2, 6])?;
    let w = randn(&[2, 6])?;
    check(
        "rms_norm weight",
        |x| F::rms_norm(&x[0], &[2, 6], Some(&x[1]), Some(1e-4)),
        &[x.clone(), w],
    )?;
    check(
        "rms_norm plain",
        |x| F::rms_norm(&x[0], &[6], None, None),
        std::slice::from_ref(&x),
    )
}

#[test]
fn masked_attention_softmax() -> Result<()> {
    autograd::manual_seed(14);
    let (q, k, v) = (
        randn(&[2, 2, 4, 3])?,
        randn(&[2, 2, 5, 3])?,
        randn(&[2, 2, 5, 3])?,
    );
    let qkv = [q, k, v];
    check(
        "sdpa causal",
        |x| F::scaled_dot_product_attention(&x[0], &x[1], &x[2], None, 0.0, true, None),
        &qkv,
    )?;
    // A bool mask that masks every key of one query row: that row is zeros (`_safe_softmax`).
    check(
        "sdpa bool mask",
        |x| {
            let keep = Tensor::from_vec(
                vec![
                    true, false, true, true, false, //
                    false, false, false, false, false, //
                    true, true, true, true, true, //
                    false, true, false, true, false,
                ],
                &[4, 5],
            )?;
            F::scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&keep), 0.0, false, None)
        },
        &qkv,
    )?;
    check(
        "sdpa float mask",
        |x| {
            let mask = Tensor::from_vec(vec![0.5f64, -1.0, 0.0, 2.0, -0.25], &[1, 5])?;
            F::scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&mask), 0.0, false, Some(0.7))
        },
        &qkv,
    )?;
    // A float mask with a tangent of its own: the softmax is composed (`_safe_softmax`'s rule),
    // a row masked throughout (the second) has zeros for tangent.
    let inf = f64::NEG_INFINITY;
    let mask = Tensor::from_vec(
        vec![
            0.5, inf, 0.0, 2.0, -0.25, //
            inf, inf, inf, inf, inf, //
            0.0, 1.0, -1.0, 0.0, 0.5, //
            inf, 0.0, inf, 0.25, inf,
        ],
        &[4, 5],
    )?;
    let [q, k, v] = qkv;
    let sdpa: Op =
        |x| F::scaled_dot_product_attention(&x[0], &x[1], &x[2], Some(&x[3]), 0.0, false, None);
    let inputs = [q, k, v, mask];
    check("sdpa dual float mask", sdpa, &inputs)?;
    crate::ops::check_some(
        "sdpa mask only",
        sdpa,
        &inputs,
        &[false, false, false, true],
    )
}
