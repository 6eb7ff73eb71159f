//! `MaxPool2d`, `AvgPool2d` and their functions: the convolution's im2col patches, reduced.
//!
//! Each channel of each image is a plane: an `[N, C, H, W]` input becomes `[H·W (+1), N·C]`
//! (the extra row holds the padding value, `-∞` for the max and `0` for the average), the
//! [`Window`] gathers the patches `[kh·kw, L·N·C]`, and [`max_dim`](Tensor::max_dim) or a sum
//! reduces them over the kernel. `max_dim` keeps the first maximum in the window's row-major
//! order, which is where PyTorch sends the gradient of a tie.

use crate::nn::conv::{Size2, Window, transpose_2d};
use crate::nn::{Forward, Module};
use crate::{Error, Result, Tensor};

/// The output size of a pooling along one dim (PyTorch's `pooling_output_shape`), after its
/// checks: a zero stride, and padding over half the dilated kernel.
fn pooling_output_size(
    input: usize,
    kernel: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
    ceil_mode: bool,
) -> Result<i64> {
    if stride == 0 {
        return Err(Error::InvalidArgument("stride should not be zero".into()));
    }
    let (input, kernel, pad, stride, dilation) = (
        input as i64,
        kernel as i64,
        pad as i64,
        stride as i64,
        dilation as i64,
    );
    if pad > ((kernel - 1) * dilation + 1) / 2 {
        return Err(Error::InvalidArgument(format!(
            "pad should be at most half of effective kernel size, but got pad={pad}, \
             kernel_size={kernel} and dilation={dilation}"
        )));
    }
    let numerator =
        input + 2 * pad - dilation * (kernel - 1) - 1 + if ceil_mode { stride - 1 } else { 0 };
    let mut output = numerator.div_euclid(stride) + 1;
    // The last window must start inside the input or its left padding.
    if ceil_mode && (output - 1) * stride >= input + pad {
        output -= 1;
    }
    Ok(output)
}

/// Whether the pool is a max or an average; the average's options.
#[derive(Clone, Copy)]
enum Reduce {
    Max,
    Avg {
        count_include_pad: bool,
        divisor_override: Option<usize>,
    },
}

/// PyTorch's checks for a 2-D pooling (`pool2d_shape_check` and the output size), then the
/// pooling itself.
fn pool2d(
    input: &Tensor,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    ceil_mode: bool,
    reduce: Reduce,
) -> Result<Tensor> {
    let invalid = |message: String| Err(Error::InvalidArgument(message));
    let shape = input.shape();
    let ndim = shape.len();
    match reduce {
        Reduce::Max if ndim != 3 && ndim != 4 => {
            return invalid("non-empty 3D or 4D (batch mode) tensor expected for input".into());
        }
        Reduce::Avg { .. } if ndim < 3 => {
            // PyTorch reads the channel count as `input.size(-3)` first.
            return Err(Error::DimOutOfRange {
                dim: -3,
                min: -(ndim.max(1) as isize),
                max: ndim.max(1) as isize - 1,
            });
        }
        Reduce::Avg {
            divisor_override: Some(0),
            ..
        } => return invalid("divisor must be not zero".into()),
        _ => {}
    }
    let (h, w) = (shape[ndim - 2], shape[ndim - 1]);
    let out_h = pooling_output_size(h, kernel[0], padding[0], stride[0], dilation[0], ceil_mode)?;
    let out_w = pooling_output_size(w, kernel[1], padding[1], stride[1], dilation[1], ceil_mode)?;
    if kernel.contains(&0) {
        return invalid(format!(
            "kernel size should be greater than zero, but got kH: {} kW: {}",
            kernel[0], kernel[1]
        ));
    }
    if dilation.contains(&0) {
        return invalid(format!(
            "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
            dilation[0], dilation[1]
        ));
    }
    // Channels, height and width must be non-empty; the batch may be empty.
    if !(ndim == 3 || ndim == 4) || shape[ndim - 3..].contains(&0) {
        return invalid(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, \
             but got:{shape:?}"
        ));
    }
    if kernel[1] / 2 < padding[1] || kernel[0] / 2 < padding[0] {
        return invalid(format!(
            "pad should be smaller than or equal to half of kernel size, but got padW = {}, \
             padH = {}, kW = {}, kH = {}",
            padding[1], padding[0], kernel[1], kernel[0]
        ));
    }
    let planes_count = shape[ndim - 3];
    if out_h < 1 || out_w < 1 {
        return invalid(format!(
            "Given input size: ({planes_count}x{h}x{w}). Calculated output size: \
             ({planes_count}x{out_h}x{out_w}). Output size is too small"
        ));
    }
    let output = [out_h as usize, out_w as usize];

    // [N, C, H, W] (or [C, H, W]) -> [H·W, N·C]: one row per input position, the planes inner.
    let lead = &shape[..ndim - 2];
    let planes: usize = lead.iter().product();
    let rows = transpose_2d(input, planes, h * w)?;
    let window = Window {
        kernel,
        stride,
        padding,
        dilation,
        input: [h, w],
        output,
    };
    let positions = output[0] * output[1];
    let pooled = match reduce {
        Reduce::Max => {
            let columns = window.columns(&rows, 1, f64::NEG_INFINITY)?; // [kh·kw, L·planes]
            columns
                .max_dim_positions(0, false)?
                .0
                .reshape(&[positions, planes])?
        }
        Reduce::Avg {
            count_include_pad,
            divisor_override,
        } => {
            let columns = window.columns(&rows, 1, 0.0)?;
            let divisors = avg_divisors(&window, count_include_pad, divisor_override);
            let divisors = Tensor::from_vec(divisors, &[positions, 1])?
                .to_dtype(input.dtype())?
                .to(input.device())?;
            columns
                .sum_dims(&[0], false)?
                .reshape(&[positions, planes])?
                .div(&divisors)?
        }
    };
    // [L, planes] -> [planes, L] -> [lead.., out_h, out_w], contiguous.
    let mut shape = lead.to_vec();
    shape.extend(output);
    transpose_2d(&pooled, positions, planes)?.reshape(&shape)
}

/// What each output position of an average pool divides its sum by (PyTorch's CPU kernel): the
/// window clipped to the padded input (`count_include_pad`) or to the input, or the override. A
/// window with nothing inside gets 1 (its sum is 0, and PyTorch writes 0).
fn avg_divisors(
    window: &Window,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Vec<f64> {
    let span = |d: usize, o: usize| -> (i64, i64, i64) {
        let start = (o * window.stride[d]) as i64 - window.padding[d] as i64;
        let end = (start + window.kernel[d] as i64)
            .min(window.input[d] as i64 + window.padding[d] as i64);
        let padded = end - start;
        (start.max(0), end.min(window.input[d] as i64), padded)
    };
    let mut divisors = Vec::with_capacity(window.output[0] * window.output[1]);
    for oy in 0..window.output[0] {
        let (y0, y1, ph) = span(0, oy);
        for ox in 0..window.output[1] {
            let (x0, x1, pw) = span(1, ox);
            let divisor = match divisor_override {
                Some(d) => d as i64,
                None if y0 >= y1 || x0 >= x1 => 1,
                None if count_include_pad => ph * pw,
                None => (y1 - y0) * (x1 - x0),
            };
            divisors.push(divisor as f64);
        }
    }
    divisors
}

/// 2-D max pooling (PyTorch's `torch.nn.functional.max_pool2d`): over `input` `[N, C, H, W]`
/// (or `[C, H, W]`), the maximum of each `kernel_size` window, windows `stride` apart (PyTorch's
/// default `stride=None` is `kernel_size`: pass the kernel size), over an input padded with
/// `-∞`, taps `dilation` apart; `ceil_mode` rounds the output size up as PyTorch does. The
/// gradient goes to the first maximum of each window (row-major), as in PyTorch.
///
/// # Errors
///
/// [`Error::InvalidArgument`] with PyTorch's text for an input that is not 3-D or 4-D or is
/// empty, a zero kernel size, stride or dilation, padding over half the kernel, or an output
/// smaller than 1.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional as F;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec((1..=16).map(f64::from).collect(), &[1, 1, 4, 4])?.requires_grad_(true)?;
/// let y = F::max_pool2d(&x, 2, 2, 0, 1, false)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![6.0, 8.0, 14.0, 16.0]);
/// y.sum()?.backward()?;
/// let g = x.grad().unwrap().to_vec::<f64>()?;
/// assert_eq!(g.iter().sum::<f64>(), 4.0);
/// assert_eq!(g[5], 1.0); // the maximum of the first window
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn max_pool2d(
    input: &Tensor,
    kernel_size: impl Into<Size2>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    dilation: impl Into<Size2>,
    ceil_mode: bool,
) -> Result<Tensor> {
    pool2d(
        input,
        kernel_size.into().0,
        stride.into().0,
        padding.into().0,
        dilation.into().0,
        ceil_mode,
        Reduce::Max,
    )
}

/// 2-D average pooling (PyTorch's `torch.nn.functional.avg_pool2d`): over `input`
/// `[N, C, H, W]` (or `[C, H, W]`), the mean of each `kernel_size` window, windows `stride`
/// apart (pass the kernel size for PyTorch's default), over an input padded with zeros.
/// `count_include_pad` (PyTorch's default `true`) counts the padding in the divisor;
/// `divisor_override` replaces the divisor; `ceil_mode` rounds the output size up, and a window
/// that then runs past the padded input divides by the part inside it, as PyTorch does.
///
/// # Errors
///
/// As [`max_pool2d`], and `divisor_override` `Some(0)`; an input with fewer than 3 dims is
/// [`Error::DimOutOfRange`] as in PyTorch.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional as F;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec((1..=16).map(f64::from).collect(), &[1, 1, 4, 4])?;
/// let y = F::avg_pool2d(&x, 2, 2, 0, false, true, None)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![3.5, 5.5, 11.5, 13.5]);
/// // Padding 1 with and without counting it: the corner window holds one value.
/// let with = F::avg_pool2d(&x, 2, 2, 1, false, true, None)?;
/// let without = F::avg_pool2d(&x, 2, 2, 1, false, false, None)?;
/// assert_eq!((with.to_vec::<f64>()?[0], without.to_vec::<f64>()?[0]), (0.25, 1.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn avg_pool2d(
    input: &Tensor,
    kernel_size: impl Into<Size2>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<usize>,
) -> Result<Tensor> {
    pool2d(
        input,
        kernel_size.into().0,
        stride.into().0,
        padding.into().0,
        [1, 1],
        ceil_mode,
        Reduce::Avg {
            count_include_pad,
            divisor_override,
        },
    )
}

// ----- the modules ----------------------------------------------------------------------------------

/// 2-D max pooling as a layer (PyTorch's `nn.MaxPool2d`), without parameters: the forward is
/// [`max_pool2d`](super::functional::max_pool2d). [`new`](MaxPool2d::new) gives PyTorch's
/// defaults (stride = kernel size, no padding, dilation 1, floor rounding).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, MaxPool2d, Module};
/// use autograd_runtime::{DType, Tensor};
/// let pool = MaxPool2d::new(2);
/// assert_eq!(pool.forward(&Tensor::zeros(&[8, 16, 8, 8], DType::F32)?)?.shape(), &[8, 16, 4, 4]);
/// let overlapping = MaxPool2d::new(3).stride(2).padding(1);
/// assert_eq!(overlapping.forward(&Tensor::zeros(&[1, 1, 8, 8], DType::F32)?)?.shape(), &[1, 1, 4, 4]);
/// assert!(pool.named_parameters().is_empty());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
#[module(extra_repr = MaxPool2d::extra_repr)]
pub struct MaxPool2d {
    #[module(skip)]
    kernel_size: Size2,
    #[module(skip)]
    stride: Size2,
    #[module(skip)]
    padding: Size2,
    #[module(skip)]
    dilation: Size2,
    #[module(skip)]
    ceil_mode: bool,
    training: bool,
}

impl MaxPool2d {
    /// A max pool over `kernel_size` windows, stride `kernel_size`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Forward, MaxPool2d, Module};
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec((1..=12).map(f64::from).collect(), &[1, 1, 3, 4])?;
    /// let y = MaxPool2d::new((1, 2)).forward(&x)?;
    /// assert_eq!(y.to_vec::<f64>()?, vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    /// // Windows one apart, padded with -inf, taps two apart, output size rounded up.
    /// let pool = MaxPool2d::new(2).stride(1).padding(1).dilation(2).ceil_mode(true);
    /// assert_eq!(pool.forward(&x)?.shape(), &[1, 1, 3, 4]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(kernel_size: impl Into<Size2>) -> MaxPool2d {
        let kernel_size = kernel_size.into();
        MaxPool2d {
            kernel_size,
            stride: kernel_size,
            padding: Size2([0, 0]),
            dilation: Size2([1, 1]),
            ceil_mode: false,
            training: true,
        }
    }

    /// The same pool with windows `stride` apart.
    #[must_use]
    pub fn stride(mut self, stride: impl Into<Size2>) -> MaxPool2d {
        self.stride = stride.into();
        self
    }

    /// The same pool over the input padded with `padding` values of `-∞` on each side.
    #[must_use]
    pub fn padding(mut self, padding: impl Into<Size2>) -> MaxPool2d {
        self.padding = padding.into();
        self
    }

    /// The same pool with the window's taps `dilation` apart.
    #[must_use]
    pub fn dilation(mut self, dilation: impl Into<Size2>) -> MaxPool2d {
        self.dilation = dilation.into();
        self
    }

    /// The same pool rounding the output size up (`true`) or down.
    #[must_use]
    pub fn ceil_mode(mut self, ceil_mode: bool) -> MaxPool2d {
        self.ceil_mode = ceil_mode;
        self
    }
}

impl MaxPool2d {
    fn extra_repr(&self) -> String {
        super::repr::max_pool2d(
            [self.kernel_size, self.stride, self.padding, self.dilation],
            self.ceil_mode,
        )
    }
}

impl Forward for MaxPool2d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
        )
    }
}

/// 2-D average pooling as a layer (PyTorch's `nn.AvgPool2d`), without parameters: the forward
/// is [`avg_pool2d`](super::functional::avg_pool2d). [`new`](AvgPool2d::new) gives PyTorch's
/// defaults (stride = kernel size, no padding, floor rounding, padding counted, no override).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{AvgPool2d, Forward};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec((1..=9).map(f64::from).collect(), &[1, 3, 3])?; // unbatched
/// let pool = AvgPool2d::new(2).stride(1);
/// assert_eq!(pool.forward(&x)?.to_vec::<f64>()?, vec![3.0, 4.0, 6.0, 7.0]);
/// let ceil = AvgPool2d::new(2).ceil_mode(true);
/// assert_eq!(ceil.forward(&x)?.to_vec::<f64>()?, vec![3.0, 4.5, 7.5, 9.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
#[module(extra_repr = AvgPool2d::extra_repr)]
pub struct AvgPool2d {
    #[module(skip)]
    kernel_size: Size2,
    #[module(skip)]
    stride: Size2,
    #[module(skip)]
    padding: Size2,
    #[module(skip)]
    ceil_mode: bool,
    #[module(skip)]
    count_include_pad: bool,
    #[module(skip)]
    divisor_override: Option<usize>,
    training: bool,
}

impl AvgPool2d {
    /// An average pool over `kernel_size` windows, stride `kernel_size`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{AvgPool2d, Forward};
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec((1..=8).map(f64::from).collect(), &[1, 1, 2, 4])?;
    /// assert_eq!(AvgPool2d::new(2).forward(&x)?.to_vec::<f64>()?, vec![3.5, 5.5]);
    /// // Padding 1, not counted: the corner windows average the one value they hold.
    /// let pool = AvgPool2d::new(2).padding(1).count_include_pad(false);
    /// assert_eq!(pool.forward(&x)?.to_vec::<f64>()?[0], 1.0);
    /// // A fixed divisor instead of the window's size.
    /// let pool = AvgPool2d::new(2).divisor_override(Some(1));
    /// assert_eq!(pool.forward(&x)?.to_vec::<f64>()?, vec![14.0, 22.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(kernel_size: impl Into<Size2>) -> AvgPool2d {
        let kernel_size = kernel_size.into();
        AvgPool2d {
            kernel_size,
            stride: kernel_size,
            padding: Size2([0, 0]),
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
            training: true,
        }
    }

    /// The same pool with windows `stride` apart.
    #[must_use]
    pub fn stride(mut self, stride: impl Into<Size2>) -> AvgPool2d {
        self.stride = stride.into();
        self
    }

    /// The same pool over the input padded with `padding` zeros on each side.
    #[must_use]
    pub fn padding(mut self, padding: impl Into<Size2>) -> AvgPool2d {
        self.padding = padding.into();
        self
    }

    /// The same pool rounding the output size up (`true`) or down.
    #[must_use]
    pub fn ceil_mode(mut self, ceil_mode: bool) -> AvgPool2d {
        self.ceil_mode = ceil_mode;
        self
    }

    /// The same pool counting the padding in each window's divisor (`true`, the default) or
    /// not.
    #[must_use]
    pub fn count_include_pad(mut self, count_include_pad: bool) -> AvgPool2d {
        self.count_include_pad = count_include_pad;
        self
    }

    /// The same pool dividing every window's sum by `divisor` (`None`: the window's size).
    #[must_use]
    pub fn divisor_override(mut self, divisor: Option<usize>) -> AvgPool2d {
        self.divisor_override = divisor;
        self
    }
}

impl AvgPool2d {
    fn extra_repr(&self) -> String {
        super::repr::avg_pool2d([self.kernel_size, self.stride, self.padding])
    }
}

impl Forward for AvgPool2d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )
    }
}
