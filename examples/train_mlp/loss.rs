//! Softmax cross-entropy as one differentiable op, written with the crate's DSL.
//!
//! Recorded as a single `SoftmaxCrossEntropyBackward0` node (PyTorch records
//! `NllLossBackward0` over `LogSoftmaxBackward0`), whose backward is the closed form
//! `(softmax(z) - onehot) / N * grad` instead of the chain through `log_softmax`, `mul` and
//! `sum`.

use autograd::{backward, differentiable, Error, Result, Tensor};

/// Mean cross-entropy `-(1/N) Σ_i Σ_c t[i, c] · log softmax(z)[i, c]` of logits `z` `[N, C]`
/// against one-hot (or any probability) targets `t` `[N, C]`; a 0-dim tensor. Gradient flows to
/// the logits only.
#[differentiable(name = "SoftmaxCrossEntropyBackward0")]
pub(crate) fn softmax_cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    check_shapes(logits, targets)?;
    let n = logits.shape()[0] as f64;
    logits
        .log_softmax(1)?
        .mul(targets)?
        .sum()?
        .mul_scalar(-1.0 / n)
}

/// `d loss / d z = (softmax(z) - t) / N`, scaled by the incoming gradient; none for the targets.
#[backward(softmax_cross_entropy)]
fn softmax_cross_entropy_backward(
    grad: &Tensor,
    logits: &Tensor,
    targets: &Tensor,
) -> Result<(Tensor, Option<Tensor>)> {
    let n = logits.shape()[0] as f64;
    let dz = logits
        .softmax(1)?
        .sub(targets)?
        .mul_scalar(1.0 / n)?
        .mul(grad)?;
    Ok((dz, None))
}

fn check_shapes(logits: &Tensor, targets: &Tensor) -> Result<()> {
    match logits.shape() {
        &[n, _] if n > 0 && logits.shape() == targets.shape() => Ok(()),
        _ => Err(Error::msg(format!(
            "softmax_cross_entropy expects logits [N, C] with N > 0 and targets of the same \
             shape, got {:?} and {:?}",
            logits.shape(),
            targets.shape()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use autograd::{gradcheck, gradgradcheck, DType, Tensor};

    use super::*;

    fn one_hot(labels: &[usize], classes: usize) -> Tensor {
        let mut v = vec![0.0f64; labels.len() * classes];
        for (i, &c) in labels.iter().enumerate() {
            v[i * classes + c] = 1.0;
        }
        Tensor::from_vec(v, &[labels.len(), classes]).unwrap()
    }

    #[test]
    fn value_matches_the_definition() {
        let z = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3]).unwrap();
        let t = one_hot(&[2, 0], 3);
        let loss = softmax_cross_entropy(&z, &t)
            .unwrap()
            .item::<f64>()
            .unwrap();
        let lse = |row: [f64; 3]| row.iter().map(|v| v.exp()).sum::<f64>().ln();
        let expected = ((lse([1.0, 2.0, 3.0]) - 3.0) + lse([0.0; 3])) / 2.0;
        assert!((loss - expected).abs() < 1e-12, "{loss} vs {expected}");
    }

    #[test]
    fn is_one_node_with_the_closed_form_gradient() {
        let z = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let t = one_hot(&[2, 0], 3);
        let loss = softmax_cross_entropy(&z, &t).unwrap();
        assert_eq!(
            loss.grad_fn().unwrap().name(),
            "SoftmaxCrossEntropyBackward0"
        );
        loss.mul_scalar(4.0).unwrap().backward().unwrap();
        let softmax = z.detach().softmax(1).unwrap().to_vec::<f64>().unwrap();
        let target = t.to_vec::<f64>().unwrap();
        for ((g, s), y) in z
            .grad()
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .zip(softmax)
            .zip(target)
        {
            assert!((g - 4.0 * (s - y) / 2.0).abs() < 1e-12);
        }
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let z = Tensor::randn(&[5, 4], DType::F64, 11)
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let t = one_hot(&[0, 3, 1, 1, 2], 4);
        gradcheck(
            |i| softmax_cross_entropy(&i[0], &t),
            std::slice::from_ref(&z),
        )
        .unwrap();
        // The backward is written in tensor ops, so it is differentiable again.
        gradgradcheck(
            |i| softmax_cross_entropy(&i[0], &t),
            std::slice::from_ref(&z),
        )
        .unwrap();
    }

    #[test]
    fn rejects_mismatched_shapes() {
        let z = Tensor::zeros(&[2, 3], DType::F64).unwrap();
        let err = softmax_cross_entropy(&z, &one_hot(&[0, 1], 2)).unwrap_err();
        assert!(err.to_string().contains("[2, 3] and [2, 2]"), "{err}");
        let flat = Tensor::zeros(&[3], DType::F64).unwrap();
        assert!(softmax_cross_entropy(&flat, &flat).is_err());
    }
}
