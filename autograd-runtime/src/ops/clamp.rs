//! `clamp`: every element limited to `[min, max]` (PyTorch's `clamp`), differentiable: the
//! gradient passes where `min < x < max`, and an element at a bound gets none, as PyTorch's
//! (2.15, recorded in `tests/corpus/ops.jsonl.gz`) does for scalar bounds.
//!
//! The kernels are the backend's element maps (`MapOp::Clamp` and its gradient mask
//! `MapOp::ClampInterior`): one pass on the host, one launch on a device.

use autograd_macros::{backward, differentiable, jvp};

use crate::backend::MapOp;
use crate::tensor::kernels;
use crate::{Error, Result, Tensor};

/// `min(max(x, lo), hi)`; a missing bound is infinite.
#[differentiable(builtin, crate = "crate", name = "ClampBackward1")]
fn clamp(x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    kernels::of_tensor(x)?.map(MapOp::Clamp { lo, hi }, x)
}

#[backward(clamp)]
fn clamp_backward(grad: &Tensor, x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    grad.mul(&kernels::of_tensor(x)?.map(MapOp::ClampInterior { lo, hi }, x)?)
}

/// `result: auto_element_wise`: `ẋ` where `lo < x < hi`, as the backward's mask.
#[jvp(clamp)]
fn clamp_jvp(x_t: &Tensor, x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    clamp_backward(x_t, x, lo, hi)
}

impl Tensor {
    /// Every element limited to `[min, max]` (PyTorch's `clamp(min=, max=)`); a bound that is
    /// `None` does not apply, and where `min > max` every element becomes `max`, as in PyTorch.
    /// NaN stays NaN. The gradient passes where `min < x < max` (none at a bound, as in PyTorch).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when both bounds are `None` (PyTorch's text); device errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-2.0f32, 0.5, 3.0], &[3])?.requires_grad_(true)?;
    /// let y = x.clamp(Some(-1.0), Some(1.0))?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![-1.0, 0.5, 1.0]);
    /// y.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![0.0, 1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::InvalidArgument(
                "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
            ));
        }
        clamp(
            self,
            min.unwrap_or(f64::NEG_INFINITY),
            max.unwrap_or(f64::INFINITY),
        )
    }
}

// ----- derivative rule for `#[differentiable(derive)]` (see `derivative_rules.rs`) --------------

/// `clamp` as written in a derived body (`x.clamp(Some(lo), None)`): the gradient passes where
/// `min < x < max`, read from the kept input, as `clamp_backward` does.
#[doc(hidden)]
#[allow(non_upper_case_globals, clippy::type_complexity)]
impl super::DerivativeRules {
    pub const clamp: super::derivative_rules::Rule<
        fn(&Tensor, &Tensor, &Tensor, Option<f64>, Option<f64>) -> Result<Tensor>,
    > = super::derivative_rules::Rule {
        reads: super::derivative_rules::Reads {
            operands: &[super::derivative_rules::Read::Value],
            result: false,
            value_for: &[],
        },
        apply: |grad, x, _result, min, max| {
            let (lo, hi) = (
                min.unwrap_or(f64::NEG_INFINITY),
                max.unwrap_or(f64::INFINITY),
            );
            clamp_backward(grad, x, lo, hi)
        },
    };
}

#[cfg(test)]
mod tests {
    use crate::{DType, Error, Tensor, gradcheck, gradgradcheck};

    #[test]
    fn clamp_values_and_gradients_are_pytorchs() {
        let x = Tensor::from_vec(vec![-3.0f64, -1.0, 0.25, 1.0, 2.0, f64::NAN], &[6]).unwrap();
        let y = x
            .clamp(Some(-1.0), Some(1.0))
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(&y[..5], &[-1.0, -1.0, 0.25, 1.0, 1.0]);
        assert!(y[5].is_nan());
        let lo = x.clamp(Some(0.0), None).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(&lo[..5], &[0.0, 0.0, 0.25, 1.0, 2.0]);
        let crossed = x
            .clamp(Some(1.0), Some(-1.0))
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(&crossed[..5], &[-1.0; 5]);
        // Only the interior passes the gradient (`min < x < max`): an element at a bound gets
        // none, as in PyTorch (recorded: `clamp(-1, 1)` of `[-3, -1, 0.25, 1, 2]` gives
        // `[0, 0, 1, 0, 0]`).
        let x = Tensor::from_vec(vec![-3.0f64, -1.0, 0.25, 1.0, 2.0], &[5])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        x.clamp(Some(-1.0), Some(1.0))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        let g = x.grad().unwrap().to_vec::<f64>().unwrap();
        assert_eq!(g, vec![0.0, 0.0, 1.0, 0.0, 0.0]);
        match Tensor::scalar(1.0f32).clamp(None, None) {
            Err(Error::InvalidArgument(m)) => {
                assert_eq!(
                    m,
                    "torch.clamp: At least one of 'min' or 'max' must not be None"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn clamp_passes_gradcheck_and_gradgradcheck() {
        // Values away from the bounds: finite differences are not taken across a kink.
        let x = Tensor::from_vec(vec![-2.0f64, -0.7, 0.1, 0.45, 0.9, 1.6], &[2, 3]).unwrap();
        let x = x.requires_grad_(true).unwrap();
        for (lo, hi) in [
            (Some(-0.5), Some(0.5)),
            (None, Some(0.0)),
            (Some(0.0), None),
        ] {
            let f = move |t: &[Tensor]| t[0].clamp(lo, hi)?.mul(&t[0]);
            gradcheck(f, &[x.clone()]).unwrap();
            gradgradcheck(f, &[x.clone()]).unwrap();
        }
        assert_eq!(x.dtype(), DType::F64);
    }
}
