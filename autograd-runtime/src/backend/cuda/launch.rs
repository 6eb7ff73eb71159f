//! Launch plumbing: kernel arguments, finding a tensor's device and device buffer, and launching
//! a kernel of `kernels.cu` over a number of work items.

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

use super::buffer::DeviceBuffer;
use super::device::{CudaDevice, device};
use super::kernels::{self, BLOCK, KernelLayout};
use crate::backend::{Buffer, Out};
use crate::layout::Layout;
use crate::{DType, Device, Error, Result};

/// A kernel argument.
pub(super) enum Arg {
    I32(i32),
    U64(u64),
    F32(f32),
    F64(f64),
    Layout(KernelLayout),
}

impl Arg {
    /// `v` as an element of `dtype` (rounded for `f32`). A match on the dtype rather than a
    /// method of `DeviceElement`, so that `buffer.rs` need not know the launch arguments: a new
    /// dtype fails to compile here, beside the variant it needs.
    pub(super) fn scalar(dtype: DType, v: f64) -> Arg {
        match dtype {
            DType::F32 => Arg::F32(v as f32),
            DType::F64 => Arg::F64(v),
            _ => unreachable!("invariant: {}", super::FLOATS_ONLY),
        }
    }
}

/// The device buffer inside `b` and the state of the device holding it.
pub(super) fn dev_of(b: &Buffer) -> Result<(&'static CudaDevice, &DeviceBuffer)> {
    match b {
        Buffer::Cuda(d) => Ok((device(d.ordinal)?, d)),
        _ => Err(Error::Device {
            device: Device::Cpu,
            op: "cuda kernel",
            message: "the tensor is not on a CUDA device".into(),
        }),
    }
}

/// `t`'s layout for a kernel.
pub(super) fn layout_of(
    dev: &CudaDevice,
    op: &'static str,
    layout: &Layout,
) -> Result<KernelLayout> {
    KernelLayout::new(layout).ok_or_else(|| too_many_dims(dev, op, layout.shape.len()))
}

pub(super) fn too_many_dims(dev: &CudaDevice, op: &'static str, ndim: usize) -> Error {
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
pub(super) fn device_buffer<'a>(
    dev: &CudaDevice,
    op: &'static str,
    b: &'a Buffer,
) -> Result<&'a DeviceBuffer> {
    match b {
        Buffer::Cuda(d) => Ok(d),
        _ => Err(not_device_memory(dev, op)),
    }
}

pub(super) fn device_buffer_mut<'a>(
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
pub(super) fn launch(
    dev: &CudaDevice,
    op: &'static str,
    name: &str,
    work: usize,
    args: &[Arg],
) -> Result<()> {
    if work == 0 {
        return Ok(());
    }
    let blocks = work.div_ceil(BLOCK as usize).min(1 << 20) as u32;
    launch_grid(dev, op, name, (blocks, 1), args)
}

/// Launches kernel `name` on a grid of `grid.0 × grid.1` blocks of [`BLOCK`] threads.
pub(super) fn launch_grid(
    dev: &CudaDevice,
    op: &'static str,
    name: &str,
    grid: (u32, u32),
    args: &[Arg],
) -> Result<()> {
    launch_function(dev, op, dev.function(name)?, grid, args)
}

/// [`launch_grid`] for a kernel given as a function (a generated kernel's: `generated.rs`).
pub(super) fn launch_function(
    dev: &CudaDevice,
    op: &'static str,
    func: &CudaFunction,
    grid: (u32, u32),
    args: &[Arg],
) -> Result<()> {
    dev.bind()?;
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
    let cfg = LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `args` match the parameter list of kernel `func` (one of `kernels.cu`, or a
    // generated kernel's) in number, order and type (each call site mirrors its kernel's
    // signature); every pointer argument is the
    // address of a live device buffer of this device, kept alive by the caller's storage guard
    // or owned output until after this launch is issued (and freed blocks are reused only by
    // work issued later on the same stream); the layouts passed keep every index inside those
    // buffers.
    unsafe { builder.launch(cfg) }
        .map(|_| ())
        .map_err(|e| dev.error(op, e))
}

/// Launches a per-output reduction kernel: one block per output (at most 2^20 blocks).
pub(super) fn launch_blocks(
    dev: &CudaDevice,
    op: &'static str,
    name: &str,
    outputs: usize,
    args: &[Arg],
) -> Result<()> {
    launch(dev, op, name, outputs.min(1 << 20) * BLOCK as usize, args)
}

/// A kernel result: a new contiguous buffer of `shape` from a filled device buffer.
pub(super) fn wrap(buf: DeviceBuffer, shape: &[usize]) -> Out {
    (Buffer::Cuda(Box::new(buf)), shape.into())
}

/// Runs `kernel(x's address, x's layout, output address)` into a new contiguous device buffer
/// of `shape` and `dtype`.
pub(super) fn map_into(
    dev: &CudaDevice,
    op: &'static str,
    (xb, lx): (&DeviceBuffer, &Layout),
    shape: &[usize],
    dtype: DType,
    kernel: impl FnOnce(u64, KernelLayout, u64) -> Result<()>,
) -> Result<DeviceBuffer> {
    let lx = layout_of(dev, op, lx)?;
    let n: usize = shape.iter().product();
    let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
    kernel(xb.ptr(&dev.stream), lx, out.ptr_mut(&dev.stream))?;
    Ok(out)
}

/// A contiguous copy of `x` (read through `lx`).
pub(super) fn contiguous(
    dev: &CudaDevice,
    (xb, lx): (&DeviceBuffer, &Layout),
) -> Result<DeviceBuffer> {
    let (n, dtype) = (lx.numel(), xb.dtype());
    let ld = KernelLayout::contiguous(&lx.shape)
        .ok_or_else(|| too_many_dims(dev, "contiguous", lx.shape.len()))?;
    let name = kernels::kernel!("copy").of(dtype);
    map_into(
        dev,
        "contiguous",
        (xb, lx),
        &lx.shape,
        dtype,
        |xp, lx, yp| {
            let args = [
                Arg::Layout(ld),
                Arg::U64(yp),
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(n as u64),
            ];
            launch(dev, "contiguous", name, n, &args)
        },
    )
}

/// A device buffer with `x`'s values in C order from element 0: `x`'s own when its layout
/// already is that, else a contiguous copy.
pub(super) enum Dense<'a> {
    Borrowed(&'a DeviceBuffer),
    Owned(DeviceBuffer),
}

impl Dense<'_> {
    pub(super) fn buffer(&self) -> &DeviceBuffer {
        match self {
            Dense::Borrowed(b) => b,
            Dense::Owned(b) => b,
        }
    }
}

/// `x` as a [`Dense`] buffer.
pub(super) fn dense<'a>(
    dev: &CudaDevice,
    (xb, lx): (&'a DeviceBuffer, &Layout),
) -> Result<Dense<'a>> {
    if lx.is_contiguous() && lx.offset == 0 {
        return Ok(Dense::Borrowed(xb));
    }
    contiguous(dev, (xb, lx)).map(Dense::Owned)
}

/// `(outer, d, inner)` of `shape` around `dim`.
pub(super) fn split_at_dim(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}
