//! Adaptive average pooling (PyTorch's `F.adaptive_avg_pool2d`, `nn.AdaptiveAvgPool2d`): each
//! output cell averages the input window PyTorch's `start_index`/`end_index` give it, so that
//! the output has the asked size whatever the input's.

use super::upsample::Spatial;
use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor};

/// PyTorch's `start_index(a, b, c)`: the first input position of output cell `a` of `b`, for
/// an input of `c`.
fn start_index(a: usize, b: usize, c: usize) -> usize {
    (a / b) * c + ((a % b) * c) / b
}

/// PyTorch's `end_index(a, b, c)`: one past the last input position of output cell `a`.
fn end_index(a: usize, b: usize, c: usize) -> usize {
    1 + ((a + 1) * c - 1) / b
}

/// Averages dim `axis` of `x` (of size `input`) into `output` windows. A size that divides
/// evenly is a reshape and a sum; otherwise a product with the `[input, output]` averaging
/// matrix, both differentiable (twice) ops.
fn average_dim(x: &Tensor, axis: usize, output: usize) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let input = shape[axis];
    if output > 0 && input.is_multiple_of(output) {
        let k = input / output;
        let mut split = shape[..axis].to_vec();
        split.extend([output, k]);
        split.extend_from_slice(&shape[axis + 1..]);
        return x
            .reshape(&split)?
            .sum_dims(&[axis + 1], false)?
            .div_scalar(k as f64);
    }
    let mut weights = vec![0.0f64; input * output];
    for o in 0..output {
        let (s, e) = (start_index(o, output, input), end_index(o, output, input));
        for i in s..e {
            weights[i * output + o] = 1.0 / (e - s) as f64;
        }
    }
    let dtype = if x.dtype().is_floating_point() {
        x.dtype()
    } else {
        DType::F32
    };
    let weights = Tensor::from_vec(weights, &[input, output])?
        .to_dtype(dtype)?
        .to(x.device())?;
    let last = shape.len() - 1;
    x.transpose(axis, last)?
        .matmul(&weights)?
        .transpose(axis, last)
}

/// Adaptive average pooling over the trailing `output.len()` dims of `input` (sizes checked by
/// the caller): one dim at a time, the last first.
pub(crate) fn adaptive_avg_pool(input: &Tensor, output: &[usize]) -> Result<Tensor> {
    let first = input.ndim() - output.len();
    let mut y = input.clone();
    for (k, &size) in output.iter().enumerate().rev() {
        y = average_dim(&y, first + k, size)?;
    }
    Ok(y)
}

/// 2-D adaptive average pooling as a function (PyTorch's
/// `F.adaptive_avg_pool2d(input, output_size)`): the last two dims of a `[C, H, W]` or
/// `[N, C, H, W]` input are averaged over windows chosen so that the output is `output_size`
/// (cell `i` of `out` over an input of `n` covers `floor(i·n/out) .. ceil((i+1)·n/out)`, PyTorch's
/// windows, which overlap when `out` does not divide `n`). `output_size` is one size for both
/// dims (`7`) or one per dim (`(5, 7)`), where `None` keeps the input's size.
///
/// # Errors
///
/// PyTorch's messages, as [`Error::InvalidArgument`]: `adaptive_avg_pool2d(): Expected 3D or 4D
/// tensor, but got [2, 3]`; `adaptive_avg_pool2d(): Expected input to have non-zero size for
/// non-batch dimensions, but input has sizes [2, 3, 0, 5] with dimension 2 being empty`;
/// `adaptive_avg_pool2d: output_size must be 2`; `Input dimension should be at least 3` (a
/// per-dim size on an input of as many dims or fewer).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::adaptive_avg_pool2d;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec((0..15).map(f64::from).collect(), &[1, 1, 3, 5])?;
/// // Rows 0..2 and 1..3; columns 0..3 and 2..5.
/// let y = adaptive_avg_pool2d(&x, 2)?;
/// assert_eq!(y.to_vec::<f64>()?, [3.5, 5.5, 8.5, 10.5]);
/// // A global average, and a size kept.
/// assert_eq!(adaptive_avg_pool2d(&x, 1)?.to_vec::<f64>()?, [7.0]);
/// assert_eq!(adaptive_avg_pool2d(&x, (None, Some(1)))?.shape(), &[1, 1, 3, 1]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn adaptive_avg_pool2d(
    input: &Tensor,
    output_size: impl Into<Spatial<Option<usize>>>,
) -> Result<Tensor> {
    let output_size = output_size.into();
    let shape = input.shape();
    let ndim = shape.len();
    if let Spatial::Each(sizes) = &output_size
        && ndim <= sizes.len()
    {
        return Err(Error::InvalidArgument(format!(
            "Input dimension should be at least {}",
            sizes.len() + 1
        )));
    }
    let sizes = output_size.expand(2);
    if sizes.len() != 2 {
        return Err(Error::InvalidArgument(
            "adaptive_avg_pool2d: output_size must be 2".into(),
        ));
    }
    if ndim != 3 && ndim != 4 {
        return Err(Error::InvalidArgument(format!(
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {shape:?}"
        )));
    }
    for d in ndim - 2..ndim {
        if shape[d] == 0 {
            return Err(Error::InvalidArgument(format!(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch \
                 dimensions, but input has sizes {shape:?} with dimension {d} being empty"
            )));
        }
    }
    let out: Vec<usize> = sizes
        .iter()
        .zip(&shape[ndim - 2..])
        .map(|(o, &i)| o.unwrap_or(i))
        .collect();
    adaptive_avg_pool(input, &out)
}

/// 2-D adaptive average pooling as a layer (PyTorch's `nn.AdaptiveAvgPool2d(output_size)`),
/// without parameters: the forward is
/// [`adaptive_avg_pool2d`](super::functional::adaptive_avg_pool2d). `AdaptiveAvgPool2d::new(1)`
/// is the global average pooling that ends a ResNet.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{AdaptiveAvgPool2d, Forward, Module};
/// use autograd_runtime::{DType, Tensor};
/// let pool = AdaptiveAvgPool2d::new((5, 7));
/// assert_eq!(pool.forward(&Tensor::zeros(&[2, 3, 10, 9], DType::F32)?)?.shape(), &[2, 3, 5, 7]);
/// assert_eq!(pool.to_string(), "AdaptiveAvgPool2d(output_size=(5, 7))");
/// let keep_rows = AdaptiveAvgPool2d::new((None, Some(1)));
/// assert_eq!(keep_rows.to_string(), "AdaptiveAvgPool2d(output_size=(None, 1))");
/// assert_eq!(AdaptiveAvgPool2d::new(1).to_string(), "AdaptiveAvgPool2d(output_size=1)");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
#[module(extra_repr = AdaptiveAvgPool2d::extra_repr)]
pub struct AdaptiveAvgPool2d {
    #[module(skip)]
    output_size: Spatial<Option<usize>>,
    training: bool,
}

impl AdaptiveAvgPool2d {
    /// Pooling to `output_size`: one size for both dims, or one per dim (`None` keeps the
    /// input's).
    pub fn new(output_size: impl Into<Spatial<Option<usize>>>) -> AdaptiveAvgPool2d {
        AdaptiveAvgPool2d {
            output_size: output_size.into(),
            training: true,
        }
    }

    /// The output size, as given.
    pub fn output_size(&self) -> &Spatial<Option<usize>> {
        &self.output_size
    }

    fn extra_repr(&self) -> String {
        format!(
            "output_size={}",
            self.output_size.py_repr(|v| match v {
                Some(v) => v.to_string(),
                None => "None".into(),
            })
        )
    }
}

impl Forward for AdaptiveAvgPool2d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        adaptive_avg_pool2d(input, self.output_size.clone())
    }
}
