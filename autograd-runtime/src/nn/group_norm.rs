//! `GroupNorm` and `RmsNorm` (PyTorch's `nn.GroupNorm`, `nn.RMSNorm`), over
//! [`functional::group_norm`](super::functional::group_norm) and
//! [`functional::rms_norm`](super::functional::rms_norm).

use super::repr::{py_float, py_tuple};
use crate::nn::functional::{group_norm, rms_norm};
use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor};

/// Python's `True`/`False`.
fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Group normalisation (PyTorch's `nn.GroupNorm(num_groups, num_channels, eps=1e-05,
/// affine=True)`): the `num_channels` channels (dim 1) of each sample are split into
/// `num_groups` groups, each normalised by its own mean and biased variance, then a per-channel
/// weight (ones) scales and a bias (zeros) shifts. The same in training and evaluation mode.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, GroupNorm, Module};
/// use autograd_runtime::{DType, Tensor};
/// let gn = GroupNorm::new(2, 4)?;
/// let y = gn.forward(&Tensor::rand(&[3, 4, 5], DType::F32)?)?;
/// // Each sample's group of 2 channels × 5 positions has mean 0.
/// let means = y.reshape(&[3, 2, 10])?.mean_dims(&[2], false)?.to_vec::<f32>()?;
/// assert!(means.iter().all(|m| m.abs() < 1e-5));
/// let keys: Vec<String> = gn.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["weight", "bias"]);
/// assert_eq!(gn.to_string(), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)");
/// assert_eq!(
///     GroupNorm::new(3, 4).unwrap_err().to_string(),
///     "num_channels (4) must be divisible by num_groups (3)"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(name = "GroupNorm", extra_repr = GroupNorm::extra_repr)]
pub struct GroupNorm {
    weight: Option<Tensor>,
    bias: Option<Tensor>,
    #[module(skip)]
    num_groups: usize,
    #[module(skip)]
    num_channels: usize,
    #[module(skip)]
    eps: f64,
    training: bool,
}

impl GroupNorm {
    /// `num_channels` channels in `num_groups` groups, `eps = 1e-5`, with a weight and a bias
    /// (f32, CPU; nothing is drawn from the generator).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with PyTorch's `num_channels (4) must be divisible by
    /// num_groups (3)` (a zero `num_groups` is refused the same way).
    pub fn new(num_groups: usize, num_channels: usize) -> Result<GroupNorm> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::InvalidArgument(format!(
                "num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )));
        }
        Ok(GroupNorm {
            weight: Some(Tensor::ones(&[num_channels], DType::F32)?.requires_grad_(true)?),
            bias: Some(Tensor::zeros(&[num_channels], DType::F32)?.requires_grad_(true)?),
            num_groups,
            num_channels,
            eps: 1e-5,
            training: true,
        })
    }

    /// The same layer with `eps` added to the variance (PyTorch's `eps=`).
    #[must_use]
    pub fn eps(mut self, eps: f64) -> GroupNorm {
        self.eps = eps;
        self
    }

    /// The same layer without its weight and bias (PyTorch's `affine=False`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{GroupNorm, Module};
    /// let gn = GroupNorm::new(1, 3)?.without_affine().eps(1e-6);
    /// assert!(gn.parameters().is_empty());
    /// assert_eq!(gn.to_string(), "GroupNorm(1, 3, eps=1e-06, affine=False, bias=False)");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn without_affine(mut self) -> GroupNorm {
        self.weight = None;
        self.bias = None;
        self
    }

    /// The same layer without its bias (PyTorch's keyword-only `bias=False`).
    #[must_use]
    pub fn without_bias(mut self) -> GroupNorm {
        self.bias = None;
        self
    }

    /// The weight (`[num_channels]`), if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor> {
        self.weight.as_ref()
    }

    /// The bias (`[num_channels]`), if it has one.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    fn extra_repr(&self) -> String {
        format!(
            "{}, {}, eps={}, affine={}, bias={}",
            self.num_groups,
            self.num_channels,
            py_float(self.eps),
            py_bool(self.weight.is_some()),
            py_bool(self.bias.is_some())
        )
    }
}

impl Forward for GroupNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        group_norm(
            input,
            self.num_groups,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

/// Root-mean-square normalisation over the trailing dims `normalized_shape` (PyTorch's
/// `nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)`): the input divided by the
/// root of the mean of its squares (plus `eps`; `None` is the machine epsilon of the dtype
/// computed in), then multiplied elementwise by a weight (ones).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Module, RmsNorm};
/// use autograd_runtime::{DType, Tensor};
/// let mut norm = RmsNorm::new(&[2])?;
/// norm.to_dtype(DType::F64)?;
/// let y = norm.forward(&Tensor::from_vec(vec![3.0f64, -4.0], &[1, 2])?)?.to_vec::<f64>()?;
/// let r = 12.5f64.sqrt(); // √((9 + 16) / 2)
/// assert!((y[0] - 3.0 / r).abs() < 1e-12 && (y[1] + 4.0 / r).abs() < 1e-12);
/// assert_eq!(norm.to_string(), "RMSNorm((2,), eps=None, elementwise_affine=True)");
/// let plain = RmsNorm::new(&[2, 3])?.eps(Some(1e-6)).without_elementwise_affine();
/// assert!(plain.parameters().is_empty());
/// assert_eq!(plain.to_string(), "RMSNorm((2, 3), eps=1e-06, elementwise_affine=False)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(name = "RMSNorm", extra_repr = RmsNorm::extra_repr)]
pub struct RmsNorm {
    weight: Option<Tensor>,
    #[module(skip)]
    normalized_shape: Vec<usize>,
    #[module(skip)]
    eps: Option<f64>,
    training: bool,
}

impl RmsNorm {
    /// Over the trailing dims `normalized_shape`, `eps = None`, with a weight of ones (f32,
    /// CPU). An empty `normalized_shape` is refused by the forward, as in PyTorch.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(normalized_shape: &[usize]) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: Some(Tensor::ones(normalized_shape, DType::F32)?.requires_grad_(true)?),
            normalized_shape: normalized_shape.to_vec(),
            eps: None,
            training: true,
        })
    }

    /// The same layer with PyTorch's `eps=` (`None`: the dtype's machine epsilon).
    #[must_use]
    pub fn eps(mut self, eps: Option<f64>) -> RmsNorm {
        self.eps = eps;
        self
    }

    /// The same layer without its weight (PyTorch's `elementwise_affine=False`).
    #[must_use]
    pub fn without_elementwise_affine(mut self) -> RmsNorm {
        self.weight = None;
        self
    }

    /// The weight (`normalized_shape`), if the layer is elementwise affine.
    pub fn weight(&self) -> Option<&Tensor> {
        self.weight.as_ref()
    }

    fn extra_repr(&self) -> String {
        format!(
            "{}, eps={}, elementwise_affine={}",
            py_tuple(&self.normalized_shape),
            self.eps.map_or_else(|| "None".to_owned(), py_float),
            py_bool(self.weight.is_some())
        )
    }
}

impl Forward for RmsNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        rms_norm(
            input,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.eps,
        )
    }
}
