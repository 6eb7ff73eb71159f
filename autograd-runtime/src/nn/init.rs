//! PyTorch's initialisers (`torch.nn.init`): in-place fills of a tensor, the random ones from
//! PyTorch's streams.
//!
//! Each function writes its values into the tensor in place (under [`no_grad`], with
//! [`copy_`](Tensor::copy_)), so a parameter keeps its identity and stays a leaf that requires
//! grad. The random fills draw from the global generator ([`manual_seed`](crate::manual_seed)),
//! or from an explicit [`Generator`] in the `_with` forms, exactly as PyTorch's do: the same
//! seed gives PyTorch's CPU values in f32 and f64, and the bounds and standard deviations
//! ([`calculate_gain`], [`calculate_fan_in_and_fan_out`]) are computed as PyTorch computes them.
//!
//! ```
//! use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
//! use autograd_runtime::{DType, Tensor, manual_seed};
//!
//! manual_seed(0);
//! let w = Tensor::zeros(&[64, 32, 3, 3], DType::F32)?.requires_grad_(true)?;
//! init::kaiming_uniform_(&w, 5f64.sqrt(), FanMode::FanIn, Nonlinearity::LeakyRelu)?;
//! let bound = 1.0 / (32.0f32 * 9.0).sqrt();       // PyTorch's Conv2d default
//! assert!(w.to_vec::<f32>()?.iter().all(|x| x.abs() <= bound));
//! assert!(w.is_leaf() && w.requires_grad());
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

use crate::tensor::Samples;
use crate::{Error, Generator, Result, Tensor, default_generator, no_grad};

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

/// Writes `values` (a CPU tensor of `tensor`'s shape and dtype) into `tensor`, on its device,
/// without recording.
fn fill_from(tensor: &Tensor, values: &Tensor) -> Result<()> {
    let _no_grad = no_grad();
    tensor.copy_(&values.to(tensor.device())?)?;
    Ok(())
}

/// Fills `tensor` with samples uniform in `[low, high)` drawn from the global generator
/// (PyTorch's `uniform_(tensor, a, b)`).
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `low > high`; device errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let t = Tensor::zeros(&[2], DType::F32)?;
/// init::uniform_(&t, -2.0, 3.0)?;
/// assert_eq!(t.to_vec::<f32>()?, vec![0.48128295, 1.8411090]); // torch.empty(2).uniform_(-2, 3)
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn uniform_(tensor: &Tensor, low: f64, high: f64) -> Result<&Tensor> {
    uniform_with(tensor, low, high, &default_generator())
}

/// [`uniform_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`uniform_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Generator, Tensor};
/// let t = Tensor::zeros(&[100], DType::F64)?;
/// init::uniform_with(&t, -2.0, 3.0, &Generator::new().manual_seed(1))?;
/// assert!(t.to_vec::<f64>()?.iter().all(|x| (-2.0..3.0).contains(x)));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn uniform_with<'t>(
    tensor: &'t Tensor,
    low: f64,
    high: f64,
    generator: &Generator,
) -> Result<&'t Tensor> {
    if low > high {
        return Err(Error::InvalidArgument(format!(
            "uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
        )));
    }
    let values = Tensor::random("uniform_", tensor.shape(), tensor.dtype(), |v| match v {
        Samples::F32(v) => generator.fill_uniform_f32(v, low, high),
        Samples::F64(v) => generator.fill_uniform_f64(v, low, high),
    })?;
    fill_from(tensor, &values)?;
    Ok(tensor)
}

/// Fills `tensor` with samples of `N(mean, std²)` drawn from the global generator (PyTorch's
/// `normal_(tensor, mean, std)`).
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a negative `std`; device errors.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let t = Tensor::zeros(&[2], DType::F64)?;
/// init::normal_(&t, 1.0, 0.5)?;
/// assert_eq!(t.to_vec::<f64>()?, vec![1.7704980541220217, 0.8532855471195269]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn normal_(tensor: &Tensor, mean: f64, std: f64) -> Result<&Tensor> {
    normal_with(tensor, mean, std, &default_generator())
}

/// [`normal_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`normal_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Generator, Tensor};
/// let t = Tensor::zeros(&[10_000], DType::F64)?;
/// init::normal_with(&t, 1.0, 0.5, &Generator::new().manual_seed(3))?;
/// let mean = t.mean()?.item::<f64>()?;
/// assert!((mean - 1.0).abs() < 0.02);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn normal_with<'t>(
    tensor: &'t Tensor,
    mean: f64,
    std: f64,
    generator: &Generator,
) -> Result<&'t Tensor> {
    if std < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "normal expects std >= 0.0, but found std {std}"
        )));
    }
    let contiguous = tensor.is_contiguous();
    let values = Tensor::random("normal_", tensor.shape(), tensor.dtype(), |v| match v {
        Samples::F32(v) => generator.fill_normal_f32(v, mean, std, contiguous),
        Samples::F64(v) => generator.fill_normal_f64(v, mean, std, contiguous),
    })?;
    fill_from(tensor, &values)?;
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
/// init::xavier_uniform_(&w, 1.0)?;
/// assert!(w.to_vec::<f64>()?.iter().all(|x| x.abs() <= (6.0f64 / 30.0).sqrt()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_uniform_(tensor: &Tensor, gain: f64) -> Result<&Tensor> {
    xavier_uniform_with(tensor, gain, &default_generator())
}

/// [`xavier_uniform_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`xavier_uniform_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Generator, Tensor};
/// let (a, b) = (Tensor::zeros(&[4, 3], DType::F32)?, Tensor::zeros(&[4, 3], DType::F32)?);
/// init::xavier_uniform_with(&a, 1.0, &Generator::new().manual_seed(2))?;
/// init::xavier_uniform_with(&b, 1.0, &Generator::new().manual_seed(2))?;
/// assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_uniform_with<'t>(
    tensor: &'t Tensor,
    gain: f64,
    generator: &Generator,
) -> Result<&'t Tensor> {
    let bound = 3f64.sqrt() * xavier_std(tensor.shape(), gain)?;
    uniform_with(tensor, -bound, bound, generator)
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
/// init::xavier_normal_(&w, 1.0)?;
/// let var = w.mul(&w)?.mean()?.item::<f64>()?;
/// assert!((var / (2.0 / 300.0) - 1.0).abs() < 0.05);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_normal_(tensor: &Tensor, gain: f64) -> Result<&Tensor> {
    xavier_normal_with(tensor, gain, &default_generator())
}

/// [`xavier_normal_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`xavier_normal_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init;
/// use autograd_runtime::{DType, Generator, Tensor};
/// let w = Tensor::zeros(&[4, 3], DType::F64)?;
/// init::xavier_normal_with(&w, 1.0, &Generator::new().manual_seed(2))?;
/// assert!(w.to_vec::<f64>()?.iter().all(|x| x.is_finite()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn xavier_normal_with<'t>(
    tensor: &'t Tensor,
    gain: f64,
    generator: &Generator,
) -> Result<&'t Tensor> {
    let std = xavier_std(tensor.shape(), gain)?;
    normal_with(tensor, 0.0, std, generator)
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
/// init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu)?;
/// assert!(w.to_vec::<f64>()?.iter().all(|x| x.abs() <= (6.0f64 / 12.0).sqrt()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_uniform_(
    tensor: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<&Tensor> {
    kaiming_uniform_with(tensor, a, mode, nonlinearity, &default_generator())
}

/// [`kaiming_uniform_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`kaiming_uniform_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
/// use autograd_runtime::{DType, Generator, Tensor};
/// let w = Tensor::zeros(&[30, 12], DType::F32)?;
/// let g = Generator::new().manual_seed(4);
/// init::kaiming_uniform_with(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu, &g)?;
/// assert!(w.to_vec::<f32>()?.iter().all(|x| x.abs() <= (6.0f32 / 12.0).sqrt()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_uniform_with<'t>(
    tensor: &'t Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    generator: &Generator,
) -> Result<&'t Tensor> {
    match kaiming_std(tensor, a, mode, nonlinearity)? {
        Some(std) => {
            let bound = 3f64.sqrt() * std;
            uniform_with(tensor, -bound, bound, generator)
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
/// init::kaiming_normal_(&w, 0.0, FanMode::FanOut, Nonlinearity::Relu)?;
/// let var = w.mul(&w)?.mean()?.item::<f64>()?;
/// assert!((var / (2.0 / 400.0) - 1.0).abs() < 0.05);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_normal_(
    tensor: &Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
) -> Result<&Tensor> {
    kaiming_normal_with(tensor, a, mode, nonlinearity, &default_generator())
}

/// [`kaiming_normal_`] drawing from `generator` (PyTorch's `generator=` argument).
///
/// # Errors
///
/// As [`kaiming_normal_`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::init::{self, FanMode, Nonlinearity};
/// use autograd_runtime::{DType, Generator, Tensor};
/// let w = Tensor::zeros(&[30, 12], DType::F64)?;
/// let g = Generator::new().manual_seed(4);
/// init::kaiming_normal_with(&w, 0.0, FanMode::FanIn, Nonlinearity::Relu, &g)?;
/// assert!(w.to_vec::<f64>()?.iter().any(|&x| x != 0.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn kaiming_normal_with<'t>(
    tensor: &'t Tensor,
    a: f64,
    mode: FanMode,
    nonlinearity: Nonlinearity,
    generator: &Generator,
) -> Result<&'t Tensor> {
    match kaiming_std(tensor, a, mode, nonlinearity)? {
        Some(std) => normal_with(tensor, 0.0, std, generator),
        None => Ok(tensor),
    }
}
