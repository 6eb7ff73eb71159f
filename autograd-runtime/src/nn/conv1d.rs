//! `Conv1d` and `functional::conv1d`: 1-D convolution as [`conv2d`] over a height-1 plane.
//!
//! An `[N, C, L]` input is viewed as `[N, C, 1, L]` and the `[O, C / groups, k]` weight as
//! `[O, C / groups, 1, k]`; the 2-D convolution then gathers the same taps in the same order
//! and reduces over the same `C / groups · k` products, so the result is the 1-D convolution
//! (PyTorch computes its `conv1d` the same way), differentiable twice like `conv2d`. The shape
//! checks are made here first, so the errors name the 1-D shapes as PyTorch's do.

use crate::nn::conv::conv2d;
use crate::nn::conv_params::{Drawn, check_groups, conv_repr};
use crate::nn::{Forward, Module};
use crate::{Error, Result, Tensor};

/// 1-D convolution (PyTorch's `torch.nn.functional.conv1d`, a cross-correlation as there):
/// `input` `[N, C, L]` (or unbatched `[C, L]`), `weight` `[O, C / groups, k]`, optional `bias`
/// `[O]`; the result is `[N, O, out]` with
/// `out = (L + 2·padding − dilation·(k − 1) − 1) / stride + 1` (rounded down). Arguments in
/// PyTorch's order; PyTorch's defaults are `stride = 1, padding = 0, dilation = 1, groups = 1`.
///
/// Computed by [`conv2d`](super::functional::conv2d) on height-1 views, so differentiable
/// twice with respect to input, weight and bias.
///
/// # Errors
///
/// [`Error::InvalidArgument`] with PyTorch's text for an input that is not 2-D or 3-D, a zero
/// stride, dilation or group count, a weight that is not 3-D or does not fit the input or the
/// groups, a bias of the wrong shape, a kernel of size 0 or larger than the padded input;
/// dtype and device mismatches.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional as F;
/// use autograd_runtime::{DType, Tensor};
/// // A moving sum of width 2 over 1, 2, 3, 4.
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[1, 1, 4])?.requires_grad_(true)?;
/// let w = Tensor::ones(&[1, 1, 2], DType::F64)?;
/// let y = F::conv1d(&x, &w, None, 1, 0, 1, 1)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![3.0, 5.0, 7.0]);
/// y.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, 2.0, 2.0, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn conv1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(conv1d(
        input, weight, bias, stride, padding, dilation, groups
    ));
    let invalid = |message: String| Err(Error::InvalidArgument(message));
    let unbatched = match input.ndim() {
        2 => true,
        3 => false,
        _ => {
            return invalid(format!(
                "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of \
                 size: {:?}",
                input.shape()
            ));
        }
    };
    // The batched shape, as PyTorch's messages show it.
    let shape = if unbatched {
        [&[1], input.shape()].concat()
    } else {
        input.shape().to_vec()
    };
    let ws = weight.shape();
    if ws.len() < 3 {
        return invalid("weight should have at least three dimensions".into());
    }
    if stride == 0 {
        return invalid("non-positive stride is not supported".into());
    }
    if dilation == 0 {
        // The text of PyTorch's own kernel, which sees the 2-D view (oneDNN words it differently).
        return invalid(format!(
            "dilation should be greater than zero, but got [1, {dilation}]"
        ));
    }
    if groups == 0 {
        return invalid("non-positive groups is not supported".into());
    }
    if ws.len() != 3 {
        return invalid(format!(
            "Expected {d}-dimensional input for {d}-dimensional weight {ws:?}, but got \
             3-dimensional input of size {shape:?} instead",
            d = ws.len()
        ));
    }
    if ws[0] < groups {
        return invalid(format!(
            "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but \
             got weight of size {ws:?} instead"
        ));
    }
    if !ws[0].is_multiple_of(groups) {
        return invalid(format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, \
             but got weight of size [{ws:?}] instead"
        ));
    }
    let (channels, length) = (shape[1], shape[2]);
    if channels != ws[1] * groups {
        return invalid(format!(
            "Given groups={groups}, weight of size {ws:?}, expected input{shape:?} to have {} \
             channels, but got {channels} channels instead",
            ws[1] * groups
        ));
    }
    if let Some(b) = bias
        && b.shape() != [ws[0]]
    {
        return invalid(format!(
            "Given weight of size {ws:?}, expected bias to be 1-dimensional with {} elements, \
             but got bias of size {:?} instead",
            ws[0],
            b.shape()
        ));
    }
    let padded = length + 2 * padding;
    // PyTorch's signed extent: `1 - dilation` for a kernel of size 0.
    let extent = (ws[2] as isize - 1) * dilation as isize + 1;
    if extent > padded as isize {
        return invalid(format!(
            "Calculated padded input size per channel: ({padded}). Kernel size: ({extent}). \
             Kernel size can't be greater than actual input size"
        ));
    }
    if ws[2] == 0 {
        // PyTorch's text from its own 2-D view (oneDNN, when present, words it differently).
        return invalid(
            "kernel size should be greater than zero, but got kernel_height: 1 kernel_width: 0"
                .into(),
        );
    }
    let y = conv2d(
        &input.unsqueeze(-2)?,
        &weight.unsqueeze(2)?,
        bias,
        (1, stride),
        (0, padding),
        (1, dilation),
        groups,
    )?;
    y.squeeze_dim(-2)
}

/// A 1-D convolution layer (PyTorch's `nn.Conv1d`): parameters `weight`
/// `[out_channels, in_channels / groups, kernel_size]` and `bias` `[out_channels]`, named and
/// laid out as PyTorch's, so state dicts carry over; the forward is
/// [`conv1d`](super::functional::conv1d).
///
/// [`new`](Conv1d::new) gives stride 1, padding 0, dilation 1, one group and a bias, as
/// PyTorch's defaults; the builder methods change them (`padding_mode='zeros'` only).
/// Parameters are initialised as PyTorch's `reset_parameters` does (`kaiming_uniform_(a=√5)`:
/// uniform in `±1/√fan_in` with `fan_in = in_channels / groups · kernel_size`, then the bias in
/// the same bound), from the global generator, in f32 on the CPU: after
/// [`manual_seed`](crate::manual_seed) they are PyTorch's ([`groups`](Conv1d::groups) and
/// [`without_bias`](Conv1d::without_bias) draw them again from where [`new`](Conv1d::new)
/// started, so the generator ends where PyTorch's does).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Conv1d, Forward, Module};
/// use autograd_runtime::{DType, Tensor};
/// let conv = Conv1d::new(3, 8, 5)?.stride(2).padding(2);
/// assert_eq!(conv.weight().shape(), &[8, 3, 5]);
/// let y = conv.forward(&Tensor::zeros(&[4, 3, 16], DType::F32)?)?;
/// assert_eq!(y.shape(), &[4, 8, 8]);
/// assert_eq!(
///     conv.to_string(),
///     "Conv1d(3, 8, kernel_size=(5,), stride=(2,), padding=(2,))"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = Conv1d::extra_repr)]
pub struct Conv1d {
    weight: Tensor,
    bias: Option<Tensor>,
    #[module(skip)]
    in_channels: usize,
    #[module(skip)]
    out_channels: usize,
    #[module(skip)]
    kernel_size: usize,
    #[module(skip)]
    stride: usize,
    #[module(skip)]
    padding: usize,
    #[module(skip)]
    dilation: usize,
    #[module(skip)]
    groups: usize,
    /// Where the parameters were drawn (see `Conv2d`).
    #[module(skip)]
    drawn: Drawn,
    training: bool,
}

impl Conv1d {
    /// A layer from `in_channels` to `out_channels` channels with a `kernel_size` kernel,
    /// stride 1, no padding, one group and a bias, initialised from the global generator
    /// (PyTorch's `nn.Conv1d(in_channels, out_channels, kernel_size)`).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv1d;
    /// use autograd_runtime::manual_seed;
    /// manual_seed(0);
    /// let conv = Conv1d::new(2, 4, 3)?; // torch.manual_seed(0); nn.Conv1d(2, 4, 3)
    /// assert_eq!(conv.weight().shape(), &[4, 2, 3]);
    /// assert_eq!(conv.bias().unwrap().shape(), &[4]);
    /// // uniform in ±1/√(2·3)
    /// assert!(conv.weight().to_vec::<f32>()?.iter().all(|w| w.abs() <= 1.0 / 6f32.sqrt()));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(in_channels: usize, out_channels: usize, kernel_size: usize) -> Result<Conv1d> {
        let (weight, bias, drawn) = Drawn::new(
            &[out_channels, in_channels, kernel_size],
            Some(out_channels),
        )?;
        Ok(Conv1d {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
            drawn,
            training: true,
        })
    }

    /// The same layer with stride `stride` (PyTorch's `stride=`). A zero stride is refused by
    /// the forward, as in PyTorch.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv1d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv1d::new(1, 1, 2)?.stride(2);
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 6], DType::F32)?)?.shape(), &[1, 1, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn stride(mut self, stride: usize) -> Conv1d {
        self.stride = stride;
        self
    }

    /// The same layer with `padding` zeros on each side (PyTorch's `padding=` with
    /// `padding_mode='zeros'`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv1d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv1d::new(1, 1, 3)?.padding(1);
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 5], DType::F32)?)?.shape(), &[1, 1, 5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn padding(mut self, padding: usize) -> Conv1d {
        self.padding = padding;
        self
    }

    /// The same layer with the kernel's taps `dilation` apart (PyTorch's `dilation=`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv1d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv1d::new(1, 1, 3)?.dilation(2); // covers 5 positions
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 6], DType::F32)?)?.shape(), &[1, 1, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn dilation(mut self, dilation: usize) -> Conv1d {
        self.dilation = dilation;
        self
    }

    /// The same layer split into `groups` independent convolutions (PyTorch's `groups=`): the
    /// weight becomes `[out_channels, in_channels / groups, kernel_size]` and both parameters
    /// are drawn again with the new `fan_in` from the generator state [`new`](Conv1d::new)
    /// started from, exactly as PyTorch's layer built with these options.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] in PyTorch's words unless `groups` is positive and divides
    /// both channel counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv1d;
    /// assert_eq!(Conv1d::new(4, 6, 3)?.groups(2)?.weight().shape(), &[6, 2, 3]);
    /// assert_eq!(
    ///     Conv1d::new(4, 3, 3)?.groups(2).unwrap_err().to_string(),
    ///     "out_channels must be divisible by groups"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn groups(mut self, groups: usize) -> Result<Conv1d> {
        check_groups(self.in_channels, self.out_channels, groups)?;
        self.groups = groups;
        let weight_shape = [
            self.out_channels,
            self.in_channels / groups,
            self.kernel_size,
        ];
        let bias = self.bias.is_some().then_some(self.out_channels);
        (self.weight, self.bias) = self.drawn.redraw(&weight_shape, bias)?;
        Ok(self)
    }

    /// The same layer without a bias (PyTorch's `bias=False`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv1d, Module};
    /// let conv = Conv1d::new(1, 4, 3)?.without_bias();
    /// assert!(conv.bias().is_none());
    /// assert_eq!(conv.to_string(), "Conv1d(1, 4, kernel_size=(3,), stride=(1,), bias=False)");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn without_bias(mut self) -> Conv1d {
        self.drawn.drop_bias(&mut self.bias);
        self
    }

    /// The weight, `[out_channels, in_channels / groups, kernel_size]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv1d;
    /// let conv = Conv1d::new(6, 9, 2)?.groups(3)?;
    /// assert_eq!(conv.weight().shape(), &[9, 2, 2]);
    /// assert!(conv.weight().requires_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias, `[out_channels]`, if the layer has one.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv1d;
    /// assert_eq!(Conv1d::new(1, 4, 3)?.bias().unwrap().shape(), &[4]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    fn extra_repr(&self) -> String {
        conv_repr(
            self.in_channels,
            self.out_channels,
            &[
                ("kernel_size", &[self.kernel_size], None),
                ("stride", &[self.stride], None),
                ("padding", &[self.padding], Some(0)),
                ("dilation", &[self.dilation], Some(1)),
            ],
            self.groups,
            self.bias.is_some(),
        )
    }
}

impl Forward for Conv1d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        conv1d(
            input,
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
        )
    }
}
