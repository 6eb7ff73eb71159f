//! Losses against PyTorch's numbers and messages: `cross_entropy` (weights, ignore index,
//! label smoothing), `nll_loss`, `mse_loss`, `binary_cross_entropy_with_logits`.

use super::*;

// ----- losses --------------------------------------------------------------------------------------

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

#[test]
fn classification_losses_take_extra_dims_and_single_samples() -> Result<()> {
    let inputs = &data()["inputs"];
    let t3 = usizes(&inputs["targets3"]);
    let variants: Vec<(&str, bool, CrossEntropyOptions)> = vec![
        (
            "ce3_mean",
            false,
            CrossEntropyOptions {
                ignore_index: Some(3),
                ..Default::default()
            },
        ),
        (
            "ce3_none",
            false,
            CrossEntropyOptions {
                label_smoothing: 0.2,
                reduction: Reduction::None,
                weight: Some(class_weight()),
                ..Default::default()
            },
        ),
        (
            "nll3_sum",
            true,
            CrossEntropyOptions {
                reduction: Reduction::Sum,
                ..Default::default()
            },
        ),
    ];
    for (name, nll, options) in variants {
        let x = input("logits3");
        let loss = if nll {
            let o = NllLossOptions {
                reduction: options.reduction,
                ..Default::default()
            };
            F::nll_loss(&x, &t3, &o)?
        } else {
            F::cross_entropy(&x, &t3, &options)?
        };
        check_forward_and_backward(name, &loss)?;
        check_grad(name, "x", &x)?;
    }
    let x = input("logits1");
    let options = CrossEntropyOptions {
        reduction: Reduction::None,
        label_smoothing: 0.1,
        ..Default::default()
    };
    check_forward_and_backward("ce1_none", &F::cross_entropy(&x, &[2], &options)?)?;
    check_grad("ce1_none", "x", &x)?;
    let err = F::cross_entropy(&input("logits3"), &[0, 1], &Default::default()).unwrap_err();
    assert_eq!(err.to_string(), "Expected target size [2, 3], got [2]");
    assert!(F::cross_entropy(&Tensor::scalar(1.0f64), &[0], &Default::default()).is_err());
    Ok(())
}

#[test]
fn loss_values_keep_their_options() -> Result<()> {
    use autograd::nn::{BceWithLogitsLoss, CrossEntropyLoss, MseLoss, NllLoss};
    let inputs = &data()["inputs"];
    let x = input("logits");
    let ce = CrossEntropyLoss::with_options(CrossEntropyOptions {
        weight: Some(class_weight()),
        ignore_index: Some(0),
        label_smoothing: 0.2,
        ..Default::default()
    });
    check_forward_and_backward("ce_weight_ignore_smooth", &ce.forward(&x, &targets())?)?;
    check_grad("ce_weight_ignore_smooth", "x", &x)?;
    let x = input("logits");
    let nll = NllLoss::with_options(NllLossOptions {
        reduction: Reduction::Sum,
        ..Default::default()
    });
    check_forward_and_backward("nll_sum", &nll.forward(&x, &targets())?)?;
    check_grad("nll_sum", "x", &x)?;
    let x = input("act_x");
    let y = f64_tensor(floats(&inputs["mse_target"]), &[3, 4]);
    check_forward_and_backward("mse_sum", &MseLoss::new(Reduction::Sum).forward(&x, &y)?)?;
    check_grad("mse_sum", "x", &x)?;
    assert_eq!(
        MseLoss::default().forward(&x, &y)?.item::<f64>()?,
        F::mse_loss(&x, &y, Reduction::Mean)?.item::<f64>()?
    );
    let x = input("act_x");
    let target = f64_tensor(floats(&inputs["bce_target"]), &[3, 4]);
    let bce = BceWithLogitsLoss::with_options(BceWithLogitsOptions {
        pos_weight: Some(f64_tensor(floats(&inputs["pos_weight"]), &[4])),
        ..Default::default()
    });
    check_forward_and_backward("bce_pos_weight", &bce.forward(&x, &target)?)?;
    check_grad("bce_pos_weight", "x", &x)?;
    Ok(())
}

// ----- int64 target tensors (PyTorch's signature) ------------------------------------------------

/// Values printed by PyTorch 2.15 for `x = [[0, 0, 3], [1, 0, 2], [0.5, -1, 0]]` (f64).
fn logits3() -> Result<Tensor> {
    Tensor::from_vec(
        vec![0.0f64, 0.0, 3.0, 1.0, 0.0, 2.0, 0.5, -1.0, 0.0],
        &[3, 3],
    )
}

#[test]
fn losses_take_int64_target_tensors_and_ignore_minus_100_by_default() -> Result<()> {
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    let x = logits3()?;
    let t = Tensor::from_vec(vec![2i64, -100, 1], &[3])?;
    // F.cross_entropy(x, t) = 1.0995267808788447; reduction='none' gives
    // [0.09492295642096091, 0.0, 2.1041306053367284]
    close(
        F::cross_entropy_tensor(&x, &t, &CrossEntropyOptions::default())?.item::<f64>()?,
        1.0995267808788447,
    );
    let none = CrossEntropyOptions {
        reduction: Reduction::None,
        ..Default::default()
    };
    let per = F::cross_entropy_tensor(&x, &t, &none)?.to_vec::<f64>()?;
    for (a, b) in per
        .iter()
        .zip([0.09492295642096091, 0.0, 2.1041306053367284])
    {
        close(*a, b);
    }
    // F.nll_loss(x.log_softmax(1), t, reduction='sum') = 2.1990535617576894
    let sum = NllLossOptions {
        reduction: Reduction::Sum,
        ..Default::default()
    };
    close(
        F::nll_loss_tensor(&x.log_softmax(1)?, &t, &sum)?.item::<f64>()?,
        2.1990535617576894,
    );
    // A uint8 target: F.cross_entropy(x, [2, 0, 1] as uint8) = 1.2022198420673564
    let u8_target = Tensor::from_vec(vec![2u8, 0, 1], &[3])?;
    close(
        F::cross_entropy_tensor(&x, &u8_target, &CrossEntropyOptions::default())?.item::<f64>()?,
        1.2022198420673564,
    );
    // [N, C, d]: F.cross_entropy(zeros(2, 3, 2), [[1, 0], [2, -100]]) = 1.0986122886681098
    let spatial = F::cross_entropy_tensor(
        &Tensor::zeros(&[2, 3, 2], DType::F64)?,
        &Tensor::from_vec(vec![1i64, 0, 2, -100], &[2, 2])?,
        &CrossEntropyOptions::default(),
    )?;
    close(spatial.item::<f64>()?, 1.0986122886681098);
    Ok(())
}

#[test]
fn int64_target_errors_are_pytorchs() -> Result<()> {
    let x = logits3()?;
    let ce = |t: Tensor, o: &CrossEntropyOptions| {
        F::cross_entropy_tensor(&x, &t, o).unwrap_err().to_string()
    };
    let d = CrossEntropyOptions::default();
    assert_eq!(
        ce(Tensor::from_vec(vec![1i64, -1, 0], &[3])?, &d),
        "Target -1 is out of bounds."
    );
    assert_eq!(
        ce(Tensor::from_vec(vec![1i64, 3, 0], &[3])?, &d),
        "Target 3 is out of bounds."
    );
    // With an ignore_index of the caller's, -100 is an ordinary (bad) target, as in PyTorch.
    let ignore_1 = CrossEntropyOptions {
        ignore_index: Some(1),
        ..Default::default()
    };
    assert_eq!(
        ce(Tensor::from_vec(vec![1i64, -100, 0], &[3])?, &ignore_1),
        "Target -100 is out of bounds."
    );
    assert_eq!(
        ce(Tensor::from_vec(vec![1i32, 0, 0], &[3])?, &d),
        "expected target dtype to be Long or Byte, but got Int"
    );
    assert_eq!(
        ce(Tensor::from_vec(vec![1.0f32, 0.0, 0.0], &[3])?, &d),
        "expected target dtype to be Long or Byte, but got Float"
    );
    assert_eq!(
        ce(Tensor::from_vec(vec![1i64, 0], &[1, 2])?, &d),
        "Expected input batch_size (3) to match target batch_size (1)."
    );
    let err = F::nll_loss_tensor(
        &Tensor::zeros(&[2, 3, 2], DType::F32)?,
        &Tensor::from_vec(vec![1i64, 0], &[2])?,
        &NllLossOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "Expected target size [2, 2], got [2]");
    Ok(())
}
