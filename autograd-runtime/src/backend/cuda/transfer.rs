//! Host transfers: uploading a host buffer, downloading a device one, and filling new device
//! memory with a value.

use cudarc::driver::CudaSlice;

use super::buffer::{DTypeMap, DeviceBuffer, DeviceElement, SliceMap, map_dtype};
use super::device::{CudaDevice, device};
use super::kernels::{self, KernelLayout};
use super::launch::{Arg, dense, launch, too_many_dims, wrap};
use crate::backend::{Buffer, Out};
use crate::layout::{Layout, view};
use crate::{DType, Error, Result};

/// [`upload`] for one element type.
struct Upload<'a> {
    dev: &'static CudaDevice,
    x: &'a Buffer,
    lx: &'a Layout,
}

impl DTypeMap for Upload<'_> {
    type Output = Result<Out>;

    fn f<T: DeviceElement>(self) -> Result<Out> {
        let Upload { dev, x, lx } = self;
        let n = lx.numel();
        // The host values in C order (what `Tensor::to_vec` reads).
        let data = x.as_slice::<T>().ok_or(Error::WrongDType {
            expected: T::DTYPE,
            actual: x.dtype(),
        })?;
        let v: Vec<T> = if lx.is_contiguous() {
            data[lx.offset..lx.offset + n].to_vec()
        } else {
            view(data, lx).iter().copied().collect()
        };
        if v.is_empty() {
            return Ok(wrap(DeviceBuffer::zeros(dev, T::DTYPE, 0)?, &lx.shape));
        }
        Ok(wrap(DeviceBuffer::from_host(dev, &v)?, &lx.shape))
    }
}

/// A copy of host buffer `x` (read through `lx`) on `cuda:<ordinal>` (what
/// `to(Device::Cuda(i))` runs).
pub(crate) fn upload(x: &Buffer, lx: &Layout, ordinal: usize) -> Result<Out> {
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        return Err(super::refuse_dtype("to(cuda)", x.dtype()));
    }
    let dev = device(ordinal)?;
    dev.bind()?;
    map_dtype(x.dtype(), Upload { dev, x, lx })
}

/// A new contiguous buffer of `shape` on `cuda:<ordinal>` filled with `value`.
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, ordinal: usize) -> Result<Out> {
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(super::refuse_dtype("full(cuda)", dtype));
    }
    let dev = device(ordinal)?;
    let n: usize = shape.iter().product();
    if value == 0.0 && value.is_sign_positive() {
        return Ok(wrap(DeviceBuffer::zeros(dev, dtype, n)?, shape));
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
    launch(dev, "full", kernels::kernel!("fill").of(dtype), n, &args)?;
    Ok(wrap(out, shape))
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

/// A copy of device buffer `x` (read through `lx`) in host memory. Waits for the work queued on
/// the device's stream.
pub(super) fn download(dev: &CudaDevice, x: (&DeviceBuffer, &Layout)) -> Result<Out> {
    let shape = &x.1.shape;
    let x = dense(dev, x)?;
    dev.bind()?;
    let xb = x.buffer();
    let host = xb.data.map(Download { dev, n: xb.len })?;
    Ok((host, shape.clone()))
}
