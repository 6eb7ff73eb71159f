//! Element-wise unary ops (`neg exp log sin cos tanh sigmoid relu sqrt abs pow`). Each gradient
//! formula saves either the input or the result, as PyTorch's `derivatives.yaml` does.

use autograd_macros::{backward, differentiable, jvp};

use super::records;
use crate::backend::{BinaryOp, GradFormula, UnaryOp};
use crate::tensor::kernels;
use crate::{Result, Tensor};

impl Tensor {
    /// Applies an element-wise kernel without recording anything.
    pub(crate) fn unary_kernel(&self, op: UnaryOp) -> Result<Tensor> {
        kernels::of_tensor(self)?.unary(op, self)
    }

    /// The grad formula kernel `op(self, saved)` (`self` the incoming gradient): one pass, one
    /// output, never recorded. Formulas call it only when they are not recorded themselves
    /// ([`super::records`] is false); under `create_graph` they spell the formula out in ops.
    ///
    /// When this gradient is referenced by nothing else ([`Tensor::is_uniquely_owned`]: the
    /// engine handed over its only handle, and the formula uses it once), a closed-form
    /// formula writes over its buffer instead of allocating one: no one can observe the write.
    pub(crate) fn grad_formula(&self, op: GradFormula, saved: &Tensor) -> Result<Tensor> {
        let backend = kernels::of_pair("backward formula", self, saved)?;
        if op.is_closed_form() && self.shape() == saved.shape() && self.is_uniquely_owned() {
            backend.grad_formula_inplace(op, self, saved)?;
            return Ok(self.clone());
        }
        backend.grad_formula(op, self, saved)
    }

    /// The backward of a `#[backward(op, formula = GradFormula::..)]` declaration (`self` the
    /// incoming gradient, `saved` the one tensor the backward names): the grad formula kernel,
    /// unless the formula is recorded (a `create_graph` pass where an input of the formula
    /// requires grad) or the kernel does not cover the call; then `in_ops`, the backward's body
    /// written in differentiable ops.
    ///
    /// The inputs of the formula are the gradient and `saved`, the masks' (`relu`, `abs`) too:
    /// their mask of `saved` is recorded with a zero derivative, as PyTorch records it. `x^0`'s
    /// gradient is zeros (PyTorch's `pow_backward`), which the kernel does not give at `x = 0`.
    #[inline]
    pub(crate) fn grad_formula_or(
        &self,
        op: GradFormula,
        saved: &Tensor,
        in_ops: impl FnOnce() -> Result<Tensor>,
    ) -> Result<Tensor> {
        let covers = !matches!(op, GradFormula::Pow { exponent } if exponent == 0.0);
        // Relu's and abs's formulas read `saved` only through a mask, but record it too (with a
        // zero derivative), as PyTorch does: a gradient made with `create_graph` then requires
        // grad when `saved` does.
        if covers && !records(&[self, saved]) {
            self.grad_formula(op, saved)
        } else {
            in_ops()
        }
    }

    /// The tangent `self · f'(x)` of an op whose backward is the grad formula `op` (`self` the
    /// input's tangent, `saved` what the backward saves): `g · f'(x)` and `ẋ · f'(x)` are the
    /// same product, so forward mode runs the backward's fused kernel, one pass. As
    /// [`Tensor::grad_formula_or`], `in_ops` (the rule in differentiable ops) when the formula
    /// is recorded (the tangent or `saved` requires grad), and also when the tangent has another
    /// dtype than `saved` (a tangent may be of another floating dtype than its primal, and the
    /// ops then promote, as PyTorch's) or lives elsewhere, which the kernel does not take.
    ///
    /// Writing over the tangent's buffer (when uniquely owned) cannot be observed: an input's
    /// tangent is also held by the input, and zeros made for an input without one by no one.
    #[inline]
    pub(crate) fn tangent_formula_or(
        &self,
        op: GradFormula,
        saved: &Tensor,
        in_ops: impl FnOnce() -> Result<Tensor>,
    ) -> Result<Tensor> {
        if self.dtype() == saved.dtype()
            && self.shape() == saved.shape()
            && self.device() == saved.device()
        {
            self.grad_formula_or(op, saved, in_ops)
        } else {
            in_ops()
        }
    }

    /// Whether any element is NaN (anomaly mode).
    pub(crate) fn has_nan(&self) -> Result<bool> {
        kernels::of_tensor(self)?.has_nan(self)
    }
}

// ----- the ops: a kernel and a formula each -----------------------------------------------------

/// d eˣ = eˣ: saves the result.
#[differentiable(builtin, crate = "crate", rule)]
fn exp(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Exp)
}

#[backward(exp)]
fn exp_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.last_use(BinaryOp::Mul, result)
}

/// `ẋ eˣ`, from the result.
#[jvp(exp)]
fn exp_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(result)
}

/// d log x = 1/x.
#[differentiable(builtin, crate = "crate", rule)]
fn log(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Log)
}

#[backward(log)]
fn log_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.last_use(BinaryOp::Div, x)
}

/// `result: auto_element_wise`: `ẋ / x`.
#[jvp(log)]
fn log_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.div(x)
}

/// d sin x = cos x.
#[differentiable(builtin, crate = "crate", rule)]
fn sin(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Sin)
}

#[backward(sin, formula = GradFormula::Sin)]
fn sin_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.cos()?)
}

/// `ẋ cos x`: the backward's kernel.
#[jvp(sin)]
fn sin_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Sin, x, || x_t.mul(&x.cos()?))
}

/// d cos x = -sin x.
#[differentiable(builtin, crate = "crate", rule)]
fn cos(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Cos)
}

#[backward(cos, formula = GradFormula::Cos)]
fn cos_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&x.sin()?)?.neg()
}

/// `-ẋ sin x`: the backward's kernel.
#[jvp(cos)]
fn cos_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Cos, x, || x_t.mul(&x.sin()?)?.neg())
}

/// d tanh x = 1 - tanh² x: saves the result.
#[differentiable(builtin, crate = "crate", rule)]
fn tanh(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Tanh)
}

#[backward(tanh, formula = GradFormula::Tanh)]
fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
}

/// `ẋ (1 - y²)`: the backward's kernel.
#[jvp(tanh)]
fn tanh_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Tanh, result, || {
        x_t.mul(&result.mul(result)?.rsub_scalar(1.0)?)
    })
}

/// d σ(x) = σ(x)(1 - σ(x)): saves the result.
#[differentiable(builtin, crate = "crate", rule)]
fn sigmoid(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Sigmoid)
}

#[backward(sigmoid, formula = GradFormula::Sigmoid)]
fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(&result.rsub_scalar(1.0)?)?)
}

/// `ẋ y (1 - y)`: the backward's kernel.
#[jvp(sigmoid)]
fn sigmoid_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Sigmoid, result, || {
        x_t.mul(&result.mul(&result.rsub_scalar(1.0)?)?)
    })
}

/// The gradient flows where the result is positive.
#[differentiable(builtin, crate = "crate", rule)]
fn relu(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Relu)
}

#[backward(relu, formula = GradFormula::Relu)]
fn relu_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&positive_mask(result)?)
}

/// `ẋ` where `y > 0`: the backward's kernel.
#[jvp(relu)]
fn relu_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Relu, result, || {
        x_t.mul(&positive_mask(result)?)
    })
}

/// 1 where `x > 0`, else 0: relu's gradient mask. Recorded with a zero derivative, so that a
/// gradient taken with `create_graph` through relu requires grad as PyTorch's does (its
/// `threshold_backward` is recorded with `result` as an input), and a second derivative through
/// it is zero rather than an error.
#[differentiable(builtin, crate = "crate", name = "ThresholdBackwardBackward0")]
fn positive_mask(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::PositiveMask)
}

#[backward(positive_mask)]
fn positive_mask_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent (a mask is flat), reached when relu's gradient is taken with `create_graph`
/// on dual tensors.
#[jvp(positive_mask)]
fn positive_mask_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

/// d √x = 1 / (2√x): saves the result.
#[differentiable(builtin, crate = "crate", rule)]
fn sqrt(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Sqrt)
}

#[backward(sqrt, formula = GradFormula::Sqrt)]
fn sqrt_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.div(&result.mul_scalar(2.0)?)
}

/// `ẋ / (2y)`, from the result as PyTorch's: the backward's kernel.
#[jvp(sqrt)]
fn sqrt_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Sqrt, result, || {
        x_t.div(&result.mul_scalar(2.0)?)
    })
}

/// d |x| = sign x.
#[differentiable(builtin, crate = "crate", rule)]
fn abs(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Abs)
}

#[backward(abs, formula = GradFormula::Abs)]
fn abs_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    grad.mul(&sgn(x)?)
}

/// `ẋ sgn x`: the backward's kernel.
#[jvp(abs)]
fn abs_jvp(x_t: &Tensor, x: &Tensor) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Abs, x, || x_t.mul(&sgn(x)?))
}

/// The sign of `x` (0 at 0): abs's gradient. Recorded with a zero derivative, as PyTorch's
/// `sgn`, so that a gradient taken with `create_graph` through abs requires grad as PyTorch's
/// does.
#[differentiable(builtin, crate = "crate", name = "SgnBackward0")]
fn sgn(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Sign)
}

#[backward(sgn)]
fn sgn_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

/// A zero tangent (`sgn_backward` of a real tensor).
#[jvp(sgn)]
fn sgn_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.zeros_like()
}

#[differentiable(builtin, crate = "crate", rule)]
fn neg(x: &Tensor) -> Result<Tensor> {
    x.unary_kernel(UnaryOp::Neg)
}

#[backward(neg)]
fn neg_backward(grad: &Tensor) -> Result<Tensor> {
    grad.neg()
}

/// `result: auto_linear`: `-ẋ`.
#[jvp(neg)]
fn neg_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.neg()
}

#[differentiable(builtin, crate = "crate", rule)]
fn pow(x: &Tensor, exponent: f64) -> Result<Tensor> {
    kernels::of_tensor(x)?.pow_scalar(x, exponent)
}

#[backward(pow, formula = GradFormula::Pow { exponent })]
fn pow_backward(grad: &Tensor, x: &Tensor, exponent: f64) -> Result<Tensor> {
    if exponent == 0.0 {
        grad.zeros_like()
    } else {
        grad.mul(&x.pow(exponent - 1.0)?.mul_scalar(exponent)?)
    }
}

/// `pow_backward(ẋ, x, e)`: the backward's kernel (zeros for `e = 0`).
#[jvp(pow)]
fn pow_jvp(x_t: &Tensor, x: &Tensor, exponent: f64) -> Result<Tensor> {
    x_t.tangent_formula_or(GradFormula::Pow { exponent }, x, || {
        if exponent == 0.0 {
            x_t.zeros_like()
        } else {
            x_t.mul(&x.pow(exponent - 1.0)?.mul_scalar(exponent)?)
        }
    })
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn exp(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Exp, self, |x| x.exp());
        exp(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn log(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Log, self, |x| x.log());
        log(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn sin(&self) -> Result<Tensor> {
        sin(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn cos(&self) -> Result<Tensor> {
        cos(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn tanh(&self) -> Result<Tensor> {
        tanh(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn sigmoid(&self) -> Result<Tensor> {
        sigmoid(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn relu(&self) -> Result<Tensor> {
        relu(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn sqrt(&self) -> Result<Tensor> {
        sqrt(self)
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
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    pub fn abs(&self) -> Result<Tensor> {
        abs(self)
    }
}

impl Tensor {
    /// `-x` element-wise.
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
    /// assert_eq!(Tensor::scalar(2.0f64).neg()?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn neg(&self) -> Result<Tensor> {
        neg(self)
    }

    /// `xᵉ` element-wise for a scalar exponent.
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
    /// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// let y = x.pow(2.0)?;
    /// y.backward()?;
    /// assert_eq!((y.item::<f64>()?, x.grad().unwrap().item::<f64>()?), (9.0, 6.0));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn pow(&self, exponent: f64) -> Result<Tensor> {
        crate::amp::autocast_op!(Pow, self, |x| x.pow(exponent));
        pow(self, exponent)
    }
}
