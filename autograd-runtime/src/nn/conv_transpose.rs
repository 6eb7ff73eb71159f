//! `ConvTranspose2d` and `functional::conv_transpose2d`: the adjoint of `conv2d` with respect to
//! its input, computed as one GEMM and col2im.
//!
//! The weight `[C_in, C_out / groups, kh, kw]` times the input's rows gives, for every input
//! position, the `C_out·kh·kw` values it spreads over its window; col2im
//! ([`Window::image`], one `index_add`) sums them into the output plane, the same scatter that
//! is `conv2d`'s input gradient. Every step is an op of this crate that is differentiable twice
//! (the `index_add`'s gradient is im2col's `index_select`), so the backward is `conv2d`'s
//! forward and there is a double backward, on every device that has those ops.

use crate::nn::conv::{Size2, Window, transpose_2d};
use crate::nn::conv_params::{Drawn, check_groups, conv_repr};
use crate::nn::{Forward, Module, torch_size};
use crate::{Error, Result, Tensor};

/// 2-D transposed convolution (PyTorch's `torch.nn.functional.conv_transpose2d`, the gradient
/// of [`conv2d`](super::functional::conv2d) with respect to its input): `input`
/// `[N, C_in, H, W]` (or unbatched `[C_in, H, W]`), `weight` `[C_in, C_out / groups, kh, kw]`,
/// optional `bias` `[C_out]`; the result is `[N, C_out, out_h, out_w]` with
/// `out = (in − 1)·stride − 2·padding + dilation·(k − 1) + output_padding + 1` per dim.
/// Arguments in PyTorch's order (`output_padding` before `groups`, `dilation` last); PyTorch's
/// defaults are `stride = 1, padding = 0, output_padding = 0, groups = 1, dilation = 1`.
///
/// Differentiable twice with respect to input, weight and bias.
///
/// # Errors
///
/// [`Error::InvalidArgument`] with PyTorch's text for an input that is not 3-D or 4-D, a weight
/// that is not 4-D, a zero stride, dilation or group count, a weight that does not fit the
/// input or the groups, a bias of the wrong shape, an empty plane, a kernel of size 0, an
/// `output_padding` not smaller than the stride or the dilation, an output size below 1;
/// dtype and device mismatches.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional as F;
/// use autograd_runtime::{DType, Tensor};
/// // Stride 2 and a 2×2 kernel of ones: each input value fills its own 2×2 block.
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[1, 1, 2, 2])?.requires_grad_(true)?;
/// let w = Tensor::ones(&[1, 1, 2, 2], DType::F64)?;
/// let y = F::conv_transpose2d(&x, &w, None, 2, 0, 0, 1, 1)?;
/// assert_eq!(y.shape(), &[1, 1, 4, 4]);
/// assert_eq!(
///     y.to_vec::<f64>()?,
///     vec![1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.]
/// );
/// y.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![4.0; 4]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[allow(clippy::too_many_arguments)] // PyTorch's signature
pub fn conv_transpose2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    output_padding: impl Into<Size2>,
    groups: usize,
    dilation: impl Into<Size2>,
) -> Result<Tensor> {
    let (Size2(stride), Size2(padding), Size2(output_padding), Size2(dilation)) = (
        stride.into(),
        padding.into(),
        output_padding.into(),
        dilation.into(),
    );
    crate::amp::autocast_entry!(conv_transpose2d(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation
    ));
    let invalid = |message: String| Err(Error::InvalidArgument(message));
    let unbatched = match input.ndim() {
        3 => true,
        4 => false,
        _ => {
            return invalid(format!(
                "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got \
                 input of size: {:?}",
                input.shape()
            ));
        }
    };
    let x = if unbatched {
        input.unsqueeze(0)?
    } else {
        input.clone()
    };
    let ws = weight.shape();
    if ws.len() < 3 {
        return invalid("weight should have at least three dimensions".into());
    }
    if ws.len() != 4 {
        return invalid(format!(
            "expected stride to be a single integer value or a list of {} values to match the \
             convolution dimensions, but got stride={stride:?}",
            ws.len() - 2
        ));
    }
    if stride.contains(&0) {
        return invalid("non-positive stride is not supported".into());
    }
    if groups == 0 {
        return invalid("non-positive groups is not supported".into());
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
    let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    if c != ws[0] {
        return invalid(format!(
            "Given transposed=1, weight of size {ws:?}, expected input{:?} to have {} \
             channels, but got {c} channels instead",
            x.shape(),
            ws[0]
        ));
    }
    let out_channels = ws[1] * groups;
    if let Some(b) = bias
        && b.shape() != [out_channels]
    {
        return invalid(format!(
            "Given transposed=1, weight of size {ws:?}, expected bias to be 1-dimensional with \
             {out_channels} elements, but got bias of size {:?} instead",
            b.shape()
        ));
    }
    if n > 0 && (h == 0 || w == 0) {
        return invalid(format!(
            "Only zero batch or zero channel inputs are supported, but got input shape: {:?}",
            x.shape()
        ));
    }
    let kernel = [ws[2], ws[3]];
    if kernel.contains(&0) {
        return invalid(format!(
            "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
            kernel[0], kernel[1]
        ));
    }
    if dilation.contains(&0) {
        return invalid(format!(
            "dilation should be greater than zero, but got dilation_height: {}, \
             dilation_width: {}",
            dilation[0], dilation[1]
        ));
    }
    if (0..2).any(|d| output_padding[d] >= stride[d] && output_padding[d] >= dilation[d]) {
        return invalid(format!(
            "output padding must be smaller than either stride or dilation, but got \
             output_padding_height: {} output_padding_width: {} stride_height: {} \
             stride_width: {} dilation_height: {} dilation_width: {}",
            output_padding[0], output_padding[1], stride[0], stride[1], dilation[0], dilation[1]
        ));
    }
    // PyTorch computes the output size in signed arithmetic and refuses one below 1.
    let output = [0, 1].map(|d| {
        ([h, w][d] as isize - 1) * stride[d] as isize - 2 * padding[d] as isize
            + dilation[d] as isize * (kernel[d] as isize - 1)
            + output_padding[d] as isize
            + 1
    });
    if output.iter().any(|&o| o < 1) {
        return invalid(format!(
            "Given input size per channel: ({h} x {w}). Calculated output size per channel: \
             ({} x {}). Output size is too small",
            output[0], output[1]
        ));
    }
    x.check_same_dtype_device("conv_transpose2d", weight)?;
    if let Some(b) = bias {
        x.check_same_dtype_device("conv_transpose2d", b)?;
    }

    let output = output.map(|o| o as usize);
    // The conv2d that maps the output plane back to the input's: its input gradient is this.
    let window = Window {
        kernel,
        stride,
        padding,
        dilation,
        input: output,
        output: [h, w],
    };
    let positions = h * w;
    let patch = ws[1] * kernel[0] * kernel[1]; // per group
    let per_group = c / groups;
    // [N, C_in, H, W] -> [C_in, L·N]: one row per input channel, the batch inner.
    let rows = transpose_2d(&x, n, c * positions)?;
    let columns = if groups == 1 {
        weight
            .reshape(&[c, patch])?
            .transpose(0, 1)?
            .matmul(&rows.reshape(&[c, positions * n])?)?
    } else {
        weight
            .reshape(&[groups, per_group, patch])?
            .transpose(1, 2)?
            .matmul(&rows.reshape(&[groups, per_group, positions * n])?)?
    }; // [C_out·kh·kw, L·N] (per group in the grouped case)
    let image = window.image(&columns, out_channels, n)?; // [C_out·out_h·out_w, N]
    let plane = output[0] * output[1];
    let image = match bias {
        Some(b) => image
            .reshape(&[out_channels, plane * n])?
            .add(&b.reshape(&[out_channels, 1])?)?,
        None => image,
    };
    // [C_out·P, N] -> [N, C_out·P], contiguous as PyTorch's result.
    let y = transpose_2d(&image, out_channels * plane, n)?;
    if unbatched {
        y.reshape(&[out_channels, output[0], output[1]])
    } else {
        y.reshape(&[n, out_channels, output[0], output[1]])
    }
}

/// A 2-D transposed convolution layer (PyTorch's `nn.ConvTranspose2d`), the usual upsampling
/// layer of decoders: parameters `weight` `[in_channels, out_channels / groups, kh, kw]` and
/// `bias` `[out_channels]`, named and laid out as PyTorch's, so state dicts carry over; the
/// forward is [`conv_transpose2d`](super::functional::conv_transpose2d), and
/// [`forward_with_output_size`](ConvTranspose2d::forward_with_output_size) is PyTorch's
/// `forward(input, output_size)`.
///
/// [`new`](ConvTranspose2d::new) gives stride 1, padding 0, output padding 0, one group, a bias
/// and dilation 1, as PyTorch's defaults; the builder methods change them
/// (`padding_mode='zeros'` only). Parameters are initialised as PyTorch's `reset_parameters`
/// does (`kaiming_uniform_(a=√5)` on the weight, uniform in `±1/√fan_in` with PyTorch's
/// `fan_in = out_channels / groups · kh · kw`, read off the transposed weight's dim 1, then the
/// bias in the same bound), from the global generator, in f32 on the CPU: after
/// [`manual_seed`](crate::manual_seed) they are PyTorch's.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{ConvTranspose2d, Forward, Module};
/// use autograd_runtime::{DType, Tensor};
/// // Doubles the resolution: (8 − 1)·2 − 2·1 + 3 + 1 = 16.
/// let up = ConvTranspose2d::new(8, 3, 3)?.stride(2).padding(1).output_padding(1);
/// assert_eq!(up.weight().shape(), &[8, 3, 3, 3]);
/// let y = up.forward(&Tensor::zeros(&[4, 8, 8, 8], DType::F32)?)?;
/// assert_eq!(y.shape(), &[4, 3, 16, 16]);
/// assert_eq!(
///     up.to_string(),
///     "ConvTranspose2d(8, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), \
///      output_padding=(1, 1))"
/// );
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = ConvTranspose2d::extra_repr)]
pub struct ConvTranspose2d {
    weight: Tensor,
    bias: Option<Tensor>,
    #[module(skip)]
    in_channels: usize,
    #[module(skip)]
    out_channels: usize,
    #[module(skip)]
    kernel_size: Size2,
    #[module(skip)]
    stride: Size2,
    #[module(skip)]
    padding: Size2,
    #[module(skip)]
    output_padding: Size2,
    #[module(skip)]
    groups: usize,
    #[module(skip)]
    dilation: Size2,
    /// Where the parameters were drawn (see `Conv2d`).
    #[module(skip)]
    drawn: Drawn,
    training: bool,
}

impl ConvTranspose2d {
    /// A layer from `in_channels` to `out_channels` channels with a `kernel_size` kernel and
    /// PyTorch's defaults otherwise, initialised from the global generator (PyTorch's
    /// `nn.ConvTranspose2d(in_channels, out_channels, kernel_size)`).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::ConvTranspose2d;
    /// let up = ConvTranspose2d::new(16, 1, (2, 4))?;
    /// assert_eq!(up.weight().shape(), &[16, 1, 2, 4]);
    /// // fan_in = out_channels · kh · kw = 8, as PyTorch reads it off the weight.
    /// assert!(up.weight().to_vec::<f32>()?.iter().all(|w| w.abs() <= 1.0 / 8f32.sqrt()));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl Into<Size2>,
    ) -> Result<ConvTranspose2d> {
        let kernel_size = kernel_size.into();
        let [kh, kw] = kernel_size.0;
        let (weight, bias, drawn) =
            Drawn::new(&[in_channels, out_channels, kh, kw], Some(out_channels))?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            stride: Size2([1, 1]),
            padding: Size2([0, 0]),
            output_padding: Size2([0, 0]),
            groups: 1,
            dilation: Size2([1, 1]),
            drawn,
            training: true,
        })
    }

    /// The same layer with stride `stride` (PyTorch's `stride=`): the upsampling factor.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{ConvTranspose2d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let up = ConvTranspose2d::new(1, 1, 2)?.stride((2, 1));
    /// assert_eq!(up.forward(&Tensor::zeros(&[1, 1, 3, 3], DType::F32)?)?.shape(), &[1, 1, 6, 4]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn stride(mut self, stride: impl Into<Size2>) -> ConvTranspose2d {
        self.stride = stride.into();
        self
    }

    /// The same layer with `padding` (PyTorch's `padding=`): `dilation·(k − 1) − padding`
    /// zeros around the input, so the output shrinks by `2·padding`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{ConvTranspose2d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let up = ConvTranspose2d::new(1, 1, 3)?.padding(1);
    /// assert_eq!(up.forward(&Tensor::zeros(&[1, 1, 5, 5], DType::F32)?)?.shape(), &[1, 1, 5, 5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn padding(mut self, padding: impl Into<Size2>) -> ConvTranspose2d {
        self.padding = padding.into();
        self
    }

    /// The same layer with `output_padding` extra rows and columns at the bottom and right of
    /// the output (PyTorch's `output_padding=`), to pick among the sizes a strided convolution
    /// maps to the same size. It must be smaller than the stride or the dilation (checked by
    /// the forward, as PyTorch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{ConvTranspose2d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let up = ConvTranspose2d::new(1, 1, 3)?.stride(2).output_padding((1, 0));
    /// assert_eq!(up.forward(&Tensor::zeros(&[1, 1, 4, 4], DType::F32)?)?.shape(), &[1, 1, 10, 9]);
    /// let bad = ConvTranspose2d::new(1, 1, 3)?.output_padding(1);
    /// assert!(bad.forward(&Tensor::zeros(&[1, 1, 4, 4], DType::F32)?).is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn output_padding(mut self, output_padding: impl Into<Size2>) -> ConvTranspose2d {
        self.output_padding = output_padding.into();
        self
    }

    /// The same layer split into `groups` independent transposed convolutions (PyTorch's
    /// `groups=`): the weight becomes `[in_channels, out_channels / groups, kh, kw]` and both
    /// parameters are drawn again with the new `fan_in` from the generator state
    /// [`new`](ConvTranspose2d::new) started from, exactly as PyTorch's layer built with these
    /// options.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] in PyTorch's words unless `groups` is positive and divides
    /// both channel counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::ConvTranspose2d;
    /// assert_eq!(ConvTranspose2d::new(4, 6, 3)?.groups(2)?.weight().shape(), &[4, 3, 3, 3]);
    /// assert_eq!(
    ///     ConvTranspose2d::new(3, 4, 3)?.groups(2).unwrap_err().to_string(),
    ///     "in_channels must be divisible by groups"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn groups(mut self, groups: usize) -> Result<ConvTranspose2d> {
        check_groups(self.in_channels, self.out_channels, groups)?;
        self.groups = groups;
        let [kh, kw] = self.kernel_size.0;
        let weight_shape = [self.in_channels, self.out_channels / groups, kh, kw];
        let bias = self.bias.is_some().then_some(self.out_channels);
        (self.weight, self.bias) = self.drawn.redraw(&weight_shape, bias)?;
        Ok(self)
    }

    /// The same layer without a bias (PyTorch's `bias=False`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{ConvTranspose2d, Module};
    /// let up = ConvTranspose2d::new(2, 4, 3)?.without_bias();
    /// assert!(up.bias().is_none());
    /// assert_eq!(up.named_parameters().len(), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn without_bias(mut self) -> ConvTranspose2d {
        self.drawn.drop_bias(&mut self.bias);
        self
    }

    /// The same layer with the kernel's taps `dilation` apart (PyTorch's `dilation=`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{ConvTranspose2d, Forward};
    /// use autograd_runtime::{DType, Tensor};
    /// let up = ConvTranspose2d::new(1, 1, 3)?.dilation(2); // (4 − 1) + 2·2 + 1 = 8
    /// assert_eq!(up.forward(&Tensor::zeros(&[1, 1, 4, 4], DType::F32)?)?.shape(), &[1, 1, 8, 8]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn dilation(mut self, dilation: impl Into<Size2>) -> ConvTranspose2d {
        self.dilation = dilation.into();
        self
    }

    /// The weight, `[in_channels, out_channels / groups, kh, kw]` (PyTorch's transposed
    /// layout).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::ConvTranspose2d;
    /// let up = ConvTranspose2d::new(6, 9, (3, 1))?.groups(3)?;
    /// assert_eq!(up.weight().shape(), &[6, 3, 3, 1]);
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
    /// use autograd_runtime::nn::ConvTranspose2d;
    /// assert_eq!(ConvTranspose2d::new(6, 9, 2)?.bias().unwrap().shape(), &[9]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// PyTorch's `forward(input, output_size)`: the output padding is chosen so that the
    /// output's spatial size is `output_size` (its last two entries when it also names the
    /// batch and channels), which must lie between the size without output padding and that
    /// plus `stride − 1`. The layer's own `output_padding` is not used.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] in PyTorch's words for an `output_size` of the wrong length
    /// or out of the valid range; those of
    /// [`conv_transpose2d`](super::functional::conv_transpose2d).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::ConvTranspose2d;
    /// use autograd_runtime::{DType, Tensor};
    /// let up = ConvTranspose2d::new(3, 4, 3)?.stride(2);
    /// let x = Tensor::zeros(&[1, 3, 4, 4], DType::F32)?;
    /// assert_eq!(up.forward_with_output_size(&x, &[10, 9])?.shape(), &[1, 4, 10, 9]);
    /// assert_eq!(
    ///     up.forward_with_output_size(&x, &[11, 11]).unwrap_err().to_string(),
    ///     "requested an output size of [11, 11], but valid sizes range from [9, 9] to \
    ///      [10, 10] (for an input of torch.Size([4, 4]))"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn forward_with_output_size(
        &self,
        input: &Tensor,
        output_size: &[usize],
    ) -> Result<Tensor> {
        if !matches!(input.ndim(), 3 | 4) {
            // The functional's error for the input's rank.
            return self.conv(input, self.output_padding);
        }
        let non_spatial = input.ndim() - 2;
        let requested = if output_size.len() == non_spatial + 2 {
            &output_size[non_spatial..]
        } else {
            output_size
        };
        if requested.len() != 2 {
            return Err(Error::InvalidArgument(format!(
                "ConvTranspose2D: for {}D input, output_size must have 2 or {} elements (got {})",
                input.ndim(),
                non_spatial + 2,
                requested.len()
            )));
        }
        let (min, max): (Vec<isize>, Vec<isize>) = (0..2)
            .map(|d| {
                let min = (input.shape()[d + non_spatial] as isize - 1) * self.stride.0[d] as isize
                    - 2 * self.padding.0[d] as isize
                    + self.dilation.0[d] as isize * (self.kernel_size.0[d] as isize - 1)
                    + 1;
                (min, min + self.stride.0[d] as isize - 1)
            })
            .unzip();
        if (0..2).any(|d| (requested[d] as isize) < min[d] || requested[d] as isize > max[d]) {
            return Err(Error::InvalidArgument(format!(
                "requested an output size of {requested:?}, but valid sizes range from {min:?} \
                 to {max:?} (for an input of {})",
                // PyTorch prints `input.size()[2:]`, whatever the rank.
                torch_size(&input.shape()[2..])
            )));
        }
        let padding = [0, 1].map(|d| (requested[d] as isize - min[d]) as usize);
        self.conv(input, Size2(padding))
    }

    fn conv(&self, input: &Tensor, output_padding: Size2) -> Result<Tensor> {
        conv_transpose2d(
            input,
            &self.weight,
            self.bias.as_ref(),
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )
    }

    fn extra_repr(&self) -> String {
        conv_repr(
            self.in_channels,
            self.out_channels,
            &[
                ("kernel_size", &self.kernel_size.0, None),
                ("stride", &self.stride.0, None),
                ("padding", &self.padding.0, Some(0)),
                ("dilation", &self.dilation.0, Some(1)),
                ("output_padding", &self.output_padding.0, Some(0)),
            ],
            self.groups,
            self.bias.is_some(),
        )
    }
}

impl Forward for ConvTranspose2d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.conv(input, self.output_padding)
    }
}
