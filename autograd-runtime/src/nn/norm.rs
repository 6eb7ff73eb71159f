//! Batch, group and RMS normalisation as functions (PyTorch's `F.batch_norm`, `F.group_norm`,
//! `F.rms_norm`), written in differentiable ops, so that they are differentiable twice; RMS
//! norm is one fused op where the backend has fused row kernels, as
//! [`layer_norm`](super::functional::layer_norm) is.

use autograd_macros::{backward, differentiable, jvp};

use super::layer_norm::{fusable, norm_backward, norm_jvp};
use crate::backend::NormSpec;
use crate::layout::wrap_dim;
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor, is_grad_enabled, no_grad};

/// PyTorch's `torch.Size([..])` as Python prints it in its `ValueError`s.
fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// The shape `[1, C, 1, ..]` that a per-channel vector takes to broadcast over `input`.
fn channel_view(v: &Tensor, ndim: usize) -> Result<Tensor> {
    let mut shape = vec![1; ndim];
    shape[1] = v.numel();
    v.reshape(&shape)
}

/// PyTorch's check that a per-channel tensor has `channels` elements (`native_batch_norm`'s
/// `check_dims_match_num_input_features`).
fn check_channels(name: &str, t: Option<&Tensor>, channels: usize) -> Result<()> {
    if let Some(t) = t
        && t.numel() != channels
    {
        return Err(Error::InvalidArgument(format!(
            "{name} should contain {channels} elements not {}",
            t.numel()
        )));
    }
    Ok(())
}

/// Batch normalisation as a function (PyTorch's
/// `F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
/// momentum=0.1, eps=1e-05)`), over the channels of dim 1 of an `[N, C]`, `[N, C, L]`,
/// `[N, C, H, W]` (or more) input.
///
/// With `training`, each channel is normalised by its batch mean and biased variance (over
/// every dim but 1), and the running statistics, when given, are updated in place without
/// recording: `running = (1 - momentum) · running + momentum · stat`, with the unbiased
/// variance, as PyTorch's kernel does. Without `training`, the running statistics normalise.
/// Then `weight` scales and `bias` shifts each channel. The gradient reaches `input`, `weight`
/// and `bias`; the running statistics take none (PyTorch refuses them if they require grad).
///
/// # Errors
///
/// PyTorch's messages, as [`Error::InvalidArgument`] (or [`Error::DimOutOfRange`] for an input
/// of fewer than 2 dims): `Expected more than 1 value per channel when training, got input size
/// torch.Size([1, 3])` when training on one value per channel; `running_mean must be defined in
/// evaluation mode`; `running_mean and running_var must either both be None or neither be None`;
/// `weight should contain 3 elements not 4` (also `bias`, `running_mean`, `running_var`); `The
/// function 'native_batch_norm' is not differentiable with respect to argument 'running_mean'.
/// This input cannot have requires_grad True.`
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::batch_norm;
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 10.0, 3.0, 30.0], &[2, 2])?;
/// let (rm, rv) = (Tensor::zeros(&[2], DType::F64)?, Tensor::ones(&[2], DType::F64)?);
/// let y = batch_norm(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 0.0)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![-1.0, -1.0, 1.0, 1.0]);
/// // The running mean moved a tenth of the way to the batch mean, the variance to the
/// // unbiased batch variance.
/// let m = rm.to_vec::<f64>()?;
/// assert!((m[0] - 0.2).abs() < 1e-15 && (m[1] - 2.0).abs() < 1e-15);
/// assert!((rv.to_vec::<f64>()?[1] - (0.9 + 0.1 * 200.0)).abs() < 1e-12);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[allow(clippy::too_many_arguments)] // PyTorch's signature
pub fn batch_norm(
    input: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    let shape = input.shape().to_vec();
    let ndim = shape.len();
    if training {
        // PyTorch's `_verify_batch_size`, which reads `size(1)` first.
        wrap_dim(1, ndim)?;
        let per_channel = shape[0] * shape[2..].iter().product::<usize>();
        if per_channel == 1 {
            return Err(Error::InvalidArgument(format!(
                "Expected more than 1 value per channel when training, got input size {}",
                torch_size(&shape)
            )));
        }
    }
    if running_mean.is_some() != running_var.is_some() {
        if training {
            return Err(Error::InvalidArgument(
                "running_mean and running_var must either both be None or neither be None".into(),
            ));
        }
        let missing = if running_mean.is_none() {
            "running_mean"
        } else {
            "running_var"
        };
        return Err(Error::InvalidArgument(format!(
            "{missing} must be defined in evaluation mode"
        )));
    }
    wrap_dim(1, ndim)?;
    let channels = shape[1];
    // PyTorch's order (`_batch_norm_impl_index`): the running statistics first.
    check_channels("running_mean", running_mean, channels)?;
    check_channels("running_var", running_var, channels)?;
    check_channels("weight", weight, channels)?;
    check_channels("bias", bias, channels)?;
    if is_grad_enabled() {
        for (name, t) in [("running_mean", running_mean), ("running_var", running_var)] {
            if t.is_some_and(Tensor::requires_grad) {
                return Err(Error::InvalidArgument(format!(
                    "The function 'native_batch_norm' is not differentiable with respect to \
                     argument '{name}'. This input cannot have requires_grad True."
                )));
            }
        }
    }
    let mut y = if training {
        let dims: Vec<usize> = std::iter::once(0).chain(2..ndim).collect();
        let n = (shape[0] * shape[2..].iter().product::<usize>()) as f64;
        let mean = input.sum_dims(&dims, true)?.div_scalar(n)?;
        let centred = input.sub(&mean)?;
        let var = centred
            .mul(&centred)?
            .sum_dims(&dims, true)?
            .div_scalar(n)?;
        if let (Some(rm), Some(rv)) = (running_mean, running_var) {
            let _g = no_grad();
            let mean = mean.reshape(&[channels])?.to_dtype(rm.dtype())?;
            let unbiased = var
                .reshape(&[channels])?
                .mul_scalar(n / (n - 1.0))?
                .to_dtype(rv.dtype())?;
            rm.copy_(
                &rm.mul_scalar(1.0 - momentum)?
                    .add(&mean.mul_scalar(momentum)?)?,
            )?;
            rv.copy_(
                &rv.mul_scalar(1.0 - momentum)?
                    .add(&unbiased.mul_scalar(momentum)?)?,
            )?;
        }
        centred.mul(&var.add_scalar(eps)?.sqrt()?.reciprocal()?)?
    } else {
        let (Some(rm), Some(rv)) = (running_mean, running_var) else {
            return Err(Error::InvalidArgument(
                "running_mean must be defined in evaluation mode".into(),
            ));
        };
        let invstd = channel_view(rv, ndim)?
            .add_scalar(eps)?
            .sqrt()?
            .reciprocal()?;
        input.sub(&channel_view(rm, ndim)?)?.mul(&invstd)?
    };
    if let Some(w) = weight {
        y = y.mul(&channel_view(w, ndim)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&channel_view(b, ndim)?)?;
    }
    Ok(y)
}

/// Group normalisation as a function (PyTorch's
/// `F.group_norm(input, num_groups, weight=None, bias=None, eps=1e-05)`): the channels (dim 1)
/// of each sample are split into `num_groups` groups, each normalised by its mean and biased
/// variance over its channels and every spatial position; then `weight` and `bias` (each `[C]`)
/// scale and shift each channel.
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: `Expected at least 2 dimensions for input
/// tensor but received 1`; `Expected more than 1 value per channel when training, got input
/// size [1, 2, 1]` (PyTorch's check of one value per group); `Expected number of channels in
/// input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups=4`;
/// `Expected weight to be a vector of size equal to the number of channels in input, but got
/// weight of shape [5] and input of shape [2, 6, 4]` (also `bias`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::group_norm;
/// use autograd_runtime::Tensor;
/// // One sample, 2 channels in one group of 4 values: 1, 3 | 5, 7.
/// let x = Tensor::from_vec(vec![1.0f64, 3.0, 5.0, 7.0], &[1, 2, 2])?;
/// let y = group_norm(&x, 1, None, None, 0.0)?.to_vec::<f64>()?;
/// let s = 5f64.sqrt(); // the group's standard deviation
/// let want = [-3.0 / s, -1.0 / s, 1.0 / s, 3.0 / s];
/// assert!(y.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn group_norm(
    input: &Tensor,
    num_groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(group_norm(input, num_groups, weight, bias, eps));
    let shape = input.shape().to_vec();
    let ndim = shape.len();
    if ndim < 2 {
        return Err(Error::InvalidArgument(format!(
            "Expected at least 2 dimensions for input tensor but received {ndim}"
        )));
    }
    let (n, c) = (shape[0], shape[1]);
    let not_divisible = || {
        Error::InvalidArgument(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input \
             of shape {shape:?} and num_groups={num_groups}"
        ))
    };
    if num_groups == 0 {
        return Err(not_divisible());
    }
    // PyTorch's `_verify_batch_size([N * C // G, G] + spatial)`.
    let spatial: usize = shape[2..].iter().product();
    if n * c / num_groups * spatial == 1 {
        let mut size = vec![n * c / num_groups, num_groups];
        size.extend_from_slice(&shape[2..]);
        return Err(Error::InvalidArgument(format!(
            "Expected more than 1 value per channel when training, got input size {size:?}"
        )));
    }
    if c % num_groups != 0 {
        return Err(not_divisible());
    }
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p
            && (p.ndim() != 1 || p.numel() != c)
        {
            return Err(Error::InvalidArgument(format!(
                "Expected {name} to be a vector of size equal to the number of channels in \
                 input, but got {name} of shape {:?} and input of shape {shape:?}",
                p.shape()
            )));
        }
    }
    let group_size = c / num_groups * spatial;
    let grouped = input.reshape(&[n, num_groups, group_size])?;
    let mean = grouped
        .sum_dims(&[2], true)?
        .div_scalar(group_size as f64)?;
    let centred = grouped.sub(&mean)?;
    let var = centred
        .mul(&centred)?
        .sum_dims(&[2], true)?
        .div_scalar(group_size as f64)?;
    let mut y = centred
        .mul(&var.add_scalar(eps)?.sqrt()?.reciprocal()?)?
        .reshape(&shape)?;
    if let Some(w) = weight {
        y = y.mul(&channel_view(w, ndim)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&channel_view(b, ndim)?)?;
    }
    Ok(y)
}

/// The machine epsilon PyTorch's `rms_norm` takes when `eps` is `None`: that of the dtype it
/// computes in (`f32` for the half types, as its `opmath_t`).
fn default_rms_eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        _ => f64::from(f32::EPSILON),
    }
}

/// Root-mean-square normalisation as a function (PyTorch's
/// `F.rms_norm(input, normalized_shape, weight=None, eps=None)`): `input` divided by the root of
/// the mean of its squares over the trailing dims `normalized_shape` (plus `eps`), then
/// multiplied by `weight` (`normalized_shape`) when given. `eps = None` is the machine epsilon
/// of the dtype PyTorch computes in (`f64::EPSILON` for f64; `f32::EPSILON` for f32, f16 and
/// bf16, which are computed in f32 and rounded once).
///
/// # Errors
///
/// PyTorch's messages as [`Error::InvalidArgument`]: `Expected normalized_shape to be at least
/// 1-dimensional, i.e., containing at least one element, but got normalized_shape = []`; `Given
/// normalized_shape=[4], expected input with shape [*4], but got input of size[2, 3]`;
/// `Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and
/// normalized_shape = [3]`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::nn::functional::rms_norm;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![3.0f64, -4.0], &[1, 2])?;
/// let y = rms_norm(&x, &[2], None, Some(0.0))?.to_vec::<f64>()?;
/// let r = 12.5f64.sqrt(); // √((9 + 16) / 2)
/// assert!((y[0] - 3.0 / r).abs() < 1e-15 && (y[1] + 4.0 / r).abs() < 1e-15);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    crate::amp::autocast_entry!(rms_norm(input, normalized_shape, weight, eps));
    let k = normalized_shape.len();
    if k == 0 {
        return Err(Error::InvalidArgument(format!(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least \
             one element, but got normalized_shape = {normalized_shape:?}"
        )));
    }
    let shape = input.shape();
    if shape.len() < k || shape[shape.len() - k..] != *normalized_shape {
        let dims: Vec<String> = normalized_shape.iter().map(usize::to_string).collect();
        return Err(Error::InvalidArgument(format!(
            "Given normalized_shape={normalized_shape:?}, expected input with shape [*{}], but \
             got input of size{shape:?}",
            dims.join(", "),
        )));
    }
    if let Some(w) = weight
        && w.shape() != normalized_shape
    {
        return Err(Error::InvalidArgument(format!(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape \
             {:?} and normalized_shape = {normalized_shape:?}",
            w.shape()
        )));
    }
    let dtype = input.dtype();
    let eps = eps.unwrap_or_else(|| default_rms_eps(dtype));
    if fusable(input, &[weight])? {
        let spec = NormSpec {
            n: normalized_shape.iter().product(),
            eps,
            centre: false,
        };
        return fused_rms_norm(input, weight, normalized_shape, spec);
    }
    let x = if dtype.is_half() {
        input.to_dtype(DType::F32)?
    } else {
        input.clone()
    };
    let dims: Vec<usize> = (shape.len() - k..shape.len()).collect();
    let n = normalized_shape.iter().product::<usize>() as f64;
    let mean_sq = x.mul(&x)?.sum_dims(&dims, true)?.div_scalar(n)?;
    let mut y = x.mul(&mean_sq.add_scalar(eps)?.rsqrt()?)?;
    if let Some(w) = weight {
        // In the computing dtype, before the one rounding, as PyTorch's composite does.
        y = y.mul(&w.to_dtype(y.dtype())?)?;
    }
    y.to_dtype(dtype)
}

/// RMS norm in one kernel each way (PyTorch's `_fused_rms_norm`): f16 and bf16 computed in f32,
/// the weight included, and rounded once, as PyTorch's composite computes them. The backward
/// recomputes each row's `rstd` from `input`.
#[differentiable(builtin, crate = "crate", name = "FusedRmsNormBackward0")]
fn fused_rms_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    normalized_shape: &[usize],
    spec: NormSpec,
) -> Result<Tensor> {
    let _ = normalized_shape; // the backward's: the shape of the weight's gradient
    kernels::of_tensor(input)?.norm(input, weight, None, spec)
}

#[backward(fused_rms_norm)]
fn fused_rms_norm_backward(
    grad: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    normalized_shape: &[usize],
    spec: NormSpec,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let needs = [needs_input_grad[0], needs_input_grad[1], false];
    let [dx, dw, _] = norm_backward(grad, input, weight, normalized_shape, spec, needs)?;
    Ok((dx, dw))
}

#[jvp(fused_rms_norm)]
fn fused_rms_norm_jvp(
    input_t: Option<&Tensor>,
    weight_t: Option<&Tensor>,
    input: &Tensor,
    weight: Option<&Tensor>,
    spec: NormSpec,
    result: &Tensor,
) -> Result<Tensor> {
    norm_jvp([input_t, weight_t, None], input, weight, spec, result)
}
