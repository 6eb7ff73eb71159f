//! `erf`, the error function element-wise (for the exact GELU), with its gradient
//! `2/√π · e^(-x²)` written in ops, so it is differentiable again.
//!
//! The kernel is the backend's element map `MapOp::Erf`: on the host the vector math's `erf` on
//! SIMD lanes (`backend/cpu/vmath/erf.rs`: an odd polynomial below `|x| = 1`,
//! `1 - e^(-x²) R((|x| - 3)/(|x| + 3))` from there, `±1` past 6; within 1 ulp of glibc's `erf` in
//! `f64`, and `f32` results are the `f64` value rounded), on a CUDA device CUDA's `erf` in one
//! launch.

use std::f64::consts::FRAC_2_SQRT_PI;

use autograd_macros::{backward, differentiable, jvp};

use crate::backend::MapOp;
use crate::tensor::kernels;
use crate::{Result, Tensor};

/// d erf x = 2/√π · e^(-x²): saves the input.
#[differentiable(builtin, crate = "crate", name = "ErfBackward0", rule)]
fn erf(x: &Tensor) -> Result<Tensor> {
    kernels::of_tensor(x)?.map(MapOp::Erf, x)
}

#[backward(erf)]
fn erf_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.mul(x)?.neg()?.exp()?.mul_scalar(FRAC_2_SQRT_PI)?)
}

/// `result: auto_element_wise`: `ẋ · 2/√π · e^(-x²)`.
#[jvp(erf)]
fn erf_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    erf_backward(x_t, x)
}

impl Tensor {
    /// The error function element-wise (PyTorch's `torch.erf`), differentiable twice and more.
    ///
    /// # Errors
    ///
    /// Device errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let y = Tensor::from_vec(vec![0.0f64, 1.0, -0.5], &[3])?.erf()?.to_vec::<f64>()?;
    /// assert_eq!(y[0], 0.0);
    /// assert!((y[1] - 0.842_700_792_949_714_9).abs() < 1e-15);
    /// assert!((y[2] + 0.520_499_877_813_046_5).abs() < 1e-15);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn erf(&self) -> Result<Tensor> {
        erf(self)
    }
}

#[cfg(test)]
mod tests {
    use crate::Tensor;
    use crate::backend::erf_f64;

    /// Values of `math.erf` (CPython, correctly rounded libm) at points across the range.
    #[test]
    fn erf_matches_libm() {
        let cases = [
            (1e-10, 1.128_379_167_095_512_6e-10),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_6),
            (5.9, 0.999_999_999_999_999_9),
            (-1.5, -0.966_105_146_475_310_8),
        ];
        for (x, want) in cases {
            let got = erf_f64(x);
            assert!(
                ((got - want) / want).abs() < 8.0 * f64::EPSILON,
                "erf({x}) = {got}, want {want}"
            );
        }
        assert_eq!(erf_f64(7.0), 1.0);
        assert_eq!(erf_f64(-7.0), -1.0);
        assert!(erf_f64(f64::NAN).is_nan());
    }

    #[test]
    fn erf_of_f32_is_the_f64_value_rounded() -> crate::Result<()> {
        let x = Tensor::from_vec(vec![0.3f32, -1.7, 4.0], &[3])?;
        let got = x.erf()?.to_vec::<f32>()?;
        let want: Vec<f32> = [0.3f32, -1.7, 4.0]
            .iter()
            .map(|&v| erf_f64(f64::from(v)) as f32)
            .collect();
        assert_eq!(got, want);
        Ok(())
    }
}
