//! `LayerNorm`: normalisation over the trailing dims, written in differentiable ops (so double
//! backward works).

use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor};

/// Normalises over the last dims, `normalized_shape`, then scales and shifts elementwise
/// (PyTorch's `nn.LayerNorm`): `y = (x - E[x]) / √(Var[x] + eps) · weight + bias`, the variance
/// biased as PyTorch's. The weight starts at ones and the bias at zeros (f32, CPU).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, LayerNorm, Module};
/// use autograd_runtime::Tensor;
/// let ln = LayerNorm::new(&[2])?;
/// let y = ln.forward(&Tensor::from_vec(vec![1.0f32, 3.0], &[1, 2])?)?.to_vec::<f32>()?;
/// assert!((y[0] + 1.0).abs() < 1e-5 && (y[1] - 1.0).abs() < 1e-5);
/// let names: Vec<String> = ln.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["weight", "bias"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = LayerNorm::extra_repr)]
pub struct LayerNorm {
    #[module(skip)]
    normalized_shape: Vec<usize>,
    #[module(skip)]
    eps: f64,
    weight: Option<Tensor>,
    bias: Option<Tensor>,
    training: bool,
}

impl LayerNorm {
    /// Over the trailing dims `normalized_shape`, `eps = 1e-5`, with a weight and a bias.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        LayerNorm::with_options(normalized_shape, 1e-5, true)
    }

    /// With PyTorch's `eps` and `elementwise_affine` (no parameters when it is `false`).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Forward, LayerNorm, Module};
    /// let ln = LayerNorm::with_options(&[3, 4], 1e-6, false)?;
    /// assert!(ln.parameters().is_empty());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
    ) -> Result<LayerNorm> {
        LayerNorm::with_bias(normalized_shape, eps, elementwise_affine, true)
    }

    /// With all of PyTorch's options: `bias = false` (PyTorch's `bias=False`) keeps the weight
    /// (when `elementwise_affine`) but no bias.
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{LayerNorm, Module};
    /// let ln = LayerNorm::with_bias(&[4], 1e-5, true, false)?;
    /// let keys: Vec<String> = ln.state_dict().keys().map(String::from).collect();
    /// assert_eq!(keys, ["weight"]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_bias(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
    ) -> Result<LayerNorm> {
        let (weight, bias) = if elementwise_affine {
            let b = if bias {
                Some(Tensor::zeros(normalized_shape, DType::F32)?.requires_grad_(true)?)
            } else {
                None
            };
            (
                Some(Tensor::ones(normalized_shape, DType::F32)?.requires_grad_(true)?),
                b,
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            bias,
            training: true,
        })
    }

    /// The weight (`normalized_shape`), if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor> {
        self.weight.as_ref()
    }

    /// The bias (`normalized_shape`), if the layer is affine.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl LayerNorm {
    fn extra_repr(&self) -> String {
        super::repr::layer_norm(
            &self.normalized_shape,
            self.eps,
            self.weight.is_some(),
            self.bias.is_some(),
        )
    }
}

impl Forward for LayerNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        layer_norm(
            input,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

/// Layer normalisation as a function (PyTorch's `F.layer_norm`): normalises `input` over its
/// trailing dims `normalized_shape` (mean and biased variance), then multiplies by `weight` and
/// adds `bias` (each `normalized_shape`) when given.
///
/// # Errors
///
/// [`Error::InvalidArgument`] if `input` does not end with `normalized_shape` (PyTorch's
/// message), or a weight or bias is not `normalized_shape`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::layer_norm;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64, 2.0, 4.0], &[3])?;
/// let y = layer_norm(&x, &[3], None, None, 0.0)?.to_vec::<f64>()?;
/// let s = (1.5f64).sqrt();
/// assert!((y[0] + s).abs() < 1e-12 && y[1].abs() < 1e-12 && (y[2] - s).abs() < 1e-12);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(layer_norm(input, normalized_shape, weight, bias, eps));
    let k = normalized_shape.len();
    let shape = input.shape();
    if k == 0 || shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
        let mut expected: Vec<String> = vec!["*".to_string()];
        expected.extend(normalized_shape.iter().map(usize::to_string));
        return Err(Error::InvalidArgument(format!(
            "Given normalized_shape={normalized_shape:?}, expected input with shape [{}], but \
             got input of size{shape:?}",
            expected.join(", "),
        )));
    }
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p
            && p.shape() != normalized_shape
        {
            return Err(Error::InvalidArgument(format!(
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape \
                 {:?} and normalized_shape = {normalized_shape:?}",
                p.shape()
            )));
        }
    }
    let dims: Vec<usize> = (shape.len() - k..shape.len()).collect();
    let n = normalized_shape.iter().product::<usize>() as f64;
    let mean = input.sum_dims(&dims, true)?.div_scalar(n)?;
    let centred = input.sub(&mean)?;
    let var = centred
        .mul(&centred)?
        .sum_dims(&dims, true)?
        .div_scalar(n)?;
    let rstd = var.add_scalar(eps)?.sqrt()?.reciprocal()?;
    let mut y = centred.mul(&rstd)?;
    if let Some(w) = weight {
        y = y.mul(w)?;
    }
    if let Some(b) = bias {
        y = y.add(b)?;
    }
    Ok(y)
}
