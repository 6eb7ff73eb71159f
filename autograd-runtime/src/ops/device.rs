//! Moving tensors between devices: `to(device)` copies the data (host memory for `Cpu` and
//! `Virtual(i)`) and records a node that moves the gradient back.

use autograd_macros::{backward, differentiable, jvp};

#[cfg(doc)]
use crate::Error;
use crate::backend;
use crate::graph::InputMetadata;
use crate::tensor::kernels;
use crate::{Device, Result, Tensor};

/// A copy on another device, PyTorch's `ToCopyBackward0`: the gradient moves back.
#[differentiable(builtin, crate = "crate", name = "ToCopyBackward0")]
fn to_device(x: &Tensor, device: Device) -> Result<Tensor> {
    kernels::of_tensor(x)?.to_device(x, device)
}

#[backward(to_device)]
fn to_device_backward(grad: &Tensor, x: &InputMetadata) -> Result<Tensor> {
    grad.to(x.device())
}

/// A copy on the device, as the result (a tangent may be there already).
#[jvp(to_device)]
fn to_device_jvp(x_t: &Tensor, device: Device) -> Result<Tensor> {
    if x_t.device() == device {
        return x_t.copy();
    }
    to_device(x_t, device)
}

impl Tensor {
    /// A copy of this tensor on `device` (`self` if it is already there). Differentiable: the
    /// gradient is moved back to this tensor's device. Nodes of a `Virtual(i)` or `Cuda(i)`
    /// tensor run on that device's engine thread.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`] for `Cuda(_)` in a build without CUDA support.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Device, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
    /// let v = x.to(Device::Virtual(0))?;
    /// assert_eq!(v.device(), Device::Virtual(0));
    /// let err = v.add(&x).unwrap_err();
    /// assert_eq!(err.to_string(), "expected all tensors to be on the same device, but found at least two devices, virtual:0 and cpu!");
    /// v.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().device(), Device::Cpu);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        // The target must have kernels too: its backend runs the gradient's way back.
        backend::of(device)?;
        to_device(self, device)
    }
}
