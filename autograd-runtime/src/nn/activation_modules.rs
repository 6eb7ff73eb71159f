//! The activations of [`functional`](super::functional) that PyTorch also has as modules:
//! `nn.SiLU`, `nn.Mish`, `nn.Softplus`, `nn.Hardtanh`, `nn.ReLU6`, `nn.ELU`, `nn.SELU`,
//! `nn.CELU`, without parameters, with PyTorch's `repr`.

use super::functional::{celu, elu, hardtanh, mish, relu6, selu, silu, softplus};
use super::repr::py_float;
use crate::nn::{Forward, Module};
use crate::{Error, Result, Tensor};

super::activation::without_arguments!(Silu, Mish, Relu6, Selu);

/// `x σ(x)` (PyTorch's `nn.SiLU`, [`silu`](super::functional::silu)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Module, Silu};
/// use autograd_runtime::Tensor;
/// let y = Silu::new().forward(&Tensor::from_vec(vec![0.0f64, 1.0], &[2])?)?.to_vec::<f64>()?;
/// assert!(y[0] == 0.0 && (y[1] - 1.0 / (1.0 + (-1f64).exp())).abs() < 1e-15);
/// assert_eq!(Silu::new().to_string(), "SiLU()");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "SiLU")]
pub struct Silu {
    training: bool,
}

impl Forward for Silu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        silu(input)
    }
}

/// `x tanh(softplus(x))` (PyTorch's `nn.Mish`, [`mish`](super::functional::mish)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Mish, Module};
/// use autograd_runtime::Tensor;
/// let y = Mish::new().forward(&Tensor::scalar(1.0f64))?.item::<f64>()?;
/// assert!((y - (1f64.exp().ln_1p()).tanh()).abs() < 1e-15);
/// assert_eq!(Mish::new().to_string(), "Mish()");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
pub struct Mish {
    training: bool,
}

impl Forward for Mish {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        mish(input)
    }
}

/// `log(1 + exp(β x)) / β`, and `x` where `β x > threshold` (PyTorch's
/// `nn.Softplus(beta=1.0, threshold=20.0)`, [`softplus`](super::functional::softplus)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Module, Softplus};
/// use autograd_runtime::Tensor;
/// let y = Softplus::new().forward(&Tensor::from_vec(vec![0.0f64, 30.0], &[2])?)?;
/// assert_eq!(y.to_vec::<f64>()?, [std::f64::consts::LN_2, 30.0]);
/// assert_eq!(Softplus::new().to_string(), "Softplus(beta=1.0, threshold=20.0)");
/// assert_eq!(Softplus::with_options(2.0, 10.0).to_string(), "Softplus(beta=2.0, threshold=10.0)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(extra_repr = Softplus::extra_repr)]
pub struct Softplus {
    #[module(skip)]
    beta: f64,
    #[module(skip)]
    threshold: f64,
    training: bool,
}

impl Default for Softplus {
    fn default() -> Softplus {
        Softplus::new()
    }
}

impl Softplus {
    /// PyTorch's defaults: `beta = 1.0`, `threshold = 20.0`.
    pub fn new() -> Softplus {
        Softplus::with_options(1.0, 20.0)
    }

    /// With PyTorch's `beta` and `threshold`.
    pub fn with_options(beta: f64, threshold: f64) -> Softplus {
        Softplus {
            beta,
            threshold,
            training: true,
        }
    }

    fn extra_repr(&self) -> String {
        format!(
            "beta={}, threshold={}",
            py_float(self.beta),
            py_float(self.threshold)
        )
    }
}

impl Forward for Softplus {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        softplus(input, self.beta, self.threshold)
    }
}

/// Every element limited to `[min_val, max_val]` (PyTorch's
/// `nn.Hardtanh(min_val=-1.0, max_val=1.0)`, [`hardtanh`](super::functional::hardtanh)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Hardtanh, Module};
/// use autograd_runtime::Tensor;
/// let y = Hardtanh::new().forward(&Tensor::from_vec(vec![-2.0f64, 0.5, 3.0], &[3])?)?;
/// assert_eq!(y.to_vec::<f64>()?, [-1.0, 0.5, 1.0]);
/// assert_eq!(Hardtanh::new().to_string(), "Hardtanh(min_val=-1.0, max_val=1.0)");
/// assert_eq!(
///     Hardtanh::with_range(2.0, 1.0).unwrap_err().to_string(),
///     "max_val (1.0) must be greater than min_val (2.0)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(extra_repr = Hardtanh::extra_repr)]
pub struct Hardtanh {
    #[module(skip)]
    min_val: f64,
    #[module(skip)]
    max_val: f64,
    training: bool,
}

impl Default for Hardtanh {
    fn default() -> Hardtanh {
        Hardtanh::new()
    }
}

impl Hardtanh {
    /// PyTorch's defaults: `[-1, 1]`.
    pub fn new() -> Hardtanh {
        Hardtanh {
            min_val: -1.0,
            max_val: 1.0,
            training: true,
        }
    }

    /// With PyTorch's `min_val` and `max_val`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] unless `max_val > min_val`, in PyTorch's words.
    pub fn with_range(min_val: f64, max_val: f64) -> Result<Hardtanh> {
        if max_val.partial_cmp(&min_val) != Some(std::cmp::Ordering::Greater) {
            return Err(Error::InvalidArgument(format!(
                "max_val ({}) must be greater than min_val ({})",
                py_float(max_val),
                py_float(min_val)
            )));
        }
        Ok(Hardtanh {
            min_val,
            max_val,
            training: true,
        })
    }

    fn extra_repr(&self) -> String {
        format!(
            "min_val={}, max_val={}",
            py_float(self.min_val),
            py_float(self.max_val)
        )
    }
}

impl Forward for Hardtanh {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        hardtanh(input, self.min_val, self.max_val)
    }
}

/// `min(max(x, 0), 6)` (PyTorch's `nn.ReLU6`, [`relu6`](super::functional::relu6)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Module, Relu6};
/// use autograd_runtime::Tensor;
/// let y = Relu6::new().forward(&Tensor::from_vec(vec![-2.0f64, 0.5, 7.0], &[3])?)?;
/// assert_eq!(y.to_vec::<f64>()?, [0.0, 0.5, 6.0]);
/// assert_eq!(Relu6::new().to_string(), "ReLU6()");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "ReLU6")]
pub struct Relu6 {
    training: bool,
}

impl Forward for Relu6 {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        relu6(input)
    }
}

/// The exponential linear unit (PyTorch's `nn.ELU(alpha=1.0)`,
/// [`elu`](super::functional::elu)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Elu, Forward, Module};
/// use autograd_runtime::Tensor;
/// let y = Elu::new(0.5).forward(&Tensor::from_vec(vec![-1.0f64, 2.0], &[2])?)?;
/// assert_eq!(y.to_vec::<f64>()?, [0.5 * ((-1f64).exp() - 1.0), 2.0]);
/// assert_eq!(Elu::default().to_string(), "ELU(alpha=1.0)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "ELU", extra_repr = Elu::extra_repr)]
pub struct Elu {
    #[module(skip)]
    alpha: f64,
    training: bool,
}

impl Default for Elu {
    fn default() -> Elu {
        Elu::new(1.0)
    }
}

impl Elu {
    /// With PyTorch's `alpha` (`1.0` by default: [`Elu::default`]).
    pub fn new(alpha: f64) -> Elu {
        Elu {
            alpha,
            training: true,
        }
    }

    fn extra_repr(&self) -> String {
        format!("alpha={}", py_float(self.alpha))
    }
}

impl Forward for Elu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        elu(input, self.alpha)
    }
}

/// The scaled exponential linear unit (PyTorch's `nn.SELU`,
/// [`selu`](super::functional::selu)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Module, Selu};
/// use autograd_runtime::Tensor;
/// let y = Selu::new().forward(&Tensor::from_vec(vec![1.0f64], &[1])?)?;
/// assert!((y.item::<f64>()? - 1.050_700_987_355_480_5).abs() < 1e-15);
/// assert_eq!(Selu::new().to_string(), "SELU()");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "SELU")]
pub struct Selu {
    training: bool,
}

impl Forward for Selu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        selu(input)
    }
}

/// The continuously differentiable ELU (PyTorch's `nn.CELU(alpha=1.0)`,
/// [`celu`](super::functional::celu)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Celu, Forward, Module};
/// use autograd_runtime::Tensor;
/// let y = Celu::new(2.0).forward(&Tensor::from_vec(vec![-2.0f64, 3.0], &[2])?)?;
/// assert_eq!(y.to_vec::<f64>()?, [2.0 * ((-1f64).exp() - 1.0), 3.0]);
/// assert_eq!(Celu::new(0.5).to_string(), "CELU(alpha=0.5)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Module)]
#[module(name = "CELU", extra_repr = Celu::extra_repr)]
pub struct Celu {
    #[module(skip)]
    alpha: f64,
    training: bool,
}

impl Default for Celu {
    fn default() -> Celu {
        Celu::new(1.0)
    }
}

impl Celu {
    /// With PyTorch's `alpha` (`1.0` by default: [`Celu::default`]).
    pub fn new(alpha: f64) -> Celu {
        Celu {
            alpha,
            training: true,
        }
    }

    fn extra_repr(&self) -> String {
        format!("alpha={}", py_float(self.alpha))
    }
}

impl Forward for Celu {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        celu(input, self.alpha)
    }
}
