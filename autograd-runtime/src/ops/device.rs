//! Moving tensors between devices: `to(device)` copies the data (host memory for `Cpu` and
//! `Virtual(i)`) and records a node that moves the gradient back.

use smallvec::smallvec;

use crate::graph::{collect_next_edges, record, Backward, GradVec, NodeMeta};
use crate::tensor::data::with_view;
use crate::{Device, Error, Result, Tensor};

struct ToDeviceBackward {
    source: Device,
}

impl Backward for ToDeviceBackward {
    const NAME: &'static str = "ToCopyBackward0";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        let g = grads[0].as_ref().expect("invariant: materialised");
        Ok(smallvec![Some(g.to(self.source)?)])
    }
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
        if let Device::Cuda(_) = device {
            return Err(Error::DeviceUnavailable {
                device,
                reason: "this build has no CUDA support".to_string(),
            });
        }
        let out = with_view!(self, |a| Tensor::from_ndarray_on(
            a.as_standard_layout().into_owned(),
            device
        ));
        if let Some(edges) = collect_next_edges(&[self]) {
            let source = self.device();
            record(edges, &[&out], |_| ToDeviceBackward { source });
        }
        Ok(out)
    }
}
