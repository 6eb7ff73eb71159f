//! PyTorch's initialisers (`torch.nn.init`): in-place fills of a tensor from an explicit seed.
//!
//! Each function writes its values into the tensor in place (under [`no_grad`], with
//! [`copy_`](Tensor::copy_)), so a parameter keeps its identity and stays a leaf that requires
//! grad. There is no global random generator: every random fill takes a `seed`, and the same
//! seed gives the same values. The formulas for the bounds and standard deviations
//! ([`calculate_gain`], [`calculate_fan_in_and_fan_out`]) are PyTorch's, so the distributions
//! are the same as PyTorch's (not the samples: the generators differ).
//!
//! ```
//! use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
//! use autograd_runtime::{DType, Tensor};
//!
//! let w = Tensor::zeros(&[64, 32, 3, 3], DType::F32)?.requires_grad_(true)?;
//! init::kaiming_uniform_(&w, 5f64.sqrt(), FanMode::FanIn, Nonlinearity::LeakyRelu, 0)?;
//! let bound = 1.0 / (32.0f32 * 9.0).sqrt();       // PyTorch's Conv2d default
//! assert!(w.to_vec::<f32>()?.iter().all(|x| x.abs() <= bound));
//! assert!(w.is_leaf() && w.requires_grad());
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

use crate::{Error, Result, Tensor, no_grad};

/// The nonlinearity a layer's output goes through, for [`calculate_gain`] (PyTorch's string
/// argument `nonlinearity`, as an enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nonlinearity {
    /// `"linear"`: gain 1.
    Linear,
    /// `"conv1d"`: gain 1.
    Conv1d,
    /// `"conv2d"`: gain 1.
    Conv2d,
    /// `"conv3d"`: gain 1.
    Conv3d,
    /// `"conv_transpose1d"`: gain 1.
    ConvTranspose1d,
    /// `"conv_transpose2d"`: gain 1.
    ConvTranspose2d,
    /// `"conv_transpose3d"`: gain 1.
    ConvTranspose3d,
    /// `"sigmoid"`: gain 1.
    Sigmoid,
    /// `"tanh"`: gain 5/3.
    Tanh,
    /// `"relu"`: gain √2.
    Relu,
    /// `"leaky_relu"`: gain √(2 / (1 + negative_slope²)), the slope being `param` (0.01 when
    /// `None`).
    LeakyRelu,
    /// `"selu"`: gain 3/4.
    Selu,
}

/// Which fan [`kaiming_uniform_`] and [`kaiming_normal_`] scale by (PyTorch's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FanMode {
    /// `"fan_in"` (the default): preserves the variance of the activations in the forward pass.
    #[default]
    FanIn,
    /// `"fan_out"`: preserves the variance of the gradients in the backward pass.
    FanOut,
}

/// The recommended gain for `nonlinearity` (PyTorch's `calculate_gain`): `param` is the
/// negative slope of [`Nonlinearity::LeakyRelu`] (0.01 when `None`) and is ignored otherwise.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a slope that is not a finite number
/// (`"negative_slope {param} not a valid number"`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::{calculate_gain, Nonlinearity};
/// assert_eq!(calculate_gain(Nonlinearity::Tanh, None)?, 5.0 / 3.0);
/// assert_eq!(calculate_gain(Nonlinearity::Relu, None)?, 2f64.sqrt());
/// let g = calculate_gain(Nonlinearity::LeakyRelu, Some(5f64.sqrt()))?;
/// assert!((g - (1.0f64 / 3.0).sqrt()).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn calculate_gain(nonlinearity: Nonlinearity, param: Option<f64>) -> Result<f64> {
    use Nonlinearity::*;
    Ok(match nonlinearity {
        Linear | Conv1d | Conv2d | Conv3d | ConvTranspose1d | ConvTranspose2d | ConvTranspose3d
        | Sigmoid => 1.0,
        Tanh => 5.0 / 3.0,
        Relu => 2f64.sqrt(),
        LeakyRelu => {
            let slope = param.unwrap_or(0.01);
            if !slope.is_finite() {
                return Err(Error::InvalidArgument(format!(
                    "negative_slope {slope} not a valid number"
                )));
            }
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        Selu => 3.0 / 4.0,
    })
}

/// `(fan_in, fan_out)` of a weight of `shape` (PyTorch's `_calculate_fan_in_and_fan_out`):
/// `shape[1]` and `shape[0]` times the product of the remaining dims (a convolution's
/// receptive field), so `[out, in]` gives `(in, out)` and `[out, in, kh, kw]` gives
/// `(in·kh·kw, out·kh·kw)`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for fewer than 2 dimensions, in PyTorch's words.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::calculate_fan_in_and_fan_out;
/// assert_eq!(calculate_fan_in_and_fan_out(&[16, 8, 3, 3])?, (72, 144));
/// assert!(calculate_fan_in_and_fan_out(&[5]).is_err());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn calculate_fan_in_and_fan_out(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(Error::InvalidArgument(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
                .to_string(),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// Writes `values` (a CPU f64 tensor of `tensor`'s shape) into `tensor`, converted to its dtype
/// and device, without recording.
fn fill_from(tensor: &Tensor, values: &Tensor) -> Result<()> {
    let _no_grad = no_grad();
    tensor.copy_(&values.to_dtype(tensor.dtype())?.to(tensor.device())?)?;
    Ok(())
}

/// Fills `tensor` with samples uniform in `[low, high)` (PyTorch's `uniform_(a, b)`), from
/// `seed`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `low > high`; device errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[100], DType::F64)?;
/// init::uniform_(&t, -2.0, 3.0, 1)?;
/// assert!(t.to_vec::<f64>()?.iter().all(|x| (-2.0..3.0).contains(x)));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn uniform_(tensor: &Tensor, low: f64, high: f64, seed: u64) -> Result<&Tensor> {
    if low > high {
        return Err(Error::InvalidArgument(format!(
            "uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
        )));
    }
    let u = Tensor::rand(tensor.shape(), crate::DType::F64, seed)?;
    fill_from(tensor, &u.mul_scalar(high - low)?.add_scalar(low)?)?;
    Ok(tensor)
}

/// Fills `tensor` with samples of `N(mean, std²)` (PyTorch's `normal_`), from `seed`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a negative `std`; device errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[10_000], DType::F64)?;
/// init::normal_(&t, 1.0, 0.5, 3)?;
/// let mean = t.mean()?.item::<f64>()?;
/// assert!((mean - 1.0).abs() < 0.02);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn normal_(tensor: &Tensor, mean: f64, std: f64, seed: u64) -> Result<&Tensor> {
    if std < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "normal expects std >= 0.0, but found std {std}"
        )));
    }
    let n = Tensor::randn(tensor.shape(), crate::DType::F64, seed)?;
    fill_from(tensor, &n.mul_scalar(std)?.add_scalar(mean)?)?;
    Ok(tensor)
}

/// Fills `tensor` with `value` (PyTorch's `constant_`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[2], DType::F32)?;
/// init::constant_(&t, 0.25)?;
/// assert_eq!(t.to_vec::<f32>()?, vec![0.25, 0.25]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn constant_(tensor: &Tensor, value: f64) -> Result<&Tensor> {
    let _no_grad = no_grad();
    tensor.fill_(value)?;
    Ok(tensor)
}

/// Fills `tensor` with zeros (PyTorch's `zeros_`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::ones(&[2], DType::F32)?;
/// assert_eq!(init::zeros_(&t)?.to_vec::<f32>()?, vec![0.0, 0.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn zeros_(tensor: &Tensor) -> Result<&Tensor> {
    constant_(tensor, 0.0)
}

/// Fills `tensor` with ones (PyTorch's `ones_`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[2], DType::F32)?;
/// assert_eq!(init::ones_(&t)?.to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn ones_(tensor: &Tensor) -> Result<&Tensor> {
    constant_(tensor, 1.0)
}

/// The bound of [`xavier_uniform_`]: `gain · √(6 / (fan_in + fan_out))`.
fn xavier_std(shape: &[usize], gain: f64) -> Result<f64> {
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(shape)?;
    Ok(gain * (2.0 / (fan_in + fan_out) as f64).sqrt())
}

/// Glorot initialisation (PyTorch's `xavier_uniform_`): uniform in `±gain·√(6 / (fan_in +
/// fan_out))`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a tensor with fewer than 2 dims.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let w = Tensor::zeros(&[20, 10], DType::F64)?;
/// init::xavier_uniform_(&w, 1.0, 0)?;
/// assert!(w.to_vec::<f64>()?.iter().all(|x| x.abs() <= (6.0f64 / 30.0).sqrt()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_uniform_(tensor: &Tensor, gain: f64, seed: u64) -> Result<&Tensor> {
    let bound = 3f64.sqrt() * xavier_std(tensor.shape(), gain)?;
    uniform_(tensor, -bound, bound, seed)
}

/// Glorot initialisation (PyTorch's `xavier_normal_`): `N(0, gain² · 2 / (fan_in + fan_out))`.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a tensor with fewer than 2 dims.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor};
/// let w = Tensor::zeros(&[200, 100], DType::F64)?;
/// init::xavier_normal_(&w, 1.0, 0)?;
/// let var = w.mul(&w)?.mean()?.item::<f64>()?;
/// assert!((var / (2.0 / 300.0) - 1.0).abs() < 0.05);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_normal_(tensor: &Tensor, gain: f64, seed: u64) -> Result<&Tensor> {
    let std = xavier_std(tensor.shape(), gain)?;
    normal_(tensor, 0.0, std, seed)
}

/// The standard deviation of the Kaiming initialisers, `gain / √fan`, or `None` for a tensor
/// without elements (which PyTorch leaves alone, with a warning).
fn kaiming_std(
    tensor: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<Option<f64>> {
    if tensor.numel() == 0 {
        return Ok(None);
    }
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(tensor.shape())?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    let gain = calculate_gain(nonlinearity, Some(a))?;
    Ok(Some(gain / (fan as f64).sqrt()))
}

/// He initialisation (PyTorch's `kaiming_uniform_`): uniform in `±gain·√(3 / fan)`, with
/// `gain = calculate_gain(nonlinearity, a)` and `fan` chosen by `mode`. PyTorch's defaults are
/// `a = 0`, [`FanMode::FanIn`], [`Nonlinearity::LeakyRelu`]; its `Linear` and `Conv2d` use
/// `a = √5`, which gives the bound `1/√fan_in`. A tensor without elements is left alone.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a tensor with fewer than 2 dims or a non-finite `a` with
/// [`Nonlinearity::LeakyRelu`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
/// use autograd_runtime::{DType, Tensor};
/// let w = Tensor::zeros(&[30, 12], DType::F64)?;
/// init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu, 4)?;
/// assert!(w.to_vec::<f64>()?.iter().all(|x| x.abs() <= (6.0f64 / 12.0).sqrt()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_uniform_(
    tensor: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    seed: u64,
) -> Result<&Tensor> {
    match kaiming_std(tensor, a, mode, nonlinearity)? {
        Some(std) => {
            let bound = 3f64.sqrt() * std;
            uniform_(tensor, -bound, bound, seed)
        }
        None => Ok(tensor),
    }
}

/// He initialisation (PyTorch's `kaiming_normal_`): `N(0, gain² / fan)`, with `gain` and `fan`
/// as in [`kaiming_uniform_`]. A tensor without elements is left alone.
///
/// # Errors
///
/// As [`kaiming_uniform_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
/// use autograd_runtime::{DType, Tensor};
/// let w = Tensor::zeros(&[100, 50, 2, 2], DType::F64)?;
/// init::kaiming_normal_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu, 4)?;
/// let var = w.mul(&w)?.mean()?.item::<f64>()?;
/// assert!((var / (2.0 / 400.0) - 1.0).abs() < 0.05);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_normal_(
    tensor: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    seed: u64,
) -> Result<&Tensor> {
    match kaiming_std(tensor, a, mode, nonlinearity)? {
        Some(std) => normal_(tensor, 0.0, std, seed),
        None => Ok(tensor),
    }
}
