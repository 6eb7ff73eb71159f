//! Resampling (PyTorch's `F.interpolate` and `nn.Upsample`): nearest, nearest-exact, linear,
//! bilinear, trilinear and area modes, with PyTorch's source-index rules, in differentiable
//! (twice) ops: `index_select` along each spatial dim and a weighted sum for the linear modes.

use super::adaptive_pool::adaptive_avg_pool;
use super::repr::py_float;
use crate::nn::{Forward, Module};
use crate::{DType, Error, Result, Tensor};

/// A value for every spatial dim: given once for all of them (Python's `7` or `2.0`) or once per
/// dim (a tuple, `(4, 6)`). The form is kept, as PyTorch's modules keep it for their `repr`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::Spatial;
/// let all: Spatial<usize> = 7.into();
/// let each: Spatial<usize> = (4, 6).into();
/// assert_eq!((all, each), (Spatial::All(7), Spatial::Each(vec![4, 6])));
/// let keep: Spatial<Option<usize>> = (None, Some(7)).into();
/// assert_eq!(keep, Spatial::Each(vec![None, Some(7)]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Spatial<T> {
    /// One value for every spatial dim.
    All(T),
    /// One value per spatial dim, in order.
    Each(Vec<T>),
}

impl<T: Clone> Spatial<T> {
    /// The value for each of `dims` spatial dims (a per-dim list as it is, whatever its length).
    pub fn expand(&self, dims: usize) -> Vec<T> {
        match self {
            Spatial::All(v) => vec![v.clone(); dims],
            Spatial::Each(v) => v.clone(),
        }
    }

    /// As Python's `repr` writes the int or the tuple, each value by `one`.
    pub(crate) fn py_repr(&self, one: impl Fn(&T) -> String) -> String {
        match self {
            Spatial::All(v) => one(v),
            Spatial::Each(v) if v.len() == 1 => format!("({},)", one(&v[0])),
            Spatial::Each(v) => format!("({})", v.iter().map(one).collect::<Vec<_>>().join(", ")),
        }
    }
}

impl<T> From<T> for Spatial<T> {
    fn from(v: T) -> Spatial<T> {
        Spatial::All(v)
    }
}

impl<T> From<(T, T)> for Spatial<T> {
    fn from((a, b): (T, T)) -> Spatial<T> {
        Spatial::Each(vec![a, b])
    }
}

impl<T> From<(T, T, T)> for Spatial<T> {
    fn from((a, b, c): (T, T, T)) -> Spatial<T> {
        Spatial::Each(vec![a, b, c])
    }
}

impl<T, const N: usize> From<[T; N]> for Spatial<T> {
    fn from(v: [T; N]) -> Spatial<T> {
        Spatial::Each(v.into())
    }
}

impl<T> From<Vec<T>> for Spatial<T> {
    fn from(v: Vec<T>) -> Spatial<T> {
        Spatial::Each(v)
    }
}

impl From<usize> for Spatial<Option<usize>> {
    fn from(v: usize) -> Spatial<Option<usize>> {
        Spatial::All(Some(v))
    }
}

impl From<(usize, usize)> for Spatial<Option<usize>> {
    fn from((a, b): (usize, usize)) -> Spatial<Option<usize>> {
        Spatial::Each(vec![Some(a), Some(b)])
    }
}

/// How [`interpolate`] computes each output value (PyTorch's `mode=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InterpolateMode {
    /// `"nearest"` (the default): the input at `floor(dst · in / out)` (with PyTorch's `f32`
    /// scale), for 3-D, 4-D and 5-D inputs.
    #[default]
    Nearest,
    /// `"nearest-exact"`: the input at `floor((dst + 0.5) · in / out)`.
    NearestExact,
    /// `"linear"`: linear interpolation of a 3-D input.
    Linear,
    /// `"bilinear"`: bilinear interpolation of a 4-D input.
    Bilinear,
    /// `"trilinear"`: trilinear interpolation of a 5-D input.
    Trilinear,
    /// `"area"`: adaptive average pooling to the output size.
    Area,
}

impl InterpolateMode {
    /// PyTorch's name for the mode (`"nearest-exact"`).
    pub fn name(self) -> &'static str {
        match self {
            InterpolateMode::Nearest => "nearest",
            InterpolateMode::NearestExact => "nearest-exact",
            InterpolateMode::Linear => "linear",
            InterpolateMode::Bilinear => "bilinear",
            InterpolateMode::Trilinear => "trilinear",
            InterpolateMode::Area => "area",
        }
    }

    /// The number of spatial dims a linear mode needs (`None` for the others).
    fn linear_dims(self) -> Option<usize> {
        match self {
            InterpolateMode::Linear => Some(1),
            InterpolateMode::Bilinear => Some(2),
            InterpolateMode::Trilinear => Some(3),
            _ => None,
        }
    }
}

/// The computation type PyTorch's kernels index in (`opmath_t`): `f64` for `f64`, `f32`
/// otherwise. `round` takes an `f64` result to it (an `f32` operation on `f32` operands is the
/// `f64` one rounded once, so the values below are PyTorch's bit for bit).
#[derive(Clone, Copy)]
struct Opmath(bool);

impl Opmath {
    fn of(dtype: DType) -> Opmath {
        Opmath(dtype == DType::F64)
    }

    fn round(self, v: f64) -> f64 {
        if self.0 { v } else { f64::from(v as f32) }
    }
}

/// PyTorch's `compute_scales_value<T>`: `1 / scale` when a positive scale factor was given,
/// else `input / output`, in `T`.
fn scales_value(op: Opmath, scale: Option<f64>, input: usize, output: usize) -> f64 {
    match scale {
        Some(s) if s > 0.0 => op.round(1.0 / s),
        _ => op.round(op.round(input as f64) / op.round(output as f64)),
    }
}

/// The source index of each output position for the nearest modes (PyTorch's `nearest_idx`
/// and `nearest_exact_idx`, whose scale is an `f32` whatever the dtype).
fn nearest_indices(input: usize, output: usize, scale: Option<f64>, exact: bool) -> Vec<usize> {
    let f32_math = Opmath(false);
    let s = scales_value(f32_math, scale, input, output) as f32;
    (0..output)
        .map(|i| {
            if !exact && output == input {
                return i;
            }
            if !exact && output == 2 * input {
                return i >> 1;
            }
            let src = if exact {
                // `floorf((dst_index + 0.5) * scale)`: the product in double, floored as a float.
                ((i as f64 + 0.5) * f64::from(s)) as f32
            } else {
                // `floorf(dst_index * scale)`: the product in float.
                i as f32 * s
            };
            (src.floor().max(0.0) as usize).min(input - 1)
        })
        .collect()
}

/// The two source indices and weights of each output position for the linear modes (PyTorch's
/// `compute_source_index_and_lambda`).
fn linear_indices(
    op: Opmath,
    input: usize,
    output: usize,
    scale: Option<f64>,
    align_corners: bool,
) -> (Vec<usize>, Vec<usize>, Vec<f64>, Vec<f64>) {
    let ratio = if align_corners {
        if output > 1 {
            op.round(op.round((input - 1) as f64) / op.round((output - 1) as f64))
        } else {
            0.0
        }
    } else {
        scales_value(op, scale, input, output)
    };
    let mut idx = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..output {
        let (i0, i1, l0, l1) = if output == input {
            (i, i, 1.0, 0.0)
        } else {
            let real = if align_corners {
                op.round(ratio * i as f64)
            } else {
                let src = op.round(op.round(ratio * op.round(i as f64 + 0.5)) - 0.5);
                src.max(0.0)
            };
            // `guard_index_and_lambda`: `floorf` of the index, as a float.
            let i0 = ((real as f32).floor().max(0.0) as usize).min(input - 1);
            let l1 = op.round(real - i0 as f64).clamp(0.0, 1.0);
            let i1 = if i0 < input - 1 { i0 + 1 } else { i0 };
            (i0, i1, op.round(1.0 - l1), l1)
        };
        idx.0.push(i0);
        idx.1.push(i1);
        idx.2.push(l0);
        idx.3.push(l1);
    }
    idx
}

/// Per-position weights along `axis` of an `ndim`-dim tensor, shaped to broadcast.
fn weights_along(w: Vec<f64>, axis: usize, ndim: usize, like: &Tensor) -> Result<Tensor> {
    let mut shape = vec![1; ndim];
    shape[axis] = w.len();
    Tensor::from_vec(w, &shape)?
        .to_dtype(like.dtype())?
        .to(like.device())
}

/// Python's list repr of sizes (`[4, 5]`).
fn py_list(v: &[usize]) -> String {
    format!("{v:?}")
}

/// PyTorch's `Input and output sizes should be greater than 0` check of the upsampling kernels.
fn check_sizes(input: &[usize], output: &[i64]) -> Result<()> {
    if input.iter().all(|&v| v > 0) && output.iter().all(|&v| v > 0) {
        return Ok(());
    }
    let names: &[&str] = match input.len() {
        1 => &["W"],
        2 => &["H", "W"],
        _ => &["D", "H", "W"],
    };
    let list = |v: Vec<String>| {
        names
            .iter()
            .zip(v)
            .map(|(n, v)| format!("{n}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // The 1-D kernel's message says "and output".
    let and = if input.len() == 1 { "and " } else { "" };
    Err(Error::InvalidArgument(format!(
        "Input and output sizes should be greater than 0, but got input ({}) {and}output ({})",
        list(input.iter().map(usize::to_string).collect()),
        list(output.iter().map(i64::to_string).collect()),
    )))
}

/// Resizes the spatial dims (all but the first two) of a `[N, C, W]`, `[N, C, H, W]` or
/// `[N, C, D, H, W]` input (PyTorch's `F.interpolate(input, size=None, scale_factor=None,
/// mode='nearest', align_corners=None, recompute_scale_factor=None)`).
///
/// Exactly one of `size` (the output's spatial size) and `scale_factor` (the output is
/// `floor(input · scale_factor)`, and the kernels take `1 / scale_factor` as their scale unless
/// `recompute_scale_factor`) is given, once for every dim or once per dim. `align_corners`
/// (`false` by default) is for the linear modes only: with it, the corner samples of input and
/// output are aligned (`src = dst · (in - 1) / (out - 1)`), without it the pixel centres are
/// (`src = (dst + 0.5) · in / out - 0.5`, clamped at 0). The indices are PyTorch's to the bit
/// (including its `f32` scale for the nearest modes). The gradient reaches `input`.
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: `either size or scale_factor should be
/// defined`; `only one of size or scale_factor should be defined`; `align_corners option can
/// only be set with the interpolating modes: linear | bilinear | bicubic | trilinear`; `Input
/// and output must have the same number of spatial dimensions, ..`; `Got 3D input, but bilinear
/// mode needs 4D input`; `Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D) for
/// the modes: ..`; `Input and output sizes should be greater than 0, but got input (H: 4, W: 5)
/// output (H: 0, W: 3)`; `recompute_scale_factor is not meaningful with an explicit size.`
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::interpolate;
/// use autograd_runtime::nn::InterpolateMode;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[1, 1, 2, 2])?;
/// let nearest = interpolate(&x, None, Some(2.0.into()), InterpolateMode::Nearest, None, None)?;
/// assert_eq!(nearest.to_vec::<f64>()?[..4], [1.0, 1.0, 2.0, 2.0]);
/// let corners =
///     interpolate(&x, Some(3.into()), None, InterpolateMode::Bilinear, Some(true), None)?;
/// assert_eq!(corners.to_vec::<f64>()?, [1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]);
/// let centres = interpolate(&x, Some((1, 4).into()), None, InterpolateMode::Bilinear, None, None)?;
/// assert_eq!(centres.to_vec::<f64>()?, [2.0, 2.25, 2.75, 3.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn interpolate(
    input: &Tensor,
    size: Option<Spatial<usize>>,
    scale_factor: Option<Spatial<f64>>,
    mode: InterpolateMode,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
) -> Result<Tensor> {
    if mode != InterpolateMode::Area {
        crate::amp::autocast_entry!(interpolate(
            input,
            &size,
            &scale_factor,
            mode,
            align_corners,
            recompute_scale_factor
        ));
    }
    let align_corners = if mode.linear_dims().is_none() {
        if align_corners.is_some() {
            return Err(Error::InvalidArgument(
                "align_corners option can only be set with the interpolating modes: linear | \
                 bilinear | bicubic | trilinear"
                    .into(),
            ));
        }
        false
    } else {
        align_corners.unwrap_or(false)
    };
    let shape = input.shape().to_vec();
    let ndim = shape.len();
    let dims = ndim.saturating_sub(2);
    let spatial = &shape[ndim.min(2)..];
    let (mut output_size, mut scale_factors): (Option<Vec<usize>>, Option<Vec<f64>>) =
        match (&size, &scale_factor) {
            (Some(_), Some(_)) => {
                return Err(Error::InvalidArgument(
                    "only one of size or scale_factor should be defined".into(),
                ));
            }
            (Some(size), None) => {
                if let Spatial::Each(v) = size
                    && v.len() != dims
                {
                    return Err(Error::InvalidArgument(format!(
                        "Input and output must have the same number of spatial dimensions, but \
                         got input with spatial dimensions of {} and output size of {}. Please \
                         provide input tensor in (N, C, d1, d2, ...,dK) format and output size \
                         in (o1, o2, ...,oK) format.",
                        py_list(spatial),
                        size.py_repr(usize::to_string)
                    )));
                }
                (Some(size.expand(dims)), None)
            }
            (None, Some(scale)) => {
                if let Spatial::Each(v) = scale
                    && v.len() != dims
                {
                    return Err(Error::InvalidArgument(format!(
                        "Input and scale_factor must have the same number of spatial \
                         dimensions, but got input with spatial dimensions of {} and \
                         scale_factor of shape {}. Please provide input tensor in (N, C, d1, \
                         d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.",
                        py_list(spatial),
                        scale.py_repr(|v| py_float(*v))
                    )));
                }
                (None, Some(scale.expand(dims)))
            }
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "either size or scale_factor should be defined".into(),
                ));
            }
        };
    if recompute_scale_factor == Some(true) && size.is_some() {
        return Err(Error::InvalidArgument(
            "recompute_scale_factor is not meaningful with an explicit size.".into(),
        ));
    }
    let recompute = recompute_scale_factor == Some(true)
        || (mode == InterpolateMode::Area && output_size.is_none());
    // The output size as the kernels compute it: `(int64_t)(input_size * scale)`.
    let output: Vec<i64> = match (&output_size, &scale_factors) {
        (Some(o), _) => o.iter().map(|&o| o as i64).collect(),
        (None, Some(s)) => spatial
            .iter()
            .zip(s)
            .map(|(&i, &s)| (i as f64 * s) as i64)
            .collect(),
        (None, None) => Vec::new(),
    };
    if recompute {
        output_size = Some(output.iter().map(|&o| o.max(0) as usize).collect());
        scale_factors = None;
    }
    if !(3..=5).contains(&ndim) {
        return Err(Error::InvalidArgument(format!(
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the \
             modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | \
             nearest-exact (got {})",
            mode.name()
        )));
    }
    if let Some(need) = mode.linear_dims()
        && need != dims
    {
        return Err(Error::InvalidArgument(format!(
            "Got {ndim}D input, but {} mode needs {}D input",
            mode.name(),
            need + 2
        )));
    }
    if !input.dtype().is_floating_point() {
        // PyTorch's kernels are floating-point only; the name is the kernel that refuses.
        let kernel = match (mode, dims) {
            (InterpolateMode::Area, d) => format!("adaptive_avg_pool{d}d"),
            (InterpolateMode::Nearest | InterpolateMode::NearestExact, 2) => {
                "upsample_nearest2d_channels_last".to_string()
            }
            (InterpolateMode::Bilinear, 2) => "upsample_bilinear2d_channels_last".to_string(),
            (InterpolateMode::Nearest | InterpolateMode::NearestExact, _) => {
                "compute_indices_weights_nearest".to_string()
            }
            _ => "compute_indices_weights_linear".to_string(),
        };
        return Err(Error::InvalidArgument(format!(
            "\"{kernel}\" not implemented for '{}'",
            input.dtype().scalar_type_name()
        )));
    }
    if mode == InterpolateMode::Area {
        // `adaptive_avg_pool{1,2,3}d`: the same windows in every dim.
        return adaptive_avg_pool(input, output_size.as_deref().unwrap_or(&[]));
    }
    check_sizes(spatial, &output)?;
    let scales: Vec<Option<f64>> = match &scale_factors {
        Some(s) => s.iter().map(|&s| Some(s)).collect(),
        None => vec![None; dims],
    };
    let op = Opmath::of(input.dtype());
    let mut y = input.clone();
    // The innermost dim first: a bilinear value is `h0λ·(w0λ·x00 + w1λ·x01) + h1λ·(..)`, as
    // PyTorch's kernel sums it.
    for d in (0..dims).rev() {
        let axis = 2 + d;
        let (i, o) = (spatial[d], output[d] as usize);
        y = match mode {
            InterpolateMode::Nearest | InterpolateMode::NearestExact => {
                let exact = mode == InterpolateMode::NearestExact;
                y.index_select(axis, &nearest_indices(i, o, scales[d], exact))?
            }
            _ => {
                let (i0, i1, l0, l1) = linear_indices(op, i, o, scales[d], align_corners);
                let (l0, l1) = (
                    weights_along(l0, axis, ndim, input)?,
                    weights_along(l1, axis, ndim, input)?,
                );
                y.index_select(axis, &i0)?
                    .mul(&l0)?
                    .add(&y.index_select(axis, &i1)?.mul(&l1)?)?
            }
        };
    }
    Ok(y)
}

/// Upsampling as a layer (PyTorch's `nn.Upsample(size=None, scale_factor=None,
/// mode='nearest', align_corners=None, recompute_scale_factor=None)`), without parameters: the
/// forward is [`interpolate`](super::functional::interpolate) with the layer's options.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::{Forward, InterpolateMode, Module, Upsample};
/// use autograd_runtime::{DType, Tensor};
/// let up = Upsample::with_scale_factor(2.0);
/// assert_eq!(up.forward(&Tensor::zeros(&[1, 3, 4, 5], DType::F32)?)?.shape(), &[1, 3, 8, 10]);
/// assert_eq!(up.to_string(), "Upsample(scale_factor=2.0, mode='nearest')");
/// let up = Upsample::with_size((4, 6)).mode(InterpolateMode::Bilinear).align_corners(Some(true));
/// assert_eq!(up.forward(&Tensor::zeros(&[1, 3, 2, 2], DType::F32)?)?.shape(), &[1, 3, 4, 6]);
/// assert_eq!(up.to_string(), "Upsample(size=(4, 6), mode='bilinear')");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Module)]
#[module(extra_repr = Upsample::extra_repr)]
pub struct Upsample {
    #[module(skip)]
    size: Option<Spatial<usize>>,
    #[module(skip)]
    scale_factor: Option<Spatial<f64>>,
    #[module(skip)]
    mode: InterpolateMode,
    #[module(skip)]
    align_corners: Option<bool>,
    #[module(skip)]
    recompute_scale_factor: Option<bool>,
    training: bool,
}

impl Upsample {
    /// PyTorch's constructor: `size` or `scale_factor` (the forward refuses neither or both, as
    /// PyTorch's does), mode `nearest`.
    pub fn new(size: Option<Spatial<usize>>, scale_factor: Option<Spatial<f64>>) -> Upsample {
        Upsample {
            size,
            scale_factor,
            mode: InterpolateMode::Nearest,
            align_corners: None,
            recompute_scale_factor: None,
            training: true,
        }
    }

    /// To the spatial size `size` (one for every dim, or one per dim).
    pub fn with_size(size: impl Into<Spatial<usize>>) -> Upsample {
        Upsample::new(Some(size.into()), None)
    }

    /// By `scale_factor` (one for every dim, or one per dim).
    pub fn with_scale_factor(scale_factor: impl Into<Spatial<f64>>) -> Upsample {
        Upsample::new(None, Some(scale_factor.into()))
    }

    /// The same layer with PyTorch's `mode=`.
    #[must_use]
    pub fn mode(mut self, mode: InterpolateMode) -> Upsample {
        self.mode = mode;
        self
    }

    /// The same layer with PyTorch's `align_corners=` (for the linear modes).
    #[must_use]
    pub fn align_corners(mut self, align_corners: Option<bool>) -> Upsample {
        self.align_corners = align_corners;
        self
    }

    /// The same layer with PyTorch's `recompute_scale_factor=`.
    #[must_use]
    pub fn recompute_scale_factor(mut self, recompute_scale_factor: Option<bool>) -> Upsample {
        self.recompute_scale_factor = recompute_scale_factor;
        self
    }

    fn extra_repr(&self) -> String {
        let info = match (&self.scale_factor, &self.size) {
            (Some(s), _) => format!("scale_factor={}", s.py_repr(|v| py_float(*v))),
            (None, Some(s)) => format!("size={}", s.py_repr(usize::to_string)),
            (None, None) => "size=None".into(),
        };
        format!("{info}, mode='{}'", self.mode.name())
    }
}

impl Forward for Upsample {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        interpolate(
            input,
            self.size.clone(),
            self.scale_factor.clone(),
            self.mode,
            self.align_corners,
            self.recompute_scale_factor,
        )
    }
}
