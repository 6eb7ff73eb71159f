//! `Conv2d` and `functional::conv2d`: 2-D convolution as im2col and GEMMs.
//!
//! On host memory (`Cpu`, `Virtual`) and a float dtype, each batch entry's patch matrix
//! `[C·kh·kw, L]` (`L = out_h·out_w`) is written directly by the im2col kernel (contiguous row
//! copies, padding as zero fill) and meets the weight in one GEMM per entry and group, giving
//! `[N, O, L]`, PyTorch's layout. im2col's gradient is col2im (adding the rows back), whose
//! gradient is im2col again, and the GEMM's backward is made of `matmul`s
//! (`nn/conv_patches.rs`): convolution is differentiable twice with no kernel of its own.
//!
//! Elsewhere (CUDA), the input's patches are gathered by one
//! [`index_select`](Tensor::index_select) with a precomputed index list, and multiplied by the
//! weight with [`matmul`](Tensor::matmul); `index_select`'s gradient is `index_add`, whose
//! gradient is `index_select` again. Layout there: the batch is the innermost dim of the patch
//! matrix. An `[N, C, H, W]` input becomes `[C·H·W (+1), N]` (the extra row holds the padding
//! value), the gather copies whole rows of `N` values, and the patch matrix `[C·kh·kw, L·N]`
//! meets the weight `[O, C·kh·kw]` in a single GEMM for the whole batch. [`Window`] is shared
//! with the pools.

use std::fmt;

use crate::backend::Patches;
use crate::nn::conv_params::{Drawn, check_groups, conv_repr};
use crate::nn::{Forward, Module};
use crate::{Error, Result, Tensor};

/// A size per spatial dim, `[height, width]`: PyTorch's `_size_2_t`, an `int` or a pair.
///
/// Every size argument of the convolution and pooling functions takes `impl Into<Size2>`: a
/// `usize` (the same for both dims), a `[usize; 2]` or a `(usize, usize)`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::Size2;
/// assert_eq!(Size2::from(3), Size2([3, 3]));
/// assert_eq!(Size2::from((2, 5)), Size2([2, 5]));
/// assert_eq!(Size2::from([1, 4]).0, [1, 4]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Size2(pub [usize; 2]);

impl From<usize> for Size2 {
    fn from(n: usize) -> Size2 {
        Size2([n, n])
    }
}

impl From<[usize; 2]> for Size2 {
    fn from(hw: [usize; 2]) -> Size2 {
        Size2(hw)
    }
}

impl From<(usize, usize)> for Size2 {
    fn from((h, w): (usize, usize)) -> Size2 {
        Size2([h, w])
    }
}

impl fmt::Display for Size2 {
    /// PyTorch's spelling in a module's `repr`: `(3, 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.0[0], self.0[1])
    }
}

// ----- the sliding window (shared with the pools) ------------------------------------------------

/// A 2-D sliding window over an `input`-sized plane: which input positions each output position
/// reads. Sizes are `[height, width]`; `output` is computed by the caller (convolution and
/// pooling round differently).
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub(super) kernel: [usize; 2],
    pub(super) stride: [usize; 2],
    pub(super) padding: [usize; 2],
    pub(super) dilation: [usize; 2],
    pub(super) input: [usize; 2],
    pub(super) output: [usize; 2],
}

impl Window {
    /// For each of `planes` planes, kernel offset `(ki, kj)` and output position `(oy, ox)`, in
    /// that (C) order, the flat position `plane·H·W + y·W + x` the window reads, or `pad` where
    /// it reads padding; and whether any entry is `pad`.
    fn index(&self, planes: usize, pad: usize) -> (Vec<usize>, bool) {
        let [h, w] = self.input;
        let [kh, kw] = self.kernel;
        let [oh, ow] = self.output;
        let mut index = Vec::with_capacity(planes * kh * kw * oh * ow);
        let mut padded = false;
        // The input coordinate read at kernel offset `k` by output position `o` along one dim.
        let coord = |d: usize, k: usize, o: usize| -> Option<usize> {
            (o * self.stride[d] + k * self.dilation[d]).checked_sub(self.padding[d])
        };
        for p in 0..planes {
            for ki in 0..kh {
                for kj in 0..kw {
                    for oy in 0..oh {
                        let y = coord(0, ki, oy).filter(|&y| y < h);
                        for ox in 0..ow {
                            let x = coord(1, kj, ox).filter(|&x| x < w);
                            match (y, x) {
                                (Some(y), Some(x)) => index.push(p * h * w + y * w + x),
                                _ => {
                                    index.push(pad);
                                    padded = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        (index, padded)
    }

    /// im2col: `rows` is `[planes·H·W, B]` (one row per input position, the batch inner); the
    /// result is `[planes·kh·kw, L·B]`, column `l·B + b` holding batch entry `b`'s patch at
    /// output position `l`, with `fill` where the window reads padding.
    pub(super) fn columns(&self, rows: &Tensor, planes: usize, fill: f64) -> Result<Tensor> {
        let batch = rows.shape()[1];
        let plane = self.input[0] * self.input[1];
        let (index, padded) = self.index(planes, planes * plane);
        let source = if padded {
            let pad_row = Tensor::filled(&[1, batch], fill, rows.dtype(), rows.device())?;
            Tensor::cat(&[rows.clone(), pad_row], 0)?
        } else {
            rows.clone()
        };
        let [kh, kw] = self.kernel;
        let positions = self.output[0] * self.output[1];
        source
            .index_select(0, &index)?
            .reshape(&[planes * kh * kw, positions * batch])
    }

    /// col2im, the adjoint of [`Window::columns`]: `columns` is `[planes·kh·kw, L·batch]`; the
    /// result is `[planes·H·W, batch]`, each input position the sum of the column entries that
    /// read it (entries that read padding are dropped). One differentiable
    /// `index_add` (whose gradient is `index_select`: im2col again).
    pub(super) fn image(&self, columns: &Tensor, planes: usize, batch: usize) -> Result<Tensor> {
        let plane_rows = planes * self.input[0] * self.input[1];
        let (index, padded) = self.index(planes, plane_rows);
        let entries = columns.reshape(&[index.len(), batch])?;
        let image =
            entries.index_add_into(&[plane_rows + usize::from(padded), batch], 0, &index)?;
        if padded {
            image.narrow(0, 0, plane_rows)
        } else {
            Ok(image)
        }
    }
}

/// `x` read as a row-major `[rows, cols]` matrix, transposed into a contiguous `[cols, rows]`
/// one (a differentiable copy). A 2-D transpose is the cheap way between the batch-outer layout
/// of the tensors users see and the batch-inner one of the patch matrices: the copy kernel is
/// far faster on it than on the equivalent 4-D permutation.
pub(super) fn transpose_2d(x: &Tensor, rows: usize, cols: usize) -> Result<Tensor> {
    x.reshape(&[rows, cols])?.transpose(0, 1)?.contiguous()
}

// ----- the function ---------------------------------------------------------------------------------

/// 2-D convolution (PyTorch's `torch.nn.functional.conv2d`; strictly a cross-correlation, as
/// there): `input` `[N, C, H, W]` (or unbatched `[C, H, W]`), `weight`
/// `[O, C / groups, kh, kw]`, optional `bias` `[O]`; the result is `[N, O, out_h, out_w]` with
/// `out = (in + 2·padding − dilation·(k − 1) − 1) / stride + 1` per dim (rounded down).
///
/// Computed as im2col (the input's patches written into one matrix per batch entry on the
/// CPU, an [`index_select`](Tensor::index_select) elsewhere) and GEMMs with the weight, each
/// group apart, so it is differentiable twice with respect to input, weight and bias, on every
/// device.
///
/// # Errors
///
/// [`Error::InvalidArgument`] with PyTorch's text for a wrong number of dims, a zero stride,
/// dilation or group count, a weight whose shape does not fit the input or the groups, a bias
/// of the wrong shape, a kernel larger than the padded input or of size 0; dtype and device
/// mismatches.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional as F;
/// use autograd_runtime::Tensor;
/// // A 1×1×3×3 input and a 2×2 kernel of ones: each output sums a 2×2 window.
/// let x = Tensor::from_vec((1..=9).map(f64::from).collect(), &[1, 1, 3, 3])?.requires_grad_(true)?;
/// let w = Tensor::ones(&[1, 1, 2, 2], autograd_runtime::DType::F64)?;
/// let y = F::conv2d(&x, &w, None, 1, 0, 1, 1)?;
/// assert_eq!(y.shape(), &[1, 1, 2, 2]);
/// assert_eq!(y.to_vec::<f64>()?, vec![12.0, 16.0, 24.0, 28.0]);
/// y.sum()?.backward()?;
/// // Each input value is counted once per window that covers it.
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: impl Into<Size2>,
    padding: impl Into<Size2>,
    dilation: impl Into<Size2>,
    groups: usize,
) -> Result<Tensor> {
    let (Size2(stride), Size2(padding), Size2(dilation)) =
        (stride.into(), padding.into(), dilation.into());
    crate::amp::autocast_entry!(conv2d(
        input, weight, bias, stride, padding, dilation, groups
    ));
    let invalid = |message: String| Err(Error::InvalidArgument(message));
    let unbatched = match input.ndim() {
        3 => true,
        4 => false,
        _ => {
            return invalid(format!(
                "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of \
                 size: {:?}",
                input.shape()
            ));
        }
    };
    let x = if unbatched {
        input.reshape(&[&[1], input.shape()].concat())?
    } else {
        input.clone()
    };
    if stride.contains(&0) {
        return invalid("non-positive stride is not supported".into());
    }
    if dilation.contains(&0) {
        return invalid(format!(
            "dilation should be greater than zero, but got {dilation:?}"
        ));
    }
    if groups == 0 {
        return invalid("non-positive groups is not supported".into());
    }
    let ws = weight.shape();
    if ws.len() != 4 {
        return invalid(format!(
            "Expected {d}-dimensional input for {d}-dimensional weight {ws:?}, but got \
             4-dimensional input of size {:?} instead",
            x.shape(),
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
    let [n, c, h, w] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    if c != ws[1] * groups {
        return invalid(format!(
            "Given groups={groups}, weight of size {ws:?}, expected input{:?} to have {} \
             channels, but got {c} channels instead",
            x.shape(),
            ws[1] * groups
        ));
    }
    let out_channels = ws[0];
    if let Some(b) = bias
        && b.shape() != [out_channels]
    {
        return invalid(format!(
            "Given weight of size {ws:?}, expected bias to be 1-dimensional with \
             {out_channels} elements, but got bias of size {:?} instead",
            b.shape()
        ));
    }
    let kernel = [ws[2], ws[3]];
    let padded = [h + 2 * padding[0], w + 2 * padding[1]];
    // The dilated kernel's extent; PyTorch computes it in signed arithmetic, `1 - d` for k = 0.
    let extent = |d: usize| (kernel[d] as isize - 1) * dilation[d] as isize + 1;
    if (0..2).any(|d| extent(d) > padded[d] as isize) {
        return invalid(format!(
            "Calculated padded input size per channel: ({} x {}). Kernel size: ({} x {}). \
             Kernel size can't be greater than actual input size",
            padded[0],
            padded[1],
            extent(0),
            extent(1)
        ));
    }
    if kernel.contains(&0) {
        return invalid(format!(
            "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
            kernel[0], kernel[1]
        ));
    }
    x.check_same_dtype_device("conv2d", weight)?;
    if let Some(b) = bias {
        x.check_same_dtype_device("conv2d", b)?;
    }

    let patches = Patches::new([n, c, h, w], kernel, stride, padding, dilation);
    let output = patches.output;
    let positions = output[0] * output[1];
    let add_bias = |y: Tensor, shape: &[usize]| match bias {
        Some(b) => y.add(&b.reshape(shape)?),
        None => Ok(y),
    };
    let y = if super::conv_patches::fusable(&x)? {
        // One op each way, f32 and f64 on the CPU: im2col into an L2-sized scratch block per
        // batch entry and block of output rows, GEMMs straight into the result
        // (`backend/cpu/conv.rs`).
        super::conv_patches::fused(&x, weight, bias, patches, groups)?
    } else if x.device().is_host() && x.dtype().is_floating_point() {
        // One patch matrix `[C·kh·kw, L]` per batch entry, written directly, and one GEMM per
        // entry and group with the weight, giving `[N, O, L]`, PyTorch's layout, with no
        // transpose (one GEMM over the whole batch is slower: see `backend/cpu/conv.rs`).
        let columns = super::conv_patches::columns(&x, patches)?; // [N, C·kh·kw, L]
        let patch = ws[1] * kernel[0] * kernel[1];
        let y = super::conv_patches::grouped_matmul(
            &weight.reshape(&[groups, out_channels / groups, patch])?,
            &columns.reshape(&[n, groups, patch, positions])?,
        )?
        .reshape(&[n, out_channels, positions])?;
        add_bias(y, &[out_channels, 1])?
    } else {
        let window = Window {
            kernel,
            stride,
            padding,
            dilation,
            input: [h, w],
            output,
        };
        // [N, C, H, W] -> [C·H·W, N]: one row per input position, the batch inner.
        let rows = transpose_2d(&x, n, c * h * w)?;
        let y = matmul_grouped(weight, &window.columns(&rows, c, 0.0)?, groups)?; // [O, L·N]
        let y = add_bias(y, &[out_channels, 1])?;
        // [O, L·N] = [O·L, N] -> [N, O·L]: contiguous, as PyTorch's result.
        transpose_2d(&y, out_channels * positions, n)?
    };
    if unbatched {
        y.reshape(&[out_channels, output[0], output[1]])
    } else {
        y.reshape(&[n, out_channels, output[0], output[1]])
    }
}

/// `weight` (`[O, C / groups, kh, kw]`) times the patch matrix `columns` (`[C·kh·kw, P]`), group
/// by group: `[O, P]`.
fn matmul_grouped(weight: &Tensor, columns: &Tensor, groups: usize) -> Result<Tensor> {
    let ws = weight.shape();
    let (out_channels, patch) = (ws[0], ws[1] * ws[2] * ws[3]);
    let width = columns.shape()[1];
    if groups == 1 {
        weight.reshape(&[out_channels, patch])?.matmul(columns)
    } else {
        weight
            .reshape(&[groups, out_channels / groups, patch])?
            .matmul(&columns.reshape(&[groups, patch, width])?)?
            .reshape(&[out_channels, width])
    }
}

// ----- the module -----------------------------------------------------------------------------------

/// A 2-D convolution layer (PyTorch's `nn.Conv2d`): parameters `weight`
/// `[out_channels, in_channels / groups, kh, kw]` and `bias` `[out_channels]`, named and laid out
/// as PyTorch's, so state dicts carry over; the forward is [`conv2d`](super::functional::conv2d).
///
/// [`new`](Conv2d::new) gives stride 1, padding 0, dilation 1, one group and a bias, as
/// PyTorch's defaults; the builder methods change them. Parameters are initialised as PyTorch
/// does (`kaiming_uniform_(a=√5)`: uniform in `±1/√fan_in` with
/// `fan_in = in_channels / groups · kh · kw`, then the bias in the same bound), from the global
/// generator, in f32 on the CPU: after [`manual_seed`](crate::manual_seed) they are PyTorch's
/// (the builder options that change the parameters, [`groups`](Conv2d::groups) and
/// [`without_bias`](Conv2d::without_bias), draw them again from where [`new`](Conv2d::new)
/// started, so the generator ends where PyTorch's does).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Conv2d, Forward, Module};
/// use autograd_runtime::{DType, Tensor};
/// let conv = Conv2d::new(3, 8, 3)?.stride(2).padding(1);
/// assert_eq!(conv.weight().shape(), &[8, 3, 3, 3]);
/// let y = conv.forward(&Tensor::zeros(&[4, 3, 16, 16], DType::F32)?)?;
/// assert_eq!(y.shape(), &[4, 8, 8, 8]);
/// let names: Vec<String> = conv.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["weight", "bias"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Debug, Module)]
#[module(extra_repr = Conv2d::extra_repr)]
pub struct Conv2d {
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
    dilation: Size2,
    #[module(skip)]
    groups: usize,
    /// Where the parameters were drawn, so that [`Conv2d::groups`] and
    /// [`Conv2d::without_bias`] draw the parameters a layer built with those options from the
    /// start would have.
    #[module(skip)]
    drawn: Drawn,
    training: bool,
}

impl Conv2d {
    /// A layer from `in_channels` to `out_channels` channels with a `kernel_size` kernel,
    /// stride 1, no padding, one group and a bias, initialised from the global generator
    /// (PyTorch's `nn.Conv2d(in_channels, out_channels, kernel_size)`).
    ///
    /// # Errors
    ///
    /// Allocation errors only.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv2d;
    /// let conv = Conv2d::new(1, 16, (3, 5))?;
    /// assert_eq!(conv.weight().shape(), &[16, 1, 3, 5]);
    /// assert_eq!(conv.bias().unwrap().shape(), &[16]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: impl Into<Size2>,
    ) -> Result<Conv2d> {
        let kernel_size = kernel_size.into();
        let [kh, kw] = kernel_size.0;
        let (weight, bias, drawn) =
            Drawn::new(&[out_channels, in_channels, kh, kw], Some(out_channels))?;
        Ok(Conv2d {
            weight,
            bias,
            in_channels,
            out_channels,
            kernel_size,
            stride: Size2([1, 1]),
            padding: Size2([0, 0]),
            dilation: Size2([1, 1]),
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
    /// use autograd_runtime::nn::{Conv2d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv2d::new(1, 1, 2)?.stride((1, 2));
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 4, 4], DType::F32)?)?.shape(), &[1, 1, 3, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn stride(mut self, stride: impl Into<Size2>) -> Conv2d {
        self.stride = stride.into();
        self
    }

    /// The same layer with `padding` zeros on each side (PyTorch's `padding=` with
    /// `padding_mode='zeros'`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv2d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv2d::new(1, 1, 3)?.padding(1);
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 5, 5], DType::F32)?)?.shape(), &[1, 1, 5, 5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn padding(mut self, padding: impl Into<Size2>) -> Conv2d {
        self.padding = padding.into();
        self
    }

    /// The same layer with the kernel's taps `dilation` apart (PyTorch's `dilation=`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv2d, Forward, Module};
    /// use autograd_runtime::{DType, Tensor};
    /// let conv = Conv2d::new(1, 1, 3)?.dilation(2); // covers 5×5
    /// assert_eq!(conv.forward(&Tensor::zeros(&[1, 1, 6, 6], DType::F32)?)?.shape(), &[1, 1, 2, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn dilation(mut self, dilation: impl Into<Size2>) -> Conv2d {
        self.dilation = dilation.into();
        self
    }

    /// The same layer split into `groups` independent convolutions (PyTorch's `groups=`): the
    /// weight becomes `[out_channels, in_channels / groups, kh, kw]` and both parameters are
    /// drawn again with the new `fan_in` from the generator state [`new`](Conv2d::new) started
    /// from, exactly as PyTorch's layer built with these options (draws made in between are
    /// drawn again).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] in PyTorch's words unless `groups` is positive and divides
    /// both channel counts.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv2d;
    /// let conv = Conv2d::new(4, 6, 3)?.groups(2)?;
    /// assert_eq!(conv.weight().shape(), &[6, 2, 3, 3]);
    /// assert_eq!(
    ///     Conv2d::new(3, 6, 3)?.groups(2).unwrap_err().to_string(),
    ///     "in_channels must be divisible by groups"
    /// );
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn groups(mut self, groups: usize) -> Result<Conv2d> {
        check_groups(self.in_channels, self.out_channels, groups)?;
        self.groups = groups;
        let [kh, kw] = self.kernel_size.0;
        let weight_shape = [self.out_channels, self.in_channels / groups, kh, kw];
        let bias = self.bias.is_some().then_some(self.out_channels);
        (self.weight, self.bias) = self.drawn.redraw(&weight_shape, bias)?;
        Ok(self)
    }

    /// The same layer without a bias (PyTorch's `bias=False`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::{Conv2d, Forward, Module};
    /// let conv = Conv2d::new(1, 4, 3)?.without_bias();
    /// assert!(conv.bias().is_none());
    /// assert_eq!(conv.named_parameters().len(), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[must_use]
    pub fn without_bias(mut self) -> Conv2d {
        self.drawn.drop_bias(&mut self.bias);
        self
    }

    /// The weight, `[out_channels, in_channels / groups, kh, kw]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::nn::Conv2d;
    /// let conv = Conv2d::new(6, 9, (3, 1))?.groups(3)?;
    /// assert_eq!(conv.weight().shape(), &[9, 2, 3, 1]);
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
    /// use autograd_runtime::nn::Conv2d;
    /// let conv = Conv2d::new(1, 4, 3)?;
    /// // PyTorch's default init: uniform in ±1/√fan_in, fan_in = 1·3·3.
    /// let b = conv.bias().unwrap().to_vec::<f32>()?;
    /// assert!(b.iter().all(|v| v.abs() <= 1.0 / 3.0));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl Conv2d {
    fn extra_repr(&self) -> String {
        conv_repr(
            self.in_channels,
            self.out_channels,
            &[
                ("kernel_size", &self.kernel_size.0, None),
                ("stride", &self.stride.0, None),
                ("padding", &self.padding.0, Some(0)),
                ("dilation", &self.dilation.0, Some(1)),
            ],
            self.groups,
            self.bias.is_some(),
        )
    }
}

impl Forward for Conv2d {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        conv2d(
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
