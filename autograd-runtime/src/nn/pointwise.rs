//! The element-wise activations of `torch.nn.functional` that the tensor methods compute
//! (`silu`, `mish`, `softplus`, `hardtanh`, `relu6`, `sigmoid`, `tanh`) and the ELU family
//! (`elu`, `selu`, `celu`), written in differentiable ops.

use autograd_macros::{backward, differentiable, jvp};

use crate::{Error, Result, Tensor};

/// `x σ(x)` (PyTorch's `F.silu`); the tensor's [`silu`](Tensor::silu).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::silu;
/// use autograd_runtime::Tensor;
/// let y = silu(&Tensor::from_vec(vec![0.0f64, 1.0], &[2])?)?.to_vec::<f64>()?;
/// assert!(y[0] == 0.0 && (y[1] - 1.0 / (1.0 + (-1f64).exp())).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn silu(input: &Tensor) -> Result<Tensor> {
    input.silu()
}

/// `x tanh(softplus(x))` (PyTorch's `F.mish`); the tensor's [`mish`](Tensor::mish).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::mish;
/// use autograd_runtime::Tensor;
/// let y = mish(&Tensor::scalar(1.0f64))?.item::<f64>()?;
/// assert!((y - (1f64.exp().ln_1p()).tanh()).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn mish(input: &Tensor) -> Result<Tensor> {
    input.mish()
}

/// `log(1 + exp(β x)) / β`, and `x` where `β x > threshold` (PyTorch's
/// `F.softplus(input, beta=1.0, threshold=20.0)`; pass `1.0, 20.0` for its defaults).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::softplus;
/// use autograd_runtime::Tensor;
/// let y = softplus(&Tensor::from_vec(vec![0.0f64, 30.0], &[2])?, 1.0, 20.0)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![std::f64::consts::LN_2, 30.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn softplus(input: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    input.softplus(beta, threshold)
}

/// Every element limited to `[min_val, max_val]` (PyTorch's
/// `F.hardtanh(input, min_val=-1.0, max_val=1.0)`; pass `-1.0, 1.0` for its defaults).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `min_val > max_val`: `min_val cannot be greater than
/// max_val`, as PyTorch's.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::hardtanh;
/// use autograd_runtime::Tensor;
/// let y = hardtanh(&Tensor::from_vec(vec![-2.0f64, 0.5, 3.0], &[3])?, -1.0, 1.0)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![-1.0, 0.5, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn hardtanh(input: &Tensor, min_val: f64, max_val: f64) -> Result<Tensor> {
    input.hardtanh(min_val, max_val)
}

/// `min(max(x, 0), 6)` (PyTorch's `F.relu6`, its `hardtanh(x, 0, 6)`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::relu6;
/// use autograd_runtime::Tensor;
/// let y = relu6(&Tensor::from_vec(vec![-2.0f64, 0.5, 7.0], &[3])?)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![0.0, 0.5, 6.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn relu6(input: &Tensor) -> Result<Tensor> {
    input.hardtanh(0.0, 6.0)
}

/// The logistic sigmoid `1 / (1 + exp(-x))` (PyTorch's `F.sigmoid`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::sigmoid;
/// use autograd_runtime::Tensor;
/// assert_eq!(sigmoid(&Tensor::scalar(0.0f64))?.item::<f64>()?, 0.5);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn sigmoid(input: &Tensor) -> Result<Tensor> {
    input.sigmoid()
}

/// The hyperbolic tangent (PyTorch's `F.tanh`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::tanh;
/// use autograd_runtime::Tensor;
/// assert_eq!(tanh(&Tensor::scalar(0.0f64))?.item::<f64>()?, 0.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn tanh(input: &Tensor) -> Result<Tensor> {
    input.tanh()
}

/// PyTorch's `elu(x, alpha, scale, input_scale)`: `scale · x` where `x > 0`, else
/// `scale · alpha · (exp(input_scale · x) - 1)`; one `EluBackward0` node. The exponential is
/// taken of `min(x, 0)`, so that the branch not taken cannot overflow.
#[differentiable(builtin, crate = "crate", name = "EluBackward0")]
fn elu_op(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    elu_forward(x, alpha, scale, input_scale)
}

#[backward(elu_op)]
fn elu_op_backward(
    grad: &Tensor,
    x: &Tensor,
    alpha: f64,
    scale: f64,
    input_scale: f64,
) -> Result<Tensor> {
    grad.mul(&elu_slope(x, alpha, scale, input_scale)?)
}

/// `result: auto_element_wise`: `ẋ` times the backward's slope.
#[jvp(elu_op)]
fn elu_op_jvp(
    x_t: &Tensor,
    x: &Tensor,
    alpha: f64,
    scale: f64,
    input_scale: f64,
) -> Result<Tensor> {
    elu_op_backward(x_t, x, alpha, scale, input_scale)
}

/// `celu(x, alpha)`: `elu(x, alpha, 1, 1/alpha)`, one `CeluBackward0` node.
#[differentiable(builtin, crate = "crate", name = "CeluBackward0")]
fn celu_op(x: &Tensor, alpha: f64) -> Result<Tensor> {
    elu_forward(x, alpha, 1.0, 1.0 / alpha)
}

#[backward(celu_op)]
fn celu_op_backward(grad: &Tensor, x: &Tensor, alpha: f64) -> Result<Tensor> {
    // derivatives.yaml: `elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), false, self)`: the
    // gradient's input scale is that of `alpha` rounded to f32, as PyTorch's.
    grad.mul(&elu_slope(x, alpha, 1.0, 1.0 / f64::from(alpha as f32))?)
}

/// `result: auto_element_wise`: `ẋ` times the backward's slope.
#[jvp(celu_op)]
fn celu_op_jvp(x_t: &Tensor, x: &Tensor, alpha: f64) -> Result<Tensor> {
    celu_op_backward(x_t, x, alpha)
}

/// The forward of PyTorch's ELU kernel, in ops.
fn elu_forward(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    let positive = x.gt_scalar(0.0)?;
    let negative_part = x
        .masked_fill(&positive, 0.0)?
        .mul_scalar(input_scale)?
        .expm1()?
        .mul_scalar(alpha * scale)?;
    Tensor::where_(&positive, &x.mul_scalar(scale)?, &negative_part)
}

/// PyTorch's `elu_backward` slope (`is_result = false`): `scale` where `x > 0`, else
/// `input_scale · alpha · scale · exp(input_scale · x)`; in differentiable ops, so the
/// gradient is differentiable again.
fn elu_slope(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    let positive = x.gt_scalar(0.0)?;
    x.masked_fill(&positive, 0.0)?
        .mul_scalar(input_scale)?
        .exp()?
        .mul_scalar(input_scale * alpha * scale)?
        .masked_fill(&positive, scale)
}

/// The exponential linear unit (PyTorch's `F.elu(input, alpha=1.0)`): `x` where `x > 0`, else
/// `alpha · (exp(x) - 1)` (one `EluBackward0` node, as PyTorch's).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::elu;
/// use autograd_runtime::Tensor;
/// let y = elu(&Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?, 2.0)?.to_vec::<f64>()?;
/// assert!((y[0] - 2.0 * ((-1f64).exp() - 1.0)).abs() < 1e-15 && y[1] == 2.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn elu(input: &Tensor, alpha: f64) -> Result<Tensor> {
    elu_op(input, alpha, 1.0, 1.0)
}

/// PyTorch's SELU constants (`torch/csrc/api/include/torch/nn/functional/activation.h`).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// The scaled exponential linear unit (PyTorch's `F.selu`): `scale · elu(x, alpha)` with
/// `alpha = 1.6732632423543772…` and `scale = 1.0507009873554805…`.
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::selu;
/// use autograd_runtime::Tensor;
/// let y = selu(&Tensor::scalar(1.0f64))?.item::<f64>()?;
/// assert!((y - 1.0507009873554805).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn selu(input: &Tensor) -> Result<Tensor> {
    elu_op(input, SELU_ALPHA, SELU_SCALE, 1.0)
}

/// The continuously differentiable ELU (PyTorch's `F.celu(input, alpha=1.0)`): `x` where
/// `x > 0`, else `alpha · (exp(x / alpha) - 1)`. Its gradient is PyTorch's to the last bit,
/// which scales the input by `1 / alpha` with `alpha` rounded to f32 (`CeluBackward0`, from
/// `derivatives.yaml`).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `alpha` is 0: `ZeroDivisionError: alpha cannot be 0 for
/// CELU`, as PyTorch's.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::celu;
/// use autograd_runtime::Tensor;
/// let y = celu(&Tensor::scalar(-2.0f64), 2.0)?.item::<f64>()?;
/// assert!((y - 2.0 * ((-1f64).exp() - 1.0)).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn celu(input: &Tensor, alpha: f64) -> Result<Tensor> {
    if alpha == 0.0 {
        return Err(Error::InvalidArgument(
            "ZeroDivisionError: alpha cannot be 0 for CELU".into(),
        ));
    }
    celu_op(input, alpha)
}
