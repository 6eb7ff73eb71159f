//! Whether this machine can run CUDA tensors (PyTorch's `torch.cuda.is_available()` and
//! `torch.cuda.device_count()`).
//!
//! The driver, NVRTC and cuBLAS are loaded when first needed, so a program built with CUDA support
//! runs unchanged on a machine without a GPU: these answer `false` / `0`, and moving a tensor to
//! [`Device::Cuda`](crate::Device::Cuda) returns [`Error::DeviceUnavailable`](crate::Error)
//! saying why. Nothing here panics.
//!
//! ```
//! use autograd_runtime::{cuda, Device, Error, Tensor};
//!
//! let device = if cuda::is_available() { Device::Cuda(0) } else { Device::Cpu };
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.to(device)?;
//! assert_eq!(x.mul_scalar(2.0)?.to_vec::<f32>()?, [2.0, 4.0]);
//!
//! // A device this machine does not have is an error naming it, never a panic.
//! let missing = Device::Cuda(cuda::device_count());
//! let err = Tensor::scalar(1.0f32).to(missing).unwrap_err();
//! assert!(matches!(err, Error::DeviceUnavailable { device, .. } if device == missing));
//! assert!(err.to_string().starts_with(&format!("device {missing} is not available: ")));
//! # Ok::<(), Error>(())
//! ```

/// Whether at least one CUDA device can be used: the driver loads and reports a device. (NVRTC
/// and cuBLAS are checked when a device is first used; [`unavailable_reason`] says what failed.)
///
/// # Examples
///
/// ```
/// if !autograd_runtime::cuda::is_available() {
///     println!("no GPU: {}", autograd_runtime::cuda::unavailable_reason(0).unwrap());
/// }
/// ```
pub fn is_available() -> bool {
    device_count() > 0
}

/// The number of CUDA devices the driver reports (0 without a driver).
///
/// # Examples
///
/// ```
/// let n = autograd_runtime::cuda::device_count();
/// assert_eq!(n > 0, autograd_runtime::cuda::is_available());
/// ```
pub fn device_count() -> usize {
    #[cfg(feature = "cuda")]
    return crate::backend::cuda::driver().unwrap_or(0);
    #[cfg(not(feature = "cuda"))]
    0
}

/// Why `cuda:<ordinal>` cannot be used (no driver, no such device, a library missing, a set-up
/// failure), or `None` when it can. Sets the device up if it was not yet.
///
/// # Examples
///
/// ```
/// use autograd_runtime::cuda;
/// let beyond = cuda::device_count();
/// assert!(cuda::unavailable_reason(beyond).is_some());
/// ```
pub fn unavailable_reason(ordinal: usize) -> Option<String> {
    match crate::backend::of(crate::Device::Cuda(ordinal)) {
        Ok(_) => None,
        Err(crate::Error::DeviceUnavailable { reason, .. }) => Some(reason),
        Err(other) => Some(other.to_string()),
    }
}

/// Waits until all work issued so far on `cuda:<ordinal>` has finished (PyTorch's
/// `torch.cuda.synchronize`): for timing. Reading a tensor's values waits by itself.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if the device cannot be used,
/// [`Error::Device`](crate::Error::Device) if the device reports a failure.
///
/// # Examples
///
/// ```
/// use autograd_runtime::cuda;
/// if cuda::is_available() {
///     cuda::synchronize(0)?;
/// } else {
///     assert!(cuda::synchronize(0).is_err());
/// }
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn synchronize(ordinal: usize) -> crate::Result<()> {
    #[cfg(feature = "cuda")]
    {
        let dev = crate::backend::cuda::device(ordinal)?;
        dev.bind()?;
        dev.stream
            .synchronize()
            .map_err(|e| dev.error("synchronize", e))
    }
    #[cfg(not(feature = "cuda"))]
    Err(crate::backend::no_cuda(crate::Device::Cuda(ordinal)))
}

/// Bytes of device memory held by the live tensors of `cuda:<ordinal>` (PyTorch's
/// `torch.cuda.memory_allocated`): every storage counts once, however many tensors view it, from
/// its allocation until its last view drops, at the rounded size of its block (see
/// [`memory_reserved`]). Blocks freed and kept for reuse are not counted. `0` for a device that
/// has not been used yet.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if the device cannot be used.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{cuda, Device, Tensor};
/// if cuda::is_available() {
///     let before = cuda::memory_allocated(0)?;
///     let x = Tensor::zeros(&[1024], autograd_runtime::DType::F32)?.to(Device::Cuda(0))?;
///     assert_eq!(cuda::memory_allocated(0)?, before + 4096);
///     drop(x);
///     assert_eq!(cuda::memory_allocated(0)?, before);
/// } else {
///     assert!(cuda::memory_allocated(0).is_err());
/// }
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn memory_allocated(ordinal: usize) -> crate::Result<usize> {
    #[cfg(feature = "cuda")]
    {
        let dev = crate::backend::cuda::device(ordinal)?;
        Ok(dev.allocated.load(crate::sync::Ordering::Relaxed))
    }
    #[cfg(not(feature = "cuda"))]
    Err(crate::backend::no_cuda(crate::Device::Cuda(ordinal)))
}

/// Bytes of device memory of `cuda:<ordinal>` held by live tensors plus the freed blocks kept for
/// reuse (PyTorch's `torch.cuda.memory_reserved`).
///
/// Like PyTorch, the CUDA backend caches device memory: a storage that dies hands its block
/// to the device's cache, and the next tensor of the same dtype and rounded size (512 bytes up to
/// 1 MiB, an eighth of the next power of two above) takes it without asking the driver. All work
/// of a device runs on one stream in issue order, so a block is reused at once, safely. The cache
/// is given back to the driver by [`empty_cache`], and when an allocation finds the device out of
/// memory.
///
/// # Errors
///
/// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if the device cannot be used.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{cuda, DType, Device, Tensor};
/// if cuda::is_available() {
///     let x = Tensor::zeros(&[1 << 20], DType::F32)?.to(Device::Cuda(0))?;
///     drop(x); // its 4 MiB block stays reserved for the next tensor of that size
///     assert!(cuda::memory_reserved(0)? >= cuda::memory_allocated(0)? + (4 << 20));
///     cuda::empty_cache();
///     assert_eq!(cuda::memory_reserved(0)?, cuda::memory_allocated(0)?);
/// }
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn memory_reserved(ordinal: usize) -> crate::Result<usize> {
    #[cfg(feature = "cuda")]
    {
        let dev = crate::backend::cuda::device(ordinal)?;
        Ok(dev.allocated.load(crate::sync::Ordering::Relaxed) + dev.cache.bytes())
    }
    #[cfg(not(feature = "cuda"))]
    Err(crate::backend::no_cuda(crate::Device::Cuda(ordinal)))
}

/// Gives the device memory kept for reuse on every CUDA device back to the driver (PyTorch's
/// `torch.cuda.empty_cache`); live tensors are not affected. Does nothing without a GPU.
///
/// # Examples
///
/// ```
/// autograd_runtime::cuda::empty_cache();
/// ```
pub fn empty_cache() {
    #[cfg(feature = "cuda")]
    crate::backend::cuda::empty_caches();
}
