//! Host transfers: uploading a host tensor, downloading a device one, and filling new device
//! memory with a value.

use cudarc::driver::CudaSlice;

use super::buffer::{map_dtype, DTypeMap, DeviceBuffer, DeviceElement, SliceMap};
use super::device::{device, CudaDevice};
use super::kernels::{self, KernelLayout};
use super::launch::{dense, dev_of, device_buffer, launch, too_many_dims, wrap, Arg};
use crate::backend::Buffer;
use crate::{DType, Device, Result, Tensor};

/// [`upload`] for one element type.
struct Upload<'a> {
    dev: &'static CudaDevice,
    x: &'a Tensor,
}

impl DTypeMap for Upload<'_> {
    type Output = Result<Tensor>;

    fn f<T: DeviceElement>(self) -> Result<Tensor> {
        let Upload { dev, x } = self;
        let n = x.numel();
        let v = x.to_vec::<T>()?;
        if v.is_empty() {
            return Ok(wrap(dev, DeviceBuffer::zeros(dev, T::DTYPE, 0)?, x.shape()));
        }
        let data = T::into_data(dev.stream.clone_htod(&v).map_err(|e| dev.error("to", e))?);
        Ok(wrap(dev, DeviceBuffer { data, len: n }, x.shape()))
    }
}

/// A copy of host tensor `x` on `cuda:<ordinal>` (what `to(Device::Cuda(i))` runs).
pub(crate) fn upload(x: &Tensor, ordinal: usize) -> Result<Tensor> {
    let dev = device(ordinal)?;
    dev.bind()?;
    map_dtype(x.dtype(), Upload { dev, x })
}

/// A new contiguous tensor of `shape` on `cuda:<ordinal>` filled with `value`.
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, ordinal: usize) -> Result<Tensor> {
    let dev = device(ordinal)?;
    let n: usize = shape.iter().product();
    if value == 0.0 && value.is_sign_positive() {
        return Ok(wrap(dev, DeviceBuffer::zeros(dev, dtype, n)?, shape));
    }
    let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
    let ld =
        KernelLayout::contiguous(shape).ok_or_else(|| too_many_dims(dev, "full", shape.len()))?;
    let args = [
        Arg::Layout(ld),
        Arg::U64(out.ptr_mut(&dev.stream)),
        Arg::scalar(dtype, value),
        Arg::U64(n as u64),
    ];
    launch(dev, "full", &kernels::name("fill", dtype), n, &args)?;
    Ok(wrap(dev, out, shape))
}

/// [`download`]'s copy of `n` elements of one device slice.
struct Download<'a> {
    dev: &'a CudaDevice,
    n: usize,
}

impl SliceMap for Download<'_> {
    type Output = Result<Buffer>;

    fn f<T: DeviceElement>(self, s: &CudaSlice<T>) -> Result<Buffer> {
        let Download { dev, n } = self;
        Ok(Buffer::host(
            dev.stream
                .clone_dtoh(&s.slice(..n.max(1)))
                .map_err(|e| dev.error("to", e))?
                .into_iter()
                .take(n)
                .collect(),
        ))
    }
}

/// A copy of CUDA tensor `x` in host memory, tagged `device` (`Cpu` or `Virtual(i)`). Waits
/// for the work queued on `x`'s stream.
pub(super) fn download(x: &Tensor, device: Device) -> Result<Tensor> {
    let dev = dev_of(x)?;
    let x = dense(x)?;
    dev.bind()?;
    let guard = x.0.storage.data.read();
    let xb = device_buffer(dev, "to", &guard)?;
    let host = xb.data.map(Download { dev, n: xb.len })?;
    Ok(Tensor::from_buffer(host, x.shape(), device))
}

/// A copy of `x` (any device) in host memory on `Device::Cpu`: how the element readers
/// (`to_vec`, `item`, ...) see a CUDA tensor.
pub(crate) fn to_host(x: &Tensor) -> Result<Tensor> {
    download(x, Device::Cpu)
}
