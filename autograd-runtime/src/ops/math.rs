//! The everyday element-wise math ops of PyTorch (`log1p expm1 log2 exp2 rsqrt softplus silu
//! mish hardtanh floor ceil round trunc minimum maximum fmod remainder atan2`), each with the
//! gradient of its entry in PyTorch's `tools/autograd/derivatives.yaml`, written in
//! differentiable ops so it is differentiable again. The kernels are the backend's
//! `UnaryOp`/`BinaryOp`/`MapOp` variants: one pass on the host, one launch on a device.

use std::f64::consts::LN_2;

use autograd_macros::{backward, differentiable, jvp};

use super::math_binary::*;
use crate::backend::{BinaryOp, GradFormula, MapOp, UnaryOp};
use crate::tensor::kernels;
use crate::{Error, Result, Scalar, Tensor};

// ----- unary: derivatives.yaml's formulas -------------------------------------------------------

/// `log1p: grad / (self + 1)` (`log1p_backward`).
#[differentiable(builtin, crate = "crate", name = "Log1PBackward0", rule)]
fn log1p(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Log1p)
}

#[backward(log1p)]
fn log1p_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.div(&x.add_scalar(1.0)?)
}

/// `result: auto_element_wise`: `ẋ / (x + 1)`.
#[jvp(log1p)]
fn log1p_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.div(&x.add_scalar(1.0)?)
}

/// `expm1: grad * (result + 1)`.
#[differentiable(builtin, crate = "crate", name = "Expm1Backward0", rule)]
fn expm1(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Expm1)
}

#[backward(expm1)]
fn expm1_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.add_scalar(1.0)?)
}

/// `ẋ (result + 1)`.
#[jvp(expm1)]
fn expm1_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(&result.add_scalar(1.0)?)
}

/// `log2: grad / (self * M_LN2)`.
#[differentiable(builtin, crate = "crate", name = "Log2Backward0", rule)]
fn log2(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Log2)
}

#[backward(log2)]
fn log2_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.div(&x.mul_scalar(LN_2)?)
}

/// `ẋ / (x ln 2)`.
#[jvp(log2)]
fn log2_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.div(&x.mul_scalar(LN_2)?)
}

/// `exp2: grad * result * M_LN2`.
#[differentiable(builtin, crate = "crate", name = "Exp2Backward0", rule)]
fn exp2(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Exp2)
}

#[backward(exp2)]
fn exp2_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(result)?.mul_scalar(LN_2)
}

/// `ẋ · result · ln 2`.
#[jvp(exp2)]
fn exp2_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(result)?.mul_scalar(LN_2)
}

/// `rsqrt: -0.5 * grad * result.pow(3)`.
#[differentiable(builtin, crate = "crate", name = "RsqrtBackward0", rule)]
fn rsqrt(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Rsqrt)
}

#[backward(rsqrt)]
fn rsqrt_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul_scalar(-0.5)?.mul(&result.pow(3.0)?)
}

/// `-0.5 ẋ · result³`.
#[jvp(rsqrt)]
fn rsqrt_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(&result.pow(3.0)?)?.mul_scalar(-0.5)
}

/// `silu: infinitely_differentiable_silu_backward`: `grad * σ(x) * (1 + x (1 - σ(x)))`.
#[differentiable(builtin, crate = "crate", name = "SiluBackward0", rule)]
fn silu(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Silu)
}

#[backward(silu)]
fn silu_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let s = x.sigmoid()?;
    grad.mul(&s)?
        .mul(&x.mul(&s.rsub_scalar(1.0)?)?.add_scalar(1.0)?)
}

/// `ẋ σ(x) (1 + x (1 - σ(x)))`.
#[jvp(silu)]
fn silu_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    silu_backward(x_t, x)
}

/// `mish: infinitely_differentiable_mish_backward`:
/// `grad * (t + x σ(x) (1 - t²))`, `t = tanh(softplus x)`.
#[differentiable(builtin, crate = "crate", name = "MishBackward0", rule)]
fn mish(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Mish)
}

#[backward(mish)]
fn mish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let s = x.sigmoid()?;
    let t = softplus(x, 1.0, 20.0)?.tanh()?;
    let inner = x.mul(&s)?.mul(&t.mul(&t)?.rsub_scalar(1.0)?)?;
    grad.mul(&t.add(&inner)?)
}

/// `ẋ (t + x σ(x) (1 - t²))`.
#[jvp(mish)]
fn mish_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    mish_backward(x_t, x)
}

/// `softplus: softplus_backward(grad, self, beta, threshold)`: `grad` times the slope
/// `σ(βx)` (1 above the threshold).
#[differentiable(builtin, crate = "crate", name = "SoftplusBackward0")]
fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    kernels::of_tensor(x)?.map(MapOp::Softplus { beta, threshold }, x)
}

#[backward(softplus)]
fn softplus_backward(grad: &Tensor, x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    grad.mul(&softplus_slope(x, beta, threshold)?)
}

/// `ẋ σ(βx)` (`ẋ` above the threshold).
#[jvp(softplus)]
fn softplus_jvp(x_t: &Tensor, x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    x_t.mul(&softplus_slope(x, beta, threshold)?)
}

/// Softplus's slope `s = σ(βx)` (1 above the threshold), recorded so that softplus is
/// differentiable twice: `d s = β s (1 - s)`, which is 0 above the threshold (`s = 1`), as
/// PyTorch's `softplus_double_backward`.
#[differentiable(builtin, crate = "crate", name = "SoftplusBackwardBackward0")]
fn softplus_slope(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    kernels::of_tensor(x)?.map(MapOp::SoftplusSlope { beta, threshold }, x)
}

#[backward(softplus_slope)]
fn softplus_slope_backward(grad: &Tensor, result: &Tensor, beta: f64) -> Result<Tensor> {
    grad.mul(&result.mul(&result.rsub_scalar(1.0)?)?.mul_scalar(beta)?)
}

/// `β ẋ s (1 - s)`: sigmoid's backward kernel on the result, then `β`.
#[jvp(softplus_slope)]
fn softplus_slope_jvp(x_t: &Tensor, result: &Tensor, beta: f64) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Sigmoid, result, || {
        x_t.mul(&result.mul(&result.rsub_scalar(1.0)?)?)
    })?
    .mul_scalar(beta)
}

/// `hardtanh: hardtanh_backward`: the gradient passes where `min_val < x < max_val`.
#[differentiable(builtin, crate = "crate", name = "HardtanhBackward0")]
fn hardtanh(x: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    kernels::of_tensor(x)?.map(
        MapOp::Clamp {
            lo: min_val,
            hi: max_val,
        },
        x,
    )
}

#[backward(hardtanh)]
fn hardtanh_backward(grad: &Tensor, x: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    let interior = MapOp::ClampInterior {
        lo: min_val,
        hi: max_val,
    };
    grad.mul(&kernels::of_tensor(x)?.map(interior, x)?)
}

/// `ẋ` where `min_val < x < max_val`.
#[jvp(hardtanh)]
fn hardtanh_jvp(x_t: &Tensor, x: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    hardtanh_backward(x_t, x, min_val, max_val)
}

/// `floor: zeros_like(grad)`.
#[differentiable(builtin, crate = "crate", name = "FloorBackward0", rule)]
fn floor(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Floor)
}

#[backward(floor)]
fn floor_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent: the function is flat.
#[jvp(floor)]
fn floor_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

/// `ceil: zeros_like(grad)`.
#[differentiable(builtin, crate = "crate", name = "CeilBackward0", rule)]
fn ceil(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Ceil)
}

#[backward(ceil)]
fn ceil_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent: the function is flat.
#[jvp(ceil)]
fn ceil_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

/// `round: zeros_like(grad)`.
#[differentiable(builtin, crate = "crate", name = "RoundBackward0", rule)]
fn round(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Round)
}

#[backward(round)]
fn round_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent: the function is flat.
#[jvp(round)]
fn round_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

/// `trunc: zeros_like(grad)`.
#[differentiable(builtin, crate = "crate", name = "TruncBackward0", rule)]
fn trunc(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Trunc)
}

#[backward(trunc)]
fn trunc_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent: the function is flat.
#[jvp(trunc)]
fn trunc_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

impl Tensor {
    /// `ln(1 + x)` element-wise, accurate for small `x` (PyTorch's `torch.log1p`); `-inf` at -1, NaN below.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(1e-10f64).log1p()?.item::<f64>()?, 9.999_999_999_500_001e-11);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn log1p(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Log1p, self, |x| x.log1p());
        log1p(self)
    }

    /// `eˣ - 1` element-wise, accurate for small `x` (PyTorch's `torch.expm1`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(1e-10f64).expm1()?.item::<f64>()?, 1.00000000005e-10);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn expm1(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Expm1, self, |x| x.expm1());
        expm1(self)
    }

    /// Base-2 logarithm element-wise (PyTorch's `torch.log2`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(8.0f64).log2()?.item::<f64>()?, 3.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn log2(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Log2, self, |x| x.log2());
        log2(self)
    }

    /// `2ˣ` element-wise (PyTorch's `torch.exp2`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).exp2()?.item::<f64>()?, 8.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn exp2(&self) -> Result<Tensor> {
        exp2(self)
    }

    /// `1 / √x` element-wise (PyTorch's `torch.rsqrt`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(4.0f64).rsqrt()?.item::<f64>()?, 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rsqrt(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Rsqrt, self, |x| x.rsqrt());
        rsqrt(self)
    }

    /// `x σ(x)` element-wise (PyTorch's `torch.nn.functional.silu`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).silu()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn silu(&self) -> Result<Tensor> {
        silu(self)
    }

    /// `x tanh(softplus(x))` element-wise (PyTorch's `torch.nn.functional.mish`).
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).mish()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mish(&self) -> Result<Tensor> {
        mish(self)
    }

    /// The largest integer not above each element (PyTorch's `torch.floor`); its gradient is zero.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(-1.5f64).floor()?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn floor(&self) -> Result<Tensor> {
        floor(self)
    }

    /// The smallest integer not below each element (PyTorch's `torch.ceil`); its gradient is zero.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(-1.5f64).ceil()?.item::<f64>()?, -1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn ceil(&self) -> Result<Tensor> {
        ceil(self)
    }

    /// The nearest integer to each element, halves to even as PyTorch's `torch.round` (`round(2.5) = 2`); its gradient is zero.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(2.5f64).round()?.item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn round(&self) -> Result<Tensor> {
        round(self)
    }

    /// The integer part of each element, towards zero (PyTorch's `torch.trunc`); its gradient is zero.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(-1.5f64).trunc()?.item::<f64>()?, -1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn trunc(&self) -> Result<Tensor> {
        trunc(self)
    }

    /// The smaller of each pair of elements, broadcasting as PyTorch's `torch.minimum`; NaN where either is NaN. Where the two are equal, each gets half the gradient, as in PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 5.0], &[2])?;
    /// let b = Tensor::from_vec(vec![3.0f64, 2.0], &[2])?;
    /// assert_eq!(a.minimum(&b)?.to_vec::<f64>()?, vec![1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        minimum(self, other)
    }

    /// The larger of each pair of elements, broadcasting as PyTorch's `torch.maximum`; NaN where either is NaN. Where the two are equal, each gets half the gradient, as in PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 5.0], &[2])?;
    /// let b = Tensor::from_vec(vec![3.0f64, 2.0], &[2])?;
    /// assert_eq!(a.maximum(&b)?.to_vec::<f64>()?, vec![3.0, 5.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        maximum(self, other)
    }

    /// `self - trunc(self / other) · other` element-wise, broadcasting (PyTorch's `torch.fmod`): the sign of `self`; NaN where `other` is 0.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![-7.0f64, 7.0], &[2])?;
    /// let b = Tensor::from_vec(vec![3.0f64, -3.0], &[2])?;
    /// assert_eq!(a.fmod(&b)?.to_vec::<f64>()?, vec![-1.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn fmod(&self, other: &Tensor) -> Result<Tensor> {
        fmod(self, other)
    }

    /// `self - floor(self / other) · other` element-wise, broadcasting (PyTorch's `torch.remainder`): the sign of `other`; NaN where `other` is 0.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![-7.0f64, 7.0], &[2])?;
    /// let b = Tensor::from_vec(vec![3.0f64, -3.0], &[2])?;
    /// assert_eq!(a.remainder(&b)?.to_vec::<f64>()?, vec![2.0, -2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        remainder(self, other)
    }

    /// The angle of the point `(other, self)` element-wise, in `[-π, π]`, broadcasting (PyTorch's `torch.atan2`).
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 0.0], &[2])?;
    /// let b = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
    /// assert_eq!(a.atan2(&b)?.to_vec::<f64>()?, vec![std::f64::consts::FRAC_PI_2, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        crate::amp::autocast_op!(Atan2, (self, other), |(a, b)| a.atan2(&b));
        atan2(self, other)
    }

    /// [`Tensor::fmod`] by a scalar (PyTorch's `torch.fmod(input, other: Scalar)`): the sign of
    /// `self`. The scalar promotes an integer or bool tensor as PyTorch's do (a float one makes
    /// it `f32`); an integer scalar on an integer tensor is exact (past 2^53).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) ("ZeroDivisionError") for an
    /// integer tensor by 0;
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-7.0f64, 7.0], &[2])?;
    /// assert_eq!(x.fmod_scalar(3.0)?.to_vec::<f64>()?, vec![-1.0, 1.0]);
    /// let n = Tensor::from_vec(vec![(1i64 << 62) + 7], &[1])?;
    /// assert_eq!(n.fmod_scalar(5)?.to_vec::<i64>()?, vec![1]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn fmod_scalar(&self, other: impl Into<Scalar>) -> Result<Tensor> {
        let s = other.into();
        match self.integer_scalar_op(BinaryOp::Fmod, "fmod", s, false)? {
            Some(r) => Ok(r),
            None => self.with_promoted(s, |x| fmod_scalar(x, s.to_f64())),
        }
    }

    /// [`Tensor::remainder`] by a scalar (PyTorch's `torch.remainder(input, other: Scalar)`):
    /// the sign of `other`. Promotion and integers as [`Tensor::fmod_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::fmod_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-7.0f64, 7.0], &[2])?;
    /// assert_eq!(x.remainder_scalar(3.0)?.to_vec::<f64>()?, vec![2.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn remainder_scalar(&self, other: impl Into<Scalar>) -> Result<Tensor> {
        let s = other.into();
        match self.integer_scalar_op(BinaryOp::Remainder, "remainder", s, false)? {
            Some(r) => Ok(r),
            None => self.with_promoted(s, |x| remainder_scalar(x, s.to_f64())),
        }
    }

    /// `log(1 + e^(βx)) / β` element-wise, or `x` where `βx > threshold` (PyTorch's
    /// `torch.nn.functional.softplus(input, beta=1.0, threshold=20.0)`; pass `1.0, 20.0` for
    /// its defaults). Differentiable twice and more.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![0.0f64, 30.0], &[2])?;
    /// let y = x.softplus(1.0, 20.0)?.to_vec::<f64>()?;
    /// assert_eq!(y, vec![std::f64::consts::LN_2, 30.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        crate::amp::autocast_op!(Softplus, self, |x| x.softplus(beta, threshold));
        softplus(self, beta, threshold)
    }

    /// Every element limited to `[min_val, max_val]` (PyTorch's
    /// `torch.nn.functional.hardtanh(input, min_val=-1.0, max_val=1.0)`; pass `-1.0, 1.0` for
    /// its defaults). The gradient passes where `min_val < x < max_val`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `min_val > max_val` (PyTorch's text); device errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-2.0f32, 0.5, 3.0], &[3])?;
    /// assert_eq!(x.hardtanh(-1.0, 1.0)?.to_vec::<f32>()?, vec![-1.0, 0.5, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn hardtanh(&self, min_val: f64, max_val: f64) -> Result<Tensor> {
        if min_val > max_val {
            return Err(Error::InvalidArgument(
                "min_val cannot be greater than max_val".into(),
            ));
        }
        hardtanh(self, min_val, max_val)
    }
}
