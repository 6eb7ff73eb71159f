//! Indexing: `index_select`, `index_add`, `gather`, `scatter` and `narrow`'s backward, each one
//! launch over a contiguous source and an uploaded index.

use cudarc::driver::{CudaSlice, DevicePtr};

use super::buffer::DeviceBuffer;
use super::device::CudaDevice;
use super::kernels;
use super::launch::{Arg, dense, launch, layout_of, split_at_dim, wrap};
use crate::Result;
use crate::backend::Out;
use crate::layout::Layout;

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

/// One launch of an indexing kernel of `kernels.cu` (`index_select`, `index_add`, `gather`,
/// `scatter`). They all read a contiguous source, an uploaded `index` and write `out`, around one
/// dim seen as `[outer, d, inner]`: parameters `(src, index, out, outer, d, inner[, len])`.
struct IndexCall {
    op: &'static str,
    kernel: kernels::Kernel,
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
    fn run(
        &self,
        dev: &CudaDevice,
        src: (&DeviceBuffer, &Layout),
        index: &[usize],
        out_shape: &[usize],
    ) -> Result<Out> {
        let src = dense(dev, src)?;
        let src = src.buffer();
        let idx = upload_index(dev, self.op, index)?;
        let n = out_shape.iter().product();
        let mut out = if self.zeroed {
            DeviceBuffer::zeros(dev, src.dtype(), n)?
        } else {
            DeviceBuffer::alloc(dev, src.dtype(), n)?
        };
        {
            let sp = src.ptr(&dev.stream);
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
            let name = self.kernel.of(src.dtype());
            launch(dev, self.op, name, self.work, &args)?;
        }
        Ok(wrap(out, out_shape))
    }
}

/// `Backend::index_select`.
pub(super) fn index_select(
    dev: &CudaDevice,
    x: (&DeviceBuffer, &Layout),
    dim: usize,
    index: &[usize],
) -> Result<Out> {
    let mut shape = x.1.shape.to_vec();
    shape[dim] = index.len();
    let call = IndexCall {
        op: "index_select",
        kernel: kernels::kernel!("index_select"),
        blocks: split_at_dim(&x.1.shape, dim),
        len: Some(index.len()),
        work: shape.iter().product(),
        zeroed: false,
    };
    call.run(dev, x, index, &shape)
}

/// `Backend::index_add`.
pub(super) fn index_add(
    dev: &CudaDevice,
    g: (&DeviceBuffer, &Layout),
    shape: &[usize],
    dim: usize,
    index: &[usize],
) -> Result<Out> {
    let call = IndexCall {
        op: "index_select backward",
        kernel: kernels::kernel!("index_add"),
        blocks: split_at_dim(shape, dim),
        len: Some(index.len()),
        work: shape.iter().product(),
        zeroed: false,
    };
    call.run(dev, g, index, shape)
}

/// `Backend::gather`.
pub(super) fn gather(
    dev: &CudaDevice,
    x: (&DeviceBuffer, &Layout),
    dim: usize,
    index: &[usize],
) -> Result<Out> {
    let mut shape = x.1.shape.to_vec();
    if let Some(d) = shape.get_mut(dim) {
        *d = 1;
    }
    let (outer, d, inner) = split_at_dim(&x.1.shape, dim);
    let call = IndexCall {
        op: "gather",
        kernel: kernels::kernel!("gather"),
        blocks: (outer, d, inner),
        len: None,
        work: outer * inner,
        zeroed: false,
    };
    call.run(dev, x, index, &shape)
}

/// `Backend::scatter`.
pub(super) fn scatter(
    dev: &CudaDevice,
    g: (&DeviceBuffer, &Layout),
    shape: &[usize],
    dim: usize,
    index: &[usize],
) -> Result<Out> {
    let (outer, d, inner) = split_at_dim(shape, dim);
    let call = IndexCall {
        op: "gather backward",
        kernel: kernels::kernel!("scatter"),
        blocks: (outer, d, inner),
        len: None,
        work: outer * inner,
        zeroed: true,
    };
    call.run(dev, g, index, shape)
}

/// `Backend::narrow_scatter`.
pub(super) fn narrow_scatter(
    dev: &CudaDevice,
    (gb, lg): (&DeviceBuffer, &Layout),
    shape: &[usize],
    dim: usize,
    start: usize,
) -> Result<Out> {
    let n = lg.numel();
    let ld = layout_of(
        dev,
        "narrow backward",
        &Layout::contiguous(shape).narrow(dim, start, lg.shape[dim]),
    )?;
    let lgk = layout_of(dev, "narrow backward", lg)?;
    let mut out = DeviceBuffer::zeros(dev, gb.dtype(), shape.iter().product())?;
    {
        let gp = gb.ptr(&dev.stream);
        let args = [
            Arg::Layout(ld),
            Arg::U64(out.ptr_mut(&dev.stream)),
            Arg::Layout(lgk),
            Arg::U64(gp),
            Arg::U64(n as u64),
        ];
        launch(
            dev,
            "narrow backward",
            kernels::kernel!("copy").of(gb.dtype()),
            n,
            &args,
        )?;
    }
    Ok(wrap(out, shape))
}
