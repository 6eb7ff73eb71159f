//! The CUDA backend: [`Cuda`], the [`Backend`] over device memory, through cudarc.
//!
//! * `device.rs`: probing the driver without panicking; per-device context, stream, cuBLAS
//!   handle and kernels, set up on first use.
//! * `kernels.cu` / `kernels.rs`: every element-wise, reduction and indexing kernel, compiled once
//!   by NVRTC. Kernels read tensors through their layouts, so views and broadcasts need no copy.
//! * matmul runs on cuBLAS (`gemm_strided_batched`), with transposed operands passed as
//!   transpose flags and broadcast batches as batch stride 0.
//!
//! Every op of a device is issued on that device's one stream: work on one device runs in issue
//! order whichever thread issues it, and a copy to the host waits for it. That is PyTorch's
//! default-stream behaviour, which is also what its engine's leaf-stream synchronisation reduces
//! to with one stream per device: when `backward()` returns, reading any gradient (which copies
//! it to the host) sees the finished value.

mod device;
mod kernels;
#[cfg(test)]
mod tests;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};

use device::CudaDevice;
pub(crate) use device::{bind_worker, device, driver};
use kernels::{KernelLayout, BLOCK};

use super::{broadcast_shapes, Backend, BinaryOp, FusedOp, UnaryOp};
use crate::tensor::layout::Layout;
use crate::tensor::storage::Buffer;
use crate::{DType, Device, Error, Result, Tensor};

/// The CUDA kernels. Stateless: each call finds its device's state from its tensors' device.
#[derive(Debug)]
pub(crate) struct Cuda;

/// The elements of one storage in device memory.
#[derive(Debug)]
pub struct DeviceBuffer {
    data: DeviceData,
    /// The number of elements (the allocation has at least one, as CUDA allocates no zero-size
    /// buffers).
    len: usize,
}

#[derive(Debug)]
enum DeviceData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

impl DeviceBuffer {
    pub(crate) fn dtype(&self) -> DType {
        match self.data {
            DeviceData::F32(_) => DType::F32,
            DeviceData::F64(_) => DType::F64,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Uninitialised memory for `n` elements: the caller writes all of them before anyone reads.
    fn alloc(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let cap = n.max(1);
        // SAFETY: the memory is uninitialised; every caller launches a kernel (or cuBLAS call)
        // on this device's stream that writes all `n` elements before the buffer is read, and
        // reads are issued on the same stream, so they are ordered after that write.
        let data = unsafe {
            match dtype {
                DType::F32 => dev.stream.alloc::<f32>(cap).map(DeviceData::F32),
                DType::F64 => dev.stream.alloc::<f64>(cap).map(DeviceData::F64),
            }
        }
        .map_err(|e| dev.error("allocate", e))?;
        Ok(DeviceBuffer { data, len: n })
    }

    fn zeros(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let cap = n.max(1);
        let data = match dtype {
            DType::F32 => dev.stream.alloc_zeros::<f32>(cap).map(DeviceData::F32),
            DType::F64 => dev.stream.alloc_zeros::<f64>(cap).map(DeviceData::F64),
        }
        .map_err(|e| dev.error("allocate", e))?;
        Ok(DeviceBuffer { data, len: n })
    }

    /// The device address of element 0, for a kernel argument.
    fn ptr(&self, stream: &CudaStream) -> u64 {
        // The `SyncOnDrop` guards only record events for cudarc's multi-stream tracking; with
        // one stream per device every use is ordered by the stream itself.
        match &self.data {
            DeviceData::F32(s) => s.device_ptr(stream).0,
            DeviceData::F64(s) => s.device_ptr(stream).0,
        }
    }

    fn ptr_mut(&mut self, stream: &CudaStream) -> u64 {
        match &mut self.data {
            DeviceData::F32(s) => s.device_ptr_mut(stream).0,
            DeviceData::F64(s) => s.device_ptr_mut(stream).0,
        }
    }
}

/// A kernel argument.
enum Arg {
    I32(i32),
    U64(u64),
    F32(f32),
    F64(f64),
    Layout(KernelLayout),
}

impl Arg {
    /// `v` as an element of `dtype`.
    fn scalar(dtype: DType, v: f64) -> Arg {
        match dtype {
            DType::F32 => Arg::F32(v as f32),
            DType::F64 => Arg::F64(v),
        }
    }
}

// ----- plumbing ---------------------------------------------------------------------------------

/// The device state of `t`'s device.
fn dev_of(t: &Tensor) -> Result<&'static CudaDevice> {
    match t.device() {
        Device::Cuda(i) => device(i),
        other => Err(Error::Device {
            device: other,
            op: "cuda kernel",
            message: "the tensor is not on a CUDA device".into(),
        }),
    }
}

/// `t`'s layout for a kernel.
fn layout_of(dev: &CudaDevice, op: &'static str, layout: &Layout) -> Result<KernelLayout> {
    KernelLayout::new(layout).ok_or_else(|| too_many_dims(dev, op, layout.shape.len()))
}

fn too_many_dims(dev: &CudaDevice, op: &'static str, ndim: usize) -> Error {
    Error::Device {
        device: dev.device(),
        op,
        message: format!(
            "CUDA kernels take tensors of at most {} dims, got {ndim}",
            kernels::MAX_DIMS
        ),
    }
}

/// The device buffer inside a storage's data.
fn device_buffer<'a>(
    dev: &CudaDevice,
    op: &'static str,
    b: &'a Buffer,
) -> Result<&'a DeviceBuffer> {
    match b {
        Buffer::Cuda(d) => Ok(d),
        _ => Err(not_device_memory(dev, op)),
    }
}

fn device_buffer_mut<'a>(
    dev: &CudaDevice,
    op: &'static str,
    b: &'a mut Buffer,
) -> Result<&'a mut DeviceBuffer> {
    match b {
        Buffer::Cuda(d) => Ok(d),
        _ => Err(not_device_memory(dev, op)),
    }
}

fn not_device_memory(dev: &CudaDevice, op: &'static str) -> Error {
    Error::Device {
        device: dev.device(),
        op,
        message: "the tensor's data is not in device memory".into(),
    }
}

/// Launches kernel `name` over `work` items (grid-stride: at most 2^20 blocks).
fn launch(dev: &CudaDevice, op: &'static str, name: &str, work: usize, args: &[Arg]) -> Result<()> {
    if work == 0 {
        return Ok(());
    }
    dev.bind()?;
    let func = dev.function(name)?;
    let mut builder = dev.stream.launch_builder(func);
    for a in args {
        match a {
            Arg::I32(v) => builder.arg(v),
            Arg::U64(v) => builder.arg(v),
            Arg::F32(v) => builder.arg(v),
            Arg::F64(v) => builder.arg(v),
            Arg::Layout(v) => builder.arg(v),
        };
    }
    let blocks = work.div_ceil(BLOCK as usize).min(1 << 20) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `args` match the parameter list of kernel `name` in `kernels.cu` in number, order
    // and type (each call site below mirrors its kernel's signature); every pointer argument is
    // the address of a live device buffer of this device, kept alive by the caller's storage
    // guard or owned output until after this launch is issued (and cudarc frees device memory
    // in stream order); the layouts passed keep every index inside those buffers.
    unsafe { builder.launch(cfg) }
        .map(|_| ())
        .map_err(|e| dev.error(op, e))
}

/// Launches a per-output reduction kernel: one block per output (at most 2^20 blocks).
fn launch_blocks(
    dev: &CudaDevice,
    op: &'static str,
    name: &str,
    outputs: usize,
    args: &[Arg],
) -> Result<()> {
    launch(dev, op, name, outputs.min(1 << 20) * BLOCK as usize, args)
}

/// A new contiguous tensor of `shape` from a filled device buffer.
fn wrap(dev: &CudaDevice, buf: DeviceBuffer, shape: &[usize]) -> Tensor {
    Tensor::from_buffer(Buffer::Cuda(Box::new(buf)), shape, dev.device())
}

/// Runs `kernel(x's address, x's layout, output address)` into a new contiguous output of
/// `shape` and `dtype`.
fn map_into(
    dev: &CudaDevice,
    op: &'static str,
    x: &Tensor,
    shape: &[usize],
    dtype: DType,
    kernel: impl FnOnce(u64, KernelLayout, u64) -> Result<()>,
) -> Result<Tensor> {
    let lx = layout_of(dev, op, x.layout())?;
    let n: usize = shape.iter().product();
    let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
    {
        let guard = x.0.storage.data.read();
        let xb = device_buffer(dev, op, &guard)?;
        kernel(xb.ptr(&dev.stream), lx, out.ptr_mut(&dev.stream))?;
    }
    Ok(wrap(dev, out, shape))
}

/// A contiguous tensor with `x`'s values: `x` itself when it already is one.
fn dense(x: &Tensor) -> Result<Tensor> {
    if x.is_contiguous() && x.layout().offset == 0 {
        return Ok(x.clone());
    }
    Cuda.contiguous(x)
}

/// Uploads `index` to `dev` as `u64`s.
fn upload_index(dev: &CudaDevice, op: &'static str, index: &[usize]) -> Result<CudaSlice<u64>> {
    let v: Vec<u64> = if index.is_empty() {
        vec![0]
    } else {
        index.iter().map(|&i| i as u64).collect()
    };
    dev.bind()?;
    dev.stream.clone_htod(&v).map_err(|e| dev.error(op, e))
}

/// `(outer, d, inner)` of `shape` around `dim`.
fn split_at_dim(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

// ----- host transfers -----------------------------------------------------------------------

/// A copy of host tensor `x` on `cuda:<ordinal>` (what `to(Device::Cuda(i))` runs).
pub(crate) fn upload(x: &Tensor, ordinal: usize) -> Result<Tensor> {
    let dev = device(ordinal)?;
    dev.bind()?;
    let n = x.numel();
    let data = match x.dtype() {
        DType::F32 => {
            let v = x.to_vec::<f32>()?;
            if v.is_empty() {
                return Ok(wrap(
                    dev,
                    DeviceBuffer::zeros(dev, DType::F32, 0)?,
                    x.shape(),
                ));
            }
            DeviceData::F32(dev.stream.clone_htod(&v).map_err(|e| dev.error("to", e))?)
        }
        DType::F64 => {
            let v = x.to_vec::<f64>()?;
            if v.is_empty() {
                return Ok(wrap(
                    dev,
                    DeviceBuffer::zeros(dev, DType::F64, 0)?,
                    x.shape(),
                ));
            }
            DeviceData::F64(dev.stream.clone_htod(&v).map_err(|e| dev.error("to", e))?)
        }
    };
    Ok(wrap(dev, DeviceBuffer { data, len: n }, x.shape()))
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

/// A copy of CUDA tensor `x` in host memory, tagged `device` (`Cpu` or `Virtual(i)`). Waits
/// for the work queued on `x`'s stream.
fn download(x: &Tensor, device: Device) -> Result<Tensor> {
    let dev = dev_of(x)?;
    let x = dense(x)?;
    dev.bind()?;
    let guard = x.0.storage.data.read();
    let xb = device_buffer(dev, "to", &guard)?;
    let n = xb.len;
    let host = match &xb.data {
        DeviceData::F32(s) => Buffer::F32(
            dev.stream
                .clone_dtoh(&s.slice(..n.max(1)))
                .map_err(|e| dev.error("to", e))?
                .into_iter()
                .take(n)
                .collect(),
        ),
        DeviceData::F64(s) => Buffer::F64(
            dev.stream
                .clone_dtoh(&s.slice(..n.max(1)))
                .map_err(|e| dev.error("to", e))?
                .into_iter()
                .take(n)
                .collect(),
        ),
    };
    Ok(Tensor::from_buffer(host, x.shape(), device))
}

/// A copy of `x` (any device) in host memory on `Device::Cpu`: how the element readers
/// (`to_vec`, `item`, ...) see a CUDA tensor.
pub(crate) fn to_host(x: &Tensor) -> Result<Tensor> {
    download(x, Device::Cpu)
}

/// One launch of an indexing kernel of `kernels.cu` (`index_select`, `index_add`, `gather`,
/// `scatter`). They all read a contiguous source, an uploaded `index` and write `out`, around one
/// dim seen as `[outer, d, inner]`: parameters `(src, index, out, outer, d, inner[, len])`.
struct IndexCall {
    op: &'static str,
    kernel: &'static str,
    /// `(outer, d, inner)` around the indexed dim (of the source or of the output, per kernel).
    blocks: (usize, usize, usize),
    /// The index length, for the kernels that take it.
    len: Option<usize>,
    /// Threads to launch (one per output element or per lane).
    work: usize,
    /// Whether `out` starts as zeros (a scatter writes only some elements).
    zeroed: bool,
}

impl IndexCall {
    fn run(&self, src: &Tensor, index: &[usize], out_shape: &[usize]) -> Result<Tensor> {
        let dev = dev_of(src)?;
        let src = dense(src)?;
        let idx = upload_index(dev, self.op, index)?;
        let n = out_shape.iter().product();
        let mut out = if self.zeroed {
            DeviceBuffer::zeros(dev, src.dtype(), n)?
        } else {
            DeviceBuffer::alloc(dev, src.dtype(), n)?
        };
        {
            let guard = src.0.storage.data.read();
            let sp = device_buffer(dev, self.op, &guard)?.ptr(&dev.stream);
            let (outer, d, inner) = self.blocks;
            let mut args = vec![
                Arg::U64(sp),
                Arg::U64(idx.device_ptr(&dev.stream).0),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::U64(outer as u64),
                Arg::U64(d as u64),
                Arg::U64(inner as u64),
            ];
            args.extend(self.len.map(|l| Arg::U64(l as u64)));
            let name = kernels::name(self.kernel, src.dtype());
            launch(dev, self.op, &name, self.work, &args)?;
        }
        Ok(wrap(dev, out, out_shape))
    }
}

// ----- the backend --------------------------------------------------------------------------

impl Backend for Cuda {
    fn unary(&self, op: UnaryOp, x: &Tensor) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let n = x.numel();
        let name = kernels::name("unary", x.dtype());
        map_into(dev, "unary op", x, x.shape(), x.dtype(), |xp, lx, yp| {
            let args = [
                Arg::I32(kernels::unary_code(op)),
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(yp),
                Arg::U64(n as u64),
            ];
            launch(dev, "unary op", &name, n, &args)
        })
    }

    fn pow_scalar(&self, x: &Tensor, exponent: f64) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let (n, dtype) = (x.numel(), x.dtype());
        let name = kernels::name("pow_scalar", dtype);
        map_into(dev, "pow", x, x.shape(), dtype, |xp, lx, yp| {
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::scalar(dtype, exponent),
                Arg::U64(yp),
                Arg::U64(n as u64),
            ];
            launch(dev, "pow", &name, n, &args)
        })
    }

    fn binary(&self, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("binary op", b)?;
        let dev = dev_of(a)?;
        let shape = broadcast_shapes(a.shape(), b.shape())?;
        let la = layout_of(dev, "binary op", &a.layout().expand(&shape)?)?;
        let lb = layout_of(dev, "binary op", &b.layout().expand(&shape)?)?;
        let n: usize = shape.iter().product();
        let mut out = DeviceBuffer::alloc(dev, a.dtype(), n)?;
        {
            let ga = a.0.storage.data.read();
            let gb = (!a.shares_storage(b)).then(|| b.0.storage.data.read());
            let ab = device_buffer(dev, "binary op", &ga)?;
            let bb = match &gb {
                Some(g) => device_buffer(dev, "binary op", g)?,
                None => ab,
            };
            let args = [
                Arg::I32(kernels::binary_code(op)),
                Arg::Layout(la),
                Arg::U64(ab.ptr(&dev.stream)),
                Arg::Layout(lb),
                Arg::U64(bb.ptr(&dev.stream)),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::U64(n as u64),
            ];
            launch(
                dev,
                "binary op",
                &kernels::name("binary", a.dtype()),
                n,
                &args,
            )?;
        }
        Ok(wrap(dev, out, &shape))
    }

    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Tensor,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let (n, dtype) = (x.numel(), x.dtype());
        let name = kernels::name("binary_scalar", dtype);
        map_into(dev, "binary op", x, x.shape(), dtype, |xp, lx, yp| {
            let args = [
                Arg::I32(kernels::binary_code(op)),
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::scalar(dtype, s),
                Arg::I32(i32::from(scalar_on_left)),
                Arg::U64(yp),
                Arg::U64(n as u64),
            ];
            launch(dev, "binary op", &name, n, &args)
        })
    }

    fn fused(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a.check_same_dtype_device("backward formula", b)?;
        let dev = dev_of(a)?;
        let la = layout_of(dev, "backward formula", a.layout())?;
        let lb = layout_of(dev, "backward formula", b.layout())?;
        let n = a.numel();
        let mut out = DeviceBuffer::alloc(dev, a.dtype(), n)?;
        {
            let ga = a.0.storage.data.read();
            let gb = (!a.shares_storage(b)).then(|| b.0.storage.data.read());
            let ab = device_buffer(dev, "backward formula", &ga)?;
            let bb = match &gb {
                Some(g) => device_buffer(dev, "backward formula", g)?,
                None => ab,
            };
            let (code, exponent) = kernels::fused_code(op);
            let args = [
                Arg::I32(code),
                Arg::scalar(a.dtype(), exponent),
                Arg::Layout(la),
                Arg::U64(ab.ptr(&dev.stream)),
                Arg::Layout(lb),
                Arg::U64(bb.ptr(&dev.stream)),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::U64(n as u64),
            ];
            let name = kernels::name("fused", a.dtype());
            launch(dev, "backward formula", &name, n, &args)?;
        }
        Ok(wrap(dev, out, a.shape()))
    }

    fn fused_inplace(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<()> {
        // Element `i` of the output reads only element `i` of `a` and `b`, so writing over `a`
        // (contiguous, unshared: the caller's proof) is race-free.
        let dev = dev_of(a)?;
        let la = layout_of(dev, "backward formula", a.layout())?;
        let lb = layout_of(dev, "backward formula", b.layout())?;
        let n = a.numel();
        let mut ga = a.0.storage.data.write();
        let gb = b.0.storage.data.read();
        let bp = device_buffer(dev, "backward formula", &gb)?.ptr(&dev.stream);
        let ap = device_buffer_mut(dev, "backward formula", &mut ga)?.ptr_mut(&dev.stream);
        let (code, exponent) = kernels::fused_code(op);
        let args = [
            Arg::I32(code),
            Arg::scalar(a.dtype(), exponent),
            Arg::Layout(la),
            Arg::U64(ap),
            Arg::Layout(lb),
            Arg::U64(bp),
            Arg::U64(ap + (a.layout().offset * a.dtype().size_of()) as u64),
            Arg::U64(n as u64),
        ];
        launch(
            dev,
            "backward formula",
            &kernels::name("fused", a.dtype()),
            n,
            &args,
        )
    }

    fn binary_inplace(&self, op: BinaryOp, dst: &Tensor, src: &Tensor) -> Result<()> {
        dst.check_same_dtype_device("in-place op", src)?;
        let dev = dev_of(dst)?;
        // A source aliasing the destination is read from a copy: a broadcast source element may
        // be written by another thread of the same launch before every reader has seen it.
        let src = if src.shares_storage(dst) {
            self.contiguous(src)?
        } else {
            src.clone()
        };
        let ld = layout_of(dev, "in-place op", dst.layout())?;
        let ls = layout_of(dev, "in-place op", &src.layout().expand(dst.shape())?)?;
        let n = dst.numel();
        let mut gd = dst.0.storage.data.write();
        let gs = src.0.storage.data.read();
        let sp = device_buffer(dev, "in-place op", &gs)?.ptr(&dev.stream);
        let dp = device_buffer_mut(dev, "in-place op", &mut gd)?.ptr_mut(&dev.stream);
        let args = [
            Arg::I32(kernels::binary_code(op)),
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::Layout(ls),
            Arg::U64(sp),
            Arg::U64(n as u64),
        ];
        let name = kernels::name("binary_inplace", dst.dtype());
        launch(dev, "in-place op", &name, n, &args)
    }

    fn fill(&self, dst: &Tensor, value: f64) -> Result<()> {
        let dev = dev_of(dst)?;
        let ld = layout_of(dev, "fill", dst.layout())?;
        let n = dst.numel();
        let mut gd = dst.0.storage.data.write();
        let dp = device_buffer_mut(dev, "fill", &mut gd)?.ptr_mut(&dev.stream);
        let args = [
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::scalar(dst.dtype(), value),
            Arg::U64(n as u64),
        ];
        launch(dev, "fill", &kernels::name("fill", dst.dtype()), n, &args)
    }

    fn copy_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        dst.check_same_dtype_device("copy", src)?;
        let dev = dev_of(dst)?;
        let src = if src.shares_storage(dst) {
            self.contiguous(src)?
        } else {
            src.clone()
        };
        let ld = layout_of(dev, "copy", dst.layout())?;
        let ls = layout_of(dev, "copy", src.layout())?;
        let n = dst.numel();
        let mut gd = dst.0.storage.data.write();
        let gs = src.0.storage.data.read();
        let sp = device_buffer(dev, "copy", &gs)?.ptr(&dev.stream);
        let dp = device_buffer_mut(dev, "copy", &mut gd)?.ptr_mut(&dev.stream);
        let args = [
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::Layout(ls),
            Arg::U64(sp),
            Arg::U64(n as u64),
        ];
        launch(dev, "copy", &kernels::name("copy", dst.dtype()), n, &args)
    }

    fn contiguous(&self, x: &Tensor) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let (n, dtype) = (x.numel(), x.dtype());
        let ld = KernelLayout::contiguous(x.shape())
            .ok_or_else(|| too_many_dims(dev, "contiguous", x.shape().len()))?;
        let name = kernels::name("copy", dtype);
        map_into(dev, "contiguous", x, x.shape(), dtype, |xp, lx, yp| {
            let args = [
                Arg::Layout(ld),
                Arg::U64(yp),
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(n as u64),
            ];
            launch(dev, "contiguous", &name, n, &args)
        })
    }

    fn to_dtype(&self, x: &Tensor, dtype: DType) -> Result<Tensor> {
        if dtype == x.dtype() {
            return self.contiguous(x);
        }
        let dev = dev_of(x)?;
        let n = x.numel();
        let name = match dtype {
            DType::F64 => "cast_f32_f64",
            DType::F32 => "cast_f64_f32",
        };
        map_into(dev, "to_dtype", x, x.shape(), dtype, |xp, lx, yp| {
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(yp),
                Arg::U64(n as u64),
            ];
            launch(dev, "to_dtype", name, n, &args)
        })
    }

    fn to_device(&self, x: &Tensor, device: Device) -> Result<Tensor> {
        match device {
            Device::Cpu | Device::Virtual(_) => download(x, device),
            Device::Cuda(_) if device == x.device() => self.contiguous(x),
            // Between GPUs through the host: correct everywhere, if not the fastest path.
            Device::Cuda(i) => upload(&download(x, Device::Cpu)?, i),
        }
    }

    fn cat(&self, tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        let first = &tensors[0];
        let dev = dev_of(first)?;
        let mut shape = first.shape().to_vec();
        shape[dim] = tensors.iter().map(|t| t.shape()[dim]).sum();
        let n: usize = shape.iter().product();
        let dtype = first.dtype();
        let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
        let out_layout = Layout::contiguous(&shape);
        let yp = out.ptr_mut(&dev.stream);
        let mut start = 0;
        for t in tensors {
            let len = t.shape()[dim];
            let ld = layout_of(dev, "cat", &out_layout.narrow(dim, start, len))?;
            let ls = layout_of(dev, "cat", t.layout())?;
            let guard = t.0.storage.data.read();
            let sp = device_buffer(dev, "cat", &guard)?.ptr(&dev.stream);
            let m = t.numel();
            let args = [
                Arg::Layout(ld),
                Arg::U64(yp),
                Arg::Layout(ls),
                Arg::U64(sp),
                Arg::U64(m as u64),
            ];
            launch(dev, "cat", &kernels::name("copy", dtype), m, &args)?;
            start += len;
        }
        Ok(wrap(dev, out, &shape))
    }

    fn sum_all(&self, x: &Tensor) -> Result<Tensor> {
        let axes: Vec<usize> = (0..x.shape().len()).collect();
        self.sum_dims(x, &axes, false)
    }

    fn sum_dims(&self, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let ndim = x.shape().len();
        let reduced = |d: usize| axes.contains(&d);
        // Kept dims first, reduced dims last: output `o` sums a run of `k` elements.
        let order: Vec<usize> = (0..ndim)
            .filter(|&d| !reduced(d))
            .chain((0..ndim).filter(|&d| reduced(d)))
            .collect();
        let lx = layout_of(dev, "sum", &x.layout().permute(&order))?;
        let shape: Vec<usize> = (0..ndim)
            .filter_map(|d| match (reduced(d), keepdim) {
                (false, _) => Some(x.shape()[d]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let m: usize = shape.iter().product();
        let k: usize = axes.iter().map(|&d| x.shape()[d]).product();
        let dtype = x.dtype();
        let mut out = DeviceBuffer::alloc(dev, dtype, m)?;
        {
            let guard = x.0.storage.data.read();
            let xp = device_buffer(dev, "sum", &guard)?.ptr(&dev.stream);
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::U64(m as u64),
                Arg::U64(k as u64),
            ];
            launch_blocks(dev, "sum", &kernels::name("sum", dtype), m, &args)?;
        }
        Ok(wrap(dev, out, &shape))
    }

    fn sum_to(&self, x: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let lead = x.shape().len() - shape.len();
        let axes: Vec<usize> = (0..x.shape().len())
            .filter(|&d| d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1))
            .collect();
        // The kept dims, in order, hold exactly `shape`'s elements in C order.
        let summed = self.sum_dims(x, &axes, false)?;
        Ok(Tensor::from_parts(
            summed.0.storage.clone(),
            Layout::contiguous(shape),
        ))
    }

    fn softmax(&self, x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
        let dev = dev_of(x)?;
        let x = dense(x)?;
        let (outer, d, inner) = split_at_dim(x.shape(), dim);
        let dtype = x.dtype();
        let mut out = DeviceBuffer::alloc(dev, dtype, x.numel())?;
        {
            let guard = x.0.storage.data.read();
            let xp = device_buffer(dev, "softmax", &guard)?.ptr(&dev.stream);
            let args = [
                Arg::U64(xp),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::U64(outer as u64),
                Arg::U64(d as u64),
                Arg::U64(inner as u64),
                Arg::I32(i32::from(log)),
            ];
            let lanes = if d == 0 { 0 } else { outer * inner };
            launch_blocks(
                dev,
                "softmax",
                &kernels::name("softmax", dtype),
                lanes,
                &args,
            )?;
        }
        Ok(wrap(dev, out, x.shape()))
    }

    fn argmax(&self, x: &Tensor, dim: usize) -> Result<Vec<usize>> {
        let dev = dev_of(x)?;
        let x = dense(x)?;
        let (outer, d, inner) = split_at_dim(x.shape(), dim);
        let lanes = outer * inner;
        if lanes == 0 {
            return Ok(Vec::new());
        }
        dev.bind()?;
        let mut out = dev
            .stream
            .alloc_zeros::<u64>(lanes)
            .map_err(|e| dev.error("argmax", e))?;
        {
            let guard = x.0.storage.data.read();
            let xp = device_buffer(dev, "argmax", &guard)?.ptr(&dev.stream);
            let args = [
                Arg::U64(xp),
                Arg::U64(out.device_ptr_mut(&dev.stream).0),
                Arg::U64(outer as u64),
                Arg::U64(d as u64),
                Arg::U64(inner as u64),
            ];
            launch(
                dev,
                "argmax",
                &kernels::name("argmax", x.dtype()),
                lanes,
                &args,
            )?;
        }
        let host = dev
            .stream
            .clone_dtoh(&out)
            .map_err(|e| dev.error("argmax", e))?;
        Ok(host.into_iter().map(|i| i as usize).collect())
    }

    fn has_nan(&self, x: &Tensor) -> Result<bool> {
        let dev = dev_of(x)?;
        let lx = layout_of(dev, "anomaly check", x.layout())?;
        let n = x.numel();
        if n == 0 {
            return Ok(false);
        }
        dev.bind()?;
        let mut flag = dev
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(|e| dev.error("anomaly check", e))?;
        {
            let guard = x.0.storage.data.read();
            let xp = device_buffer(dev, "anomaly check", &guard)?.ptr(&dev.stream);
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(flag.device_ptr_mut(&dev.stream).0),
                Arg::U64(n as u64),
            ];
            launch(
                dev,
                "anomaly check",
                &kernels::name("has_nan", x.dtype()),
                n,
                &args,
            )?;
        }
        let host = dev
            .stream
            .clone_dtoh(&flag)
            .map_err(|e| dev.error("anomaly check", e))?;
        Ok(host[0] != 0)
    }

    fn index_select(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let mut shape = x.shape().to_vec();
        shape[dim] = index.len();
        let call = IndexCall {
            op: "index_select",
            kernel: "index_select",
            blocks: split_at_dim(x.shape(), dim),
            len: Some(index.len()),
            work: shape.iter().product(),
            zeroed: false,
        };
        call.run(x, index, &shape)
    }

    fn index_add(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        let call = IndexCall {
            op: "index_select backward",
            kernel: "index_add",
            blocks: split_at_dim(shape, dim),
            len: Some(index.len()),
            work: shape.iter().product(),
            zeroed: false,
        };
        call.run(g, index, shape)
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let mut shape = x.shape().to_vec();
        if let Some(d) = shape.get_mut(dim) {
            *d = 1;
        }
        let (outer, d, inner) = split_at_dim(x.shape(), dim);
        let call = IndexCall {
            op: "gather",
            kernel: "gather",
            blocks: (outer, d, inner),
            len: None,
            work: outer * inner,
            zeroed: false,
        };
        call.run(x, index, &shape)
    }

    fn scatter(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
        let (outer, d, inner) = split_at_dim(shape, dim);
        let call = IndexCall {
            op: "gather backward",
            kernel: "scatter",
            blocks: (outer, d, inner),
            len: None,
            work: outer * inner,
            zeroed: true,
        };
        call.run(g, index, shape)
    }

    fn narrow_scatter(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor> {
        let dev = dev_of(g)?;
        let n = g.numel();
        let ld = layout_of(
            dev,
            "narrow backward",
            &Layout::contiguous(shape).narrow(dim, start, g.shape()[dim]),
        )?;
        let lg = layout_of(dev, "narrow backward", g.layout())?;
        let mut out = DeviceBuffer::zeros(dev, g.dtype(), shape.iter().product())?;
        {
            let guard = g.0.storage.data.read();
            let gp = device_buffer(dev, "narrow backward", &guard)?.ptr(&dev.stream);
            let args = [
                Arg::Layout(ld),
                Arg::U64(out.ptr_mut(&dev.stream)),
                Arg::Layout(lg),
                Arg::U64(gp),
                Arg::U64(n as u64),
            ];
            launch(
                dev,
                "narrow backward",
                &kernels::name("copy", g.dtype()),
                n,
                &args,
            )?;
        }
        Ok(wrap(dev, out, shape))
    }

    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        matmul::matmul(a, b)
    }
}

mod matmul;
