//! Activations as modules without parameters (PyTorch's `nn.ReLU`, `nn.GELU`, …) and as
//! functions (`functional::relu`, …), written in differentiable ops.

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI};

use crate::layout::wrap_dim;
use crate::nn::{Forward, Module};
use crate::{Result, Tensor};

/// `new()` and `Default` for layers without arguments: a new module trains, as PyTorch's do.
macro_rules! without_arguments {
    ($($ty:ident),*) => {$(
        impl $ty {
            #[doc = concat!("A new `", stringify!($ty), "` (in training mode, as every new module).")]
            pub fn new() -> $ty {
                $ty { training: true }
            }
        }

        impl Default for $ty {
            fn default() -> $ty {
                $ty::new()
            }
        }
    )*};
}
pub(super) use without_arguments;

without_arguments!(Relu, Tanh, Sigmoid, Identity);

/// `max(x, 0)` (PyTorch's `nn.ReLU`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Relu};
/// use autograd_runtime::Tensor;
/// let y = Relu::new().forward(&Tensor::from_vec(vec![-1.0f32, 2.0], &[2])?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0, 2.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "ReLU")]
pub struct Relu {
    training: bool,
}

impl Forward for Relu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        input.relu()
    }
}

/// `tanh x` (PyTorch's `nn.Tanh`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Tanh};
/// use autograd_runtime::Tensor;
/// let y = Tanh::new().forward(&Tensor::from_vec(vec![0.0f64], &[1])?)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![0.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
pub struct Tanh {
    training: bool,
}

impl Forward for Tanh {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        input.tanh()
    }
}

/// `1 / (1 + e⁻ˣ)` (PyTorch's `nn.Sigmoid`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Sigmoid};
/// use autograd_runtime::Tensor;
/// let y = Sigmoid::new().forward(&Tensor::from_vec(vec![0.0f64], &[1])?)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![0.5]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
pub struct Sigmoid {
    training: bool,
}

impl Forward for Sigmoid {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        input.sigmoid()
    }
}

/// Passes its input through (PyTorch's `nn.Identity`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Identity};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![3.0f32], &[1])?;
/// assert!(Identity::new().forward(&x)?.is_same(&x));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
pub struct Identity {
    training: bool,
}

impl Forward for Identity {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        Ok(input.clone())
    }
}

/// Which form of GELU to compute (PyTorch's `approximate` argument).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GeluApproximate {
    /// `"none"` (the default): `x · Φ(x) = x/2 · (1 + erf(x/√2))`.
    #[default]
    None,
    /// `"tanh"`: `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`.
    Tanh,
}

/// The Gaussian error linear unit (PyTorch's `nn.GELU`), exact by default.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Gelu, GeluApproximate};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64], &[1])?;
/// let exact = Gelu::new().forward(&x)?.item::<f64>()?;
/// let tanh = Gelu::with_approximate(GeluApproximate::Tanh).forward(&x)?.item::<f64>()?;
/// assert!((exact - 0.841_344_746_068_542_9).abs() < 1e-15);
/// assert!((tanh - 0.841_191_990_608_276_8).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "GELU", extra_repr = Gelu::extra_repr)]
pub struct Gelu {
    #[module(skip)]
    approximate: GeluApproximate,
    training: bool,
}

impl Gelu {
    /// The exact GELU (`approximate="none"`).
    pub fn new() -> Gelu {
        Gelu::with_approximate(GeluApproximate::None)
    }

    /// The GELU of the given form.
    pub fn with_approximate(approximate: GeluApproximate) -> Gelu {
        Gelu {
            approximate,
            training: true,
        }
    }
}

impl Default for Gelu {
    fn default() -> Gelu {
        Gelu::new()
    }
}

impl Gelu {
    fn extra_repr(&self) -> String {
        match self.approximate {
            GeluApproximate::None => "approximate='none'".into(),
            GeluApproximate::Tanh => "approximate='tanh'".into(),
        }
    }
}

impl Forward for Gelu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        gelu(input, self.approximate)
    }
}

/// `x` where positive, `negative_slope · x` elsewhere (PyTorch's `nn.LeakyReLU`, slope 0.01 by
/// default).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, LeakyRelu};
/// use autograd_runtime::Tensor;
/// let y = LeakyRelu::new(0.5).forward(&Tensor::from_vec(vec![-2.0f64, 3.0], &[2])?)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![-1.0, 3.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "LeakyReLU", extra_repr = LeakyRelu::extra_repr)]
pub struct LeakyRelu {
    #[module(skip)]
    negative_slope: f64,
    training: bool,
}

impl LeakyRelu {
    /// With the given slope for negative inputs.
    pub fn new(negative_slope: f64) -> LeakyRelu {
        LeakyRelu {
            negative_slope,
            training: true,
        }
    }
}

impl Default for LeakyRelu {
    /// PyTorch's default slope, 0.01.
    fn default() -> LeakyRelu {
        LeakyRelu::new(0.01)
    }
}

impl LeakyRelu {
    fn extra_repr(&self) -> String {
        format!(
            "negative_slope={}",
            super::repr::py_float(self.negative_slope)
        )
    }
}

impl Forward for LeakyRelu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        leaky_relu(input, self.negative_slope)
    }
}

/// Softmax over `dim` (PyTorch's `nn.Softmax(dim)`; negative dims count from the end).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Softmax};
/// use autograd_runtime::Tensor;
/// let y = Softmax::new(-1).forward(&Tensor::from_vec(vec![1.0f64, 1.0], &[1, 2])?)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![0.5, 0.5]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(extra_repr = Softmax::extra_repr)]
pub struct Softmax {
    #[module(skip)]
    dim: isize,
    training: bool,
}

impl Softmax {
    /// Over `dim`.
    pub fn new(dim: isize) -> Softmax {
        Softmax {
            dim,
            training: true,
        }
    }
}

impl Softmax {
    fn extra_repr(&self) -> String {
        format!("dim={}", self.dim)
    }
}

impl Forward for Softmax {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        softmax(input, self.dim)
    }
}

/// Log-softmax over `dim` (PyTorch's `nn.LogSoftmax(dim)`; negative dims count from the end).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, LogSoftmax};
/// use autograd_runtime::Tensor;
/// let y = LogSoftmax::new(1).forward(&Tensor::from_vec(vec![0.0f64, 0.0], &[1, 2])?)?;
/// assert!((y.to_vec::<f64>()?[0] + 2f64.ln()).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(extra_repr = LogSoftmax::extra_repr)]
pub struct LogSoftmax {
    #[module(skip)]
    dim: isize,
    training: bool,
}

impl LogSoftmax {
    /// Over `dim`.
    pub fn new(dim: isize) -> LogSoftmax {
        LogSoftmax {
            dim,
            training: true,
        }
    }
}

impl LogSoftmax {
    fn extra_repr(&self) -> String {
        format!("dim={}", self.dim)
    }
}

impl Forward for LogSoftmax {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        log_softmax(input, self.dim)
    }
}

// ----- the functions ----------------------------------------------------------------------------

/// `max(x, 0)` (PyTorch's `F.relu`).
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::relu;
/// use autograd_runtime::Tensor;
/// assert_eq!(relu(&Tensor::from_vec(vec![-1.0f64], &[1])?)?.to_vec::<f64>()?, vec![0.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn relu(input: &Tensor) -> Result<Tensor> {
    input.relu()
}

/// GELU (PyTorch's `F.gelu(x, approximate=...)`): `x/2 · (1 + erf(x/√2))`, or the tanh form.
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::gelu;
/// use autograd_runtime::nn::GeluApproximate;
/// use autograd_runtime::Tensor;
/// let y = gelu(&Tensor::from_vec(vec![-1.0f64], &[1])?, GeluApproximate::None)?;
/// assert!((y.item::<f64>()? + 0.158_655_253_931_457_05).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn gelu(input: &Tensor, approximate: GeluApproximate) -> Result<Tensor> {
    let inner = match approximate {
        GeluApproximate::None => input.mul_scalar(FRAC_1_SQRT_2)?.erf()?,
        GeluApproximate::Tanh => {
            // √(2/π) = 2/√π · 1/√2, as PyTorch computes `kBeta`.
            let beta = FRAC_2_SQRT_PI * FRAC_1_SQRT_2;
            let cube = input.mul(input)?.mul(input)?;
            input
                .add(&cube.mul_scalar(0.044715)?)?
                .mul_scalar(beta)?
                .tanh()?
        }
    };
    input.mul_scalar(0.5)?.mul(&inner.add_scalar(1.0)?)
}

/// `x` where positive, `negative_slope · x` elsewhere (PyTorch's `F.leaky_relu`), written as
/// `s·x + (1 - s)·relu(x)`, so that the gradient at 0 is `s`, as PyTorch's.
///
/// # Errors
///
/// Device errors only.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::leaky_relu;
/// use autograd_runtime::Tensor;
/// let y = leaky_relu(&Tensor::from_vec(vec![-3.0f64, 2.0], &[2])?, 0.1)?;
/// assert!((y.to_vec::<f64>()?[0] + 0.3).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn leaky_relu(input: &Tensor, negative_slope: f64) -> Result<Tensor> {
    input
        .mul_scalar(negative_slope)?
        .add(&input.relu()?.mul_scalar(1.0 - negative_slope)?)
}

/// Softmax over `dim` (PyTorch's `F.softmax`; negative dims count from the end).
///
/// # Errors
///
/// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::softmax;
/// use autograd_runtime::Tensor;
/// let y = softmax(&Tensor::from_vec(vec![0.0f64, 0.0], &[2])?, -1)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![0.5, 0.5]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn softmax(input: &Tensor, dim: isize) -> Result<Tensor> {
    input.softmax(wrap_dim(dim, input.ndim())?)
}

/// Log-softmax over `dim` (PyTorch's `F.log_softmax`; negative dims count from the end).
///
/// # Errors
///
/// [`Error::DimOutOfRange`](crate::Error::DimOutOfRange).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::log_softmax;
/// use autograd_runtime::Tensor;
/// let y = log_softmax(&Tensor::from_vec(vec![0.0f64, 0.0], &[2])?, 0)?;
/// assert!((y.to_vec::<f64>()?[1] + 2f64.ln()).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn log_softmax(input: &Tensor, dim: isize) -> Result<Tensor> {
    input.log_softmax(wrap_dim(dim, input.ndim())?)
}
