//! `clamp`: every element limited to `[min, max]` (PyTorch's `clamp`), differentiable: the
//! gradient passes where `min < x < max`, and an element at a bound gets none, as PyTorch's
//! (2.15, recorded in `tests/corpus/ops.jsonl.gz`) does for scalar bounds.
//!
//! The kernels are the backend's element maps (`MapOp::Clamp` and its gradient mask
//! `MapOp::ClampInterior`): one pass on the host, one launch on a device.

use autograd_macros::{backward, differentiable, jvp};

use crate::backend::{BinaryOp, MapOp};
use crate::tensor::kernels;
use crate::{DType, Error, Result, Scalar, Tensor};

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

/// A bound of [`Tensor::clamp`]: `None` (no bound), `Some(f64)`, or any scalar as it is (a
/// Rust number or bool: [`Scalar`]), so `x.clamp(Some(-1.0), None)` and `x.clamp(0, 7)` both
/// read as PyTorch's `x.clamp(min=.., max=..)`. An integer bound stays exact on an integer
/// tensor (past 2^53).
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![(1i64 << 62) + 1, (1 << 62) + 9], &[2])?;
/// let y = x.clamp(None, (1i64 << 62) + 3)?;
/// assert_eq!(y.to_vec::<i64>()?, vec![(1 << 62) + 1, (1 << 62) + 3]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait ClampBound {
    /// The bound, `None` for none.
    fn bound(self) -> Option<Scalar>;
}

impl ClampBound for Option<f64> {
    fn bound(self) -> Option<Scalar> {
        self.map(Scalar::Float)
    }
}

impl<T: Into<Scalar>> ClampBound for T {
    fn bound(self) -> Option<Scalar> {
        Some(self.into())
    }
}

impl Tensor {
    /// Every element limited to `[min, max]` (PyTorch's `clamp(min=, max=)`); a bound that is
    /// `None` does not apply, and where `min > max` every element becomes `max`, as in PyTorch.
    /// NaN stays NaN. The gradient passes where `min < x < max` (none at a bound, as in PyTorch).
    /// The bounds promote an integer or bool tensor as PyTorch's scalars do (a float bound
    /// makes it `f32`); an integer tensor is clamped exactly by integer bounds, one outside its
    /// dtype's range applying as that range's end in PyTorch's direction (a `u8` tensor's
    /// `max = 300` is no bound) and refused in the other.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when both bounds are `None`, for an integer bound that leaves
    /// an integer tensor nothing ("Clamp min value 300 is outside the representable range of
    /// Byte") and a float bound past a narrower float dtype's range (PyTorch's texts);
    /// [`Error::NotImplementedForDType`] for a bool tensor with bool bounds; device errors.
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
    /// let n = Tensor::from_vec(vec![5i64, -3], &[2])?;
    /// assert_eq!(n.clamp(0, None)?.to_vec::<i64>()?, vec![5, 0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn clamp(&self, min: impl ClampBound, max: impl ClampBound) -> Result<Tensor> {
        let (min, max) = (min.bound(), max.bound());
        if min.is_none() && max.is_none() {
            return Err(Error::InvalidArgument(
                "torch.clamp: At least one of 'min' or 'max' must not be None".into(),
            ));
        }
        let dtype = (min.iter().chain(&max)).fold(self.dtype(), |d, s| s.result_type_with(d));
        if !dtype.is_floating_point() {
            return self.promoted_to(dtype)?.clamp_integers(min, max);
        }
        for s in min.iter().chain(&max) {
            s.check_fits(dtype, true)?;
        }
        let bound = |s: Option<Scalar>, none: f64| s.map_or(none, Scalar::to_f64);
        self.with_promoted(Scalar::Float(0.0), |x| {
            clamp(x, bound(min, f64::NEG_INFINITY), bound(max, f64::INFINITY))
        })
    }

    /// [`Tensor::clamp`] of an integer tensor by integer (or bool) bounds, exactly, with
    /// PyTorch's range checks. Nothing here requires grad, so nothing is recorded.
    fn clamp_integers(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        let dtype = self.dtype();
        let (lowest, highest) = match dtype {
            DType::I64 => (i64::MIN, i64::MAX),
            DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            DType::U8 => (0, 255),
            _ => {
                let op = match (min, max) {
                    (Some(_), Some(_)) => "clamp_scalar_cpu",
                    (Some(_), None) => "clamp_min_scalar_cpu",
                    _ => "clamp_max_scalar_cpu",
                };
                return Err(Error::NotImplementedForDType {
                    op: op.into(),
                    dtype,
                });
            }
        };
        let int = |s: Option<Scalar>| {
            s.map(|s| match s {
                Scalar::Int(i) => i,
                other => other.to_f64() as i64,
            })
        };
        let (min, max) = (int(min), int(max));
        for (which, v, outside) in [
            ("min", min, min > Some(highest)),
            ("max", max, max.is_some_and(|v| v < lowest)),
        ] {
            if let (Some(v), true) = (v, outside) {
                return Err(Error::InvalidArgument(format!(
                    "Clamp {which} value {} is outside the representable range of {}",
                    cpp_double(v as f64),
                    dtype.scalar_type_name()
                )));
            }
        }
        let mut out: Option<Tensor> = None;
        let bounds = [
            (BinaryOp::Maximum, min.filter(|&v| v > lowest)),
            (BinaryOp::Minimum, max.filter(|&v| v < highest)),
        ];
        for (op, v) in bounds {
            if let Some(v) = v {
                let x = out.as_ref().unwrap_or(self);
                let bound = Tensor::filled_scalar(&[], Scalar::Int(v), dtype, x.device())?;
                out = Some(x.binary_kernel(op, "clamp", &bound)?);
            }
        }
        out.map_or_else(|| self.copy(), Ok)
    }
}

/// `v` as C++'s `std::ostream` prints a `double` (six significant digits, `%g`): `300`,
/// `1e+06`, `2.14748e+09`, as PyTorch's messages show their values.
fn cpp_double(v: f64) -> String {
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    };
    if (-4..6).contains(&exp) {
        return trim(format!("{v:.*}", (5 - exp) as usize));
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{}e{sign}{:02}", trim(mantissa.to_string()), exp.abs())
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
