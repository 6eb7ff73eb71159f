//! Element-wise unary ops (`neg exp log sin cos tanh sigmoid relu sqrt abs pow`). Each gradient
//! formula saves either the input or the result, as PyTorch's `derivatives.yaml` does.

use autograd_macros::{backward, differentiable};

use crate::backend::cpu::{self, UnaryOp};
use crate::tensor::data::with_view;
use crate::{Result, Tensor};

impl Tensor {
    /// Applies an element-wise kernel without recording anything.
    pub(crate) fn unary_kernel(&self, op: UnaryOp) -> Tensor {
        let device = self.device();
        with_view!(self, |a| Tensor::from_ndarray_on(cpu::unary(op, a), device))
    }

    /// Whether any element is NaN (anomaly mode).
    pub(crate) fn has_nan(&self) -> bool {
        with_view!(self, |a| cpu::has_nan(a))
    }
}

// ----- the ops: a kernel and a formula each -----------------------------------------------------

/// d eˣ = eˣ: saves the result.
#[differentiable(builtin, crate = "crate")]
fn exp(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Exp)
}

#[backward(exp)]
fn exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(result)
}

/// d log x = 1/x.
#[differentiable(builtin, crate = "crate")]
fn log(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Log)
}

#[backward(log)]
fn log_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.div(x)
}

/// d sin x = cos x.
#[differentiable(builtin, crate = "crate")]
fn sin(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Sin)
}

#[backward(sin)]
fn sin_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.cos()?)
}

/// d cos x = -sin x.
#[differentiable(builtin, crate = "crate")]
fn cos(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Cos)
}

#[backward(cos)]
fn cos_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.sin()?)?.neg()
}

/// d tanh x = 1 - tanh² x: saves the result.
#[differentiable(builtin, crate = "crate")]
fn tanh(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Tanh)
}

#[backward(tanh)]
fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
}

/// d σ(x) = σ(x)(1 - σ(x)): saves the result.
#[differentiable(builtin, crate = "crate")]
fn sigmoid(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Sigmoid)
}

#[backward(sigmoid)]
fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(&result.rsub_scalar(1.0)?)?)
}

/// The gradient flows where the result is positive.
#[differentiable(builtin, crate = "crate")]
fn relu(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Relu)
}

#[backward(relu)]
fn relu_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.unary_kernel(UnaryOp::PositiveMask))
}

/// d √x = 1 / (2√x): saves the result.
#[differentiable(builtin, crate = "crate")]
fn sqrt(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Sqrt)
}

#[backward(sqrt)]
fn sqrt_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.div(&result.mul_scalar(2.0)?)
}

/// d |x| = sign x.
#[differentiable(builtin, crate = "crate")]
fn abs(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Abs)
}

#[backward(abs)]
fn abs_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.unary_kernel(UnaryOp::Sign))
}

#[differentiable(builtin, crate = "crate")]
fn neg(x: &Tensor) -> Tensor {
    x.unary_kernel(UnaryOp::Neg)
}

#[backward(neg)]
fn neg_backward(grad: &Tensor) -> Result<Tensor> {
    grad.neg()
}

#[differentiable(builtin, crate = "crate")]
fn pow(x: &Tensor, exponent: f64) -> Tensor {
    let device = x.device();
    with_view!(x, |a| Tensor::from_ndarray_on(
        cpu::pow_scalar(a, exponent),
        device
    ))
}

#[backward(pow)]
fn pow_backward(grad: &Tensor, x: &Tensor, exponent: f64) -> Result<Tensor> {
    if exponent == 0.0 {
        Ok(grad.zeros_like())
    } else {
        grad.mul(&x.pow(exponent - 1.0)?.mul_scalar(exponent)?)
    }
}

impl Tensor {
    /// `eˣ` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).exp()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn exp(&self) -> Result<Tensor> {
        Ok(exp(self))
    }

    /// Natural logarithm element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(1.0f64).log()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn log(&self) -> Result<Tensor> {
        Ok(log(self))
    }

    /// Sine element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).sin()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn sin(&self) -> Result<Tensor> {
        Ok(sin(self))
    }

    /// Cosine element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).cos()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn cos(&self) -> Result<Tensor> {
        Ok(cos(self))
    }

    /// Hyperbolic tangent element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).tanh()?.item::<f64>()?, 0.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn tanh(&self) -> Result<Tensor> {
        Ok(tanh(self))
    }

    /// Logistic sigmoid `1 / (1 + e⁻ˣ)` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(0.0f64).sigmoid()?.item::<f64>()?, 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn sigmoid(&self) -> Result<Tensor> {
        Ok(sigmoid(self))
    }

    /// `max(x, 0)` element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![-1.0f32, 2.0], &[2])?;
    /// assert_eq!(t.relu()?.to_vec::<f32>()?, vec![0.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn relu(&self) -> Result<Tensor> {
        Ok(relu(self))
    }

    /// Square root element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(9.0f64).sqrt()?.item::<f64>()?, 3.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn sqrt(&self) -> Result<Tensor> {
        Ok(sqrt(self))
    }

    /// Absolute value element-wise.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(-2.0f64).abs()?.item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    pub fn abs(&self) -> Result<Tensor> {
        Ok(abs(self))
    }
}

impl Tensor {
    /// `-x` element-wise.
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(2.0f64).neg()?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn neg(&self) -> Result<Tensor> {
        Ok(neg(self))
    }

    /// `xᵉ` element-wise for a scalar exponent.
    ///
    /// # Errors
    ///
    /// Infallible on the CPU; kept fallible like every op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// let y = x.pow(2.0)?;
    /// y.backward()?;
    /// assert_eq!((y.item::<f64>()?, x.grad().unwrap().item::<f64>()?), (9.0, 6.0));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn pow(&self, exponent: f64) -> Result<Tensor> {
        Ok(pow(self, exponent))
    }
}
