//! `Linear`: `y = x Wᵀ + b`, PyTorch's layout and initialisation.

use crate::nn::{Forward, Module, init, torch_size};
use crate::{DType, Error, Result, Tensor};

/// `y = x Wᵀ + b` with `W` `[out_features, in_features]` and `b` `[out_features]` (PyTorch's
/// `nn.Linear`, same layout, so state dicts carry over).
///
/// Initialised as PyTorch does (`kaiming_uniform_(a=√5)` for the weight, which is uniform in
/// `±1/√in_features`, then the bias uniform in the same bound), from the global generator, in
/// f32 on the CPU: after [`manual_seed`](crate::manual_seed) the parameters are PyTorch's.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, Linear};
/// use autograd_runtime::{DType, Tensor, manual_seed};
/// manual_seed(0);
/// let layer = Linear::new(3, 2)?; // torch.manual_seed(0); nn.Linear(3, 2)
/// assert_eq!(layer.weight().to_vec::<f32>()?[0], -0.004322517663240433f64 as f32);
/// assert_eq!(layer.weight().shape(), &[2, 3]);
/// let y = layer.forward(&Tensor::zeros(&[5, 3], DType::F32)?)?;
/// assert_eq!(y.shape(), &[5, 2]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = Linear::extra_repr)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
    training: bool,
}

impl Linear {
    /// A layer with a bias, initialised as PyTorch's `nn.Linear(in_features, out_features)`
    /// from the global generator: the weight by [`init::kaiming_uniform_`] with `a = √5`
    /// (uniform in `±1/√in_features`), then the bias uniform in `±1/√in_features`.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(in_features: usize, out_features: usize) -> Result<Linear> {
        let mut layer = Linear::no_bias(in_features, out_features)?;
        let bias = Tensor::zeros(&[out_features], DType::F32)?;
        let bound = if in_features > 0 {
            1.0 / (in_features as f64).sqrt()
        } else {
            0.0
        };
        init::uniform_(&bias, -bound, bound)?;
        layer.bias = Some(bias.requires_grad_(true)?);
        Ok(layer)
    }

    /// A layer without a bias (PyTorch's `bias=False`), its weight initialised as in
    /// [`new`](Linear::new).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Linear, Module};
    /// let layer = Linear::no_bias(3, 2)?;
    /// assert!(layer.bias().is_none());
    /// assert_eq!(layer.named_parameters().len(), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn no_bias(in_features: usize, out_features: usize) -> Result<Linear> {
        let weight = Tensor::zeros(&[out_features, in_features], DType::F32)?;
        init::kaiming_uniform_(
            &weight,
            5f64.sqrt(),
            init::FanMode::FanIn,
            init::Nonlinearity::LeakyRelu,
        )?;
        Ok(Linear {
            weight: weight.requires_grad_(true)?,
            bias: None,
            training: true,
        })
    }

    /// A layer over the given parameters, used as they are (they should be leaves that
    /// require grad to be trained): `weight` `[out_features, in_features]`, `bias`
    /// `[out_features]`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the weight is not 2-D, or
    /// the bias is not `[out_features]` or differs from the weight in dtype or device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Forward, Linear};
    /// use autograd_runtime::Tensor;
    /// let w = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
    /// let b = Tensor::from_vec(vec![0.5f64], &[1])?;
    /// let layer = Linear::from_parts(w, Some(b))?;
    /// let y = layer.forward(&Tensor::from_vec(vec![3.0f64, 4.0], &[1, 2])?)?;
    /// assert_eq!(y.to_vec::<f64>()?, vec![11.5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_parts(weight: Tensor, bias: Option<Tensor>) -> Result<Linear> {
        if weight.ndim() != 2 {
            return Err(Error::InvalidArgument(format!(
                "Linear: the weight must be 2-D [out_features, in_features], got {}",
                torch_size(weight.shape())
            )));
        }
        if let Some(b) = &bias
            && (b.shape() != [weight.shape()[0]]
                || b.dtype() != weight.dtype()
                || b.device() != weight.device())
        {
            return Err(Error::InvalidArgument(format!(
                "Linear: the bias must be [{}] with the weight's dtype and device, got {} ({:?}, {:?})",
                weight.shape()[0],
                torch_size(b.shape()),
                b.dtype(),
                b.device()
            )));
        }
        Ok(Linear {
            weight,
            bias,
            training: true,
        })
    }

    /// The weight, `[out_features, in_features]`.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias, `[out_features]`, if the layer has one.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl Linear {
    fn extra_repr(&self) -> String {
        let shape = self.weight.shape();
        super::repr::linear(shape[1], shape[0], self.bias.is_some())
    }
}

impl Forward for Linear {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        linear(input, &self.weight, self.bias.as_ref())
    }
}

/// `input Wᵀ + b` (PyTorch's `F.linear`): `weight` is `[out_features, in_features]`, `bias`
/// `[out_features]`; `input`'s last dim is the features, the others batch dims. Under
/// [`autocast`](crate::amp::autocast) all three run in the region's dtype, as PyTorch's.
///
/// # Errors
///
/// As [`Tensor::matmul`] for mismatched features, and [`Tensor::add`] for a bias that does not
/// broadcast.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::linear;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
/// let w = Tensor::from_vec(vec![1.0f64, 1.0, 0.0, 1.0, 2.0, 0.0], &[3, 2])?;
/// let b = Tensor::from_vec(vec![0.5f64, 0.0, -1.0], &[3])?;
/// assert_eq!(linear(&x, &w, Some(&b))?.to_vec::<f64>()?, vec![3.5, 2.0, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    crate::amp::autocast_entry!(linear(input, weight, bias));
    let y = input.matmul(&weight.transpose(0, 1)?)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}
