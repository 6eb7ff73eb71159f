//! [`Cuda`], the [`Backend`] impl: one kernel launch (or cuBLAS call) per op, each reading its
//! operands through their layouts.

use cudarc::driver::DevicePtrMut;

use super::buffer::DeviceBuffer;
use super::kernels::{self, KernelLayout};
use super::launch::{
    dense, dev_of, device_buffer, device_buffer_mut, launch, launch_blocks, layout_of, map_into,
    split_at_dim, too_many_dims, wrap, Arg,
};
use super::transfer::{download, upload};
use super::{index, matmul};
use crate::backend::{broadcast_shapes, Backend, BinaryOp, FusedOp, UnaryOp};
use crate::layout::Layout;
use crate::{DType, Device, Result, Tensor};

/// The CUDA kernels. Stateless: each call finds its device's state from its tensors' device.
#[derive(Debug)]
pub(crate) struct Cuda;

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
        index::index_select(x, dim, index)
    }

    fn index_add(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        index::index_add(g, shape, dim, index)
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        index::gather(x, dim, index)
    }

    fn scatter(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
        index::scatter(g, shape, dim, index)
    }

    fn narrow_scatter(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor> {
        index::narrow_scatter(g, shape, dim, start)
    }

    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        matmul::matmul(a, b)
    }
}
