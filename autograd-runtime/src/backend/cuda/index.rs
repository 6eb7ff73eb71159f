//! Indexing: `index_select`, `index_add`, `gather`, `scatter` and `narrow`'s backward, each one
//! launch over a contiguous source and an uploaded index.

use cudarc::driver::{CudaSlice, DevicePtr};

use super::buffer::DeviceBuffer;
use super::device::CudaDevice;
use super::kernels;
use super::launch::{dense, dev_of, device_buffer, launch, layout_of, split_at_dim, wrap, Arg};
use crate::layout::Layout;
use crate::{Result, Tensor};

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

/// `Backend::index_select`.
pub(super) fn index_select(x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
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

/// `Backend::index_add`.
pub(super) fn index_add(
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

/// `Backend::gather`.
pub(super) fn gather(x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
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

/// `Backend::scatter`.
pub(super) fn scatter(g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
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

/// `Backend::narrow_scatter`.
pub(super) fn narrow_scatter(
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
