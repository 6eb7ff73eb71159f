//! The backend seam: ops say *what* to compute, a [`Backend`] chosen by the tensor's device says
//! *how*. `cpu` runs on host memory (also for `Device::Virtual`); `cuda` runs on CUDA device
//! memory (the `cuda` feature).
//!
//! See `README.md` beside this file for the contract every backend keeps.

mod buffer;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod op;

use std::fmt;

pub use buffer::{Buffer, ElemVec};
pub(crate) use cpu::{broadcast_shapes, BroadcastError};
pub(crate) use op::{BinaryOp, FusedOp, UnaryOp};

use crate::{DType, Device, Result, Tensor};

/// The kernels of one kind of device. Every method takes tensors that live on this backend's
/// device (the dispatch functions below check that) and returns new tensors on the same device,
/// contiguous, with no autograd history: recording is the op layer's business, not the kernel's.
///
/// Shapes, dims and indices are validated by the op layer before a kernel runs; a backend may
/// still fail (allocation, a device error), which is why every kernel returns a [`Result`].
pub(crate) trait Backend: Send + Sync + fmt::Debug {
    // ----- element-wise ---------------------------------------------------------------------
    /// `op(x)` element-wise.
    fn unary(&self, op: UnaryOp, x: &Tensor) -> Result<Tensor>;
    /// `x^exponent` element-wise (PyTorch's `pow(Tensor, Scalar)`).
    fn pow_scalar(&self, x: &Tensor, exponent: f64) -> Result<Tensor>;
    /// `a (op) b` with PyTorch broadcasting. Same dtype and device (checked by the caller).
    fn binary(&self, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor>;
    /// `x (op) s`, or `s (op) x` when `scalar_on_left`.
    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Tensor,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor>;
    /// A backward formula of two same-shaped operands in one pass (`grad * (1 - y²)`, ...).
    fn fused(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<Tensor>;
    /// A closed-form fused formula ([`FusedOp::is_closed_form`]) written over `a`'s own
    /// buffer. The caller proves that nothing else references `a` (one handle, one storage,
    /// contiguous, same shape as `b`), so no one can observe the write: this is how a backward
    /// formula reuses the gradient the engine hands it instead of allocating.
    fn fused_inplace(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<()>;
    /// `dst (op)= src` in place, `src` broadcast to `dst`'s shape. Neither records nor bumps
    /// the version: the op layer does both. `src` may share `dst`'s storage.
    fn binary_inplace(&self, op: BinaryOp, dst: &Tensor, src: &Tensor) -> Result<()>;
    /// Sets every element of `dst` (through its layout) to `value`.
    fn fill(&self, dst: &Tensor, value: f64) -> Result<()>;
    /// Writes `src`'s values into `dst`'s elements (same shape and dtype).
    fn copy_into(&self, dst: &Tensor, src: &Tensor) -> Result<()>;

    // ----- copies and conversions -------------------------------------------------------------
    /// A contiguous copy (what `contiguous()`, `copy()` and materialised expands run).
    fn contiguous(&self, x: &Tensor) -> Result<Tensor>;
    /// The values converted to `dtype`.
    fn to_dtype(&self, x: &Tensor, dtype: DType) -> Result<Tensor>;
    /// A copy on `device`, which this backend can reach (host memory for the CPU backend).
    fn to_device(&self, x: &Tensor, device: Device) -> Result<Tensor>;
    /// `tensors` (same dtype, equal shapes except along `dim`) concatenated along `dim`.
    fn cat(&self, tensors: &[Tensor], dim: usize) -> Result<Tensor>;

    // ----- reductions -------------------------------------------------------------------------
    /// The sum of all elements as a 0-dim tensor. Deterministic: the same bits for the same
    /// input, whatever the number of threads.
    fn sum_all(&self, x: &Tensor) -> Result<Tensor>;
    /// Sums over `axes` (distinct, in range), dropping them unless `keepdim`. Deterministic.
    fn sum_dims(&self, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor>;
    /// Reduces a broadcast `x` back to `shape` (PyTorch's `sum_to`). Deterministic.
    fn sum_to(&self, x: &Tensor, shape: &[usize]) -> Result<Tensor>;
    /// Softmax (`log == false`) or log-softmax over `dim`, numerically stable.
    fn softmax(&self, x: &Tensor, dim: usize, log: bool) -> Result<Tensor>;
    /// The positions of the first maximum along `dim` (NaN is the maximum), flattened in the
    /// C order of the keepdim-shaped result.
    fn argmax(&self, x: &Tensor, dim: usize) -> Result<Vec<usize>>;
    /// The maxima along `dim` (keepdim-shaped) and their positions as [`Backend::argmax`]
    /// gives them. By default `argmax` then `gather`; a backend whose kernel yields both at
    /// once overrides it.
    fn max_dim(&self, x: &Tensor, dim: usize) -> Result<(Tensor, Vec<usize>)> {
        let index = self.argmax(x, dim)?;
        let values = self.gather(x, dim, &index)?;
        Ok((values, index))
    }
    /// Whether any element is NaN (anomaly mode).
    fn has_nan(&self, x: &Tensor) -> Result<bool>;

    // ----- indexing ---------------------------------------------------------------------------
    /// The slices of `x` at `index` along `dim`, in that order.
    fn index_select(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor>;
    /// Zeros of `shape` with `g`'s slices added at `index` along `dim`.
    fn index_add(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize])
        -> Result<Tensor>;
    /// `x` at one position per lane of `dim`: `out[.., 0, ..] = x[.., index[..], ..]` where
    /// `index` holds one entry per element of the keepdim-shaped result.
    fn gather(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor>;
    /// Zeros of `shape` with the keepdim-shaped `g` written at `index` along `dim` (the
    /// adjoint of [`Backend::gather`]).
    fn scatter(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor>;
    /// Zeros of `shape` with `g` written at `start..` along `dim` (the gradient of `narrow`).
    fn narrow_scatter(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor>;

    // ----- linear algebra ---------------------------------------------------------------------
    /// PyTorch's `matmul` (shapes checked by the caller except the batch broadcast).
    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor>;
}

/// Device indices are below this (PyTorch's `c10::Device` index is 8-bit; its engine starts a
/// worker per index).
pub(crate) const MAX_DEVICES: usize = 64;

/// The backend of `device`.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`] for a device this build has no kernels for.
#[inline]
pub(crate) fn of(device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu => Ok(&cpu::Cpu),
        Device::Virtual(i) if i < MAX_DEVICES => Ok(&cpu::Cpu),
        Device::Virtual(_) => Err(crate::Error::DeviceUnavailable {
            device,
            reason: format!("device indices go up to {}", MAX_DEVICES - 1),
        }),
        #[cfg(feature = "cuda")]
        Device::Cuda(i) => {
            cuda::device(i)?;
            Ok(&cuda::Cuda)
        }
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => Err(no_cuda(device)),
    }
}

/// The error for a CUDA device in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub(crate) fn no_cuda(device: Device) -> crate::Error {
    crate::Error::DeviceUnavailable {
        device,
        reason: "this build has no CUDA support (the `cuda` feature is off)".into(),
    }
}

/// A copy of `x` in host memory (`x` itself when it is there already): how the element readers
/// (`to_vec`, `item`, ...) read a device tensor.
pub(crate) fn host(x: &Tensor) -> Result<std::borrow::Cow<'_, Tensor>> {
    if x.device().is_host() {
        return Ok(std::borrow::Cow::Borrowed(x));
    }
    #[cfg(feature = "cuda")]
    return cuda::to_host(x).map(std::borrow::Cow::Owned);
    #[cfg(not(feature = "cuda"))]
    Err(no_cuda(x.device()))
}

/// A new contiguous tensor of `shape` filled with `value` on device memory (`device` is not a
/// host device).
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(i) => cuda::full(shape, value, dtype, i),
        _ => {
            let _ = (shape, value, dtype);
            Err(crate::Error::DeviceUnavailable {
                device,
                reason: "no device memory backend for it in this build".into(),
            })
        }
    }
}

/// A copy of host tensor `x` on CUDA device `ordinal`.
pub(crate) fn upload_cuda(x: &Tensor, ordinal: usize) -> Result<Tensor> {
    #[cfg(feature = "cuda")]
    return cuda::upload(x, ordinal);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = x;
        Err(no_cuda(Device::Cuda(ordinal)))
    }
}

/// Called by an engine device thread as it starts: binds CUDA device `index`'s context to the
/// thread if that device is in use (PyTorch's worker sets its device once).
pub(crate) fn on_device_thread_start(index: usize) {
    #[cfg(feature = "cuda")]
    cuda::bind_worker(index);
    #[cfg(not(feature = "cuda"))]
    let _ = index;
}

/// The backend of `t`'s device.
#[inline]
pub(crate) fn of_tensor(t: &Tensor) -> Result<&'static dyn Backend> {
    of(t.device())
}

/// The backend of two operands of `op`, which must agree on dtype and device.
///
/// # Errors
///
/// [`Error::DTypeMismatch`], [`Error::DeviceMismatch`], or the device's own error.
#[inline]
pub(crate) fn of_pair(op: &'static str, a: &Tensor, b: &Tensor) -> Result<&'static dyn Backend> {
    a.check_same_dtype_device(op, b)?;
    of(a.device())
}
