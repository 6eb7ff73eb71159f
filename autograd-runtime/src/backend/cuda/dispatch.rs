//! [`Cuda`], the [`Backend`] impl: one kernel launch (or cuBLAS call) per op, each reading its
//! operands through their layouts.

use cudarc::driver::DevicePtrMut;

use super::buffer::DeviceBuffer;
use super::kernels;
use super::launch::{
    Arg, contiguous, dense, dev_of, device_buffer, device_buffer_mut, launch, launch_blocks,
    layout_of, map_into, split_at_dim, wrap,
};
use super::transfer::{download, upload};
use super::{index, matmul, reduce};
use crate::backend::{
    Backend, BinaryOp, Buffer, CompareOp, GradFormula, MapOp, Out, StepSet, UnaryOp,
    broadcast_shapes,
};
use crate::layout::Layout;
use crate::{DType, Device, Result};

/// The CUDA kernels. Stateless: each call finds its device's state from its buffers.
#[derive(Debug)]
pub(crate) struct Cuda;

impl Backend for Cuda {
    fn argmin(&self, x: &Buffer, _: &Layout, _: usize) -> Result<Vec<usize>> {
        Err(super::refuse_dtype("argmin", x.dtype()))
    }

    /// No CUDA sort kernel in this build: `sort`, `argsort`, `topk` (and `min_dim` of a
    /// non-float tensor) run on the CPU only.
    fn sort(
        &self,
        x: &Buffer,
        _: &Layout,
        _: usize,
        _: bool,
        _: bool,
    ) -> Result<(Out, Vec<usize>)> {
        Err(super::refuse_dtype("sort", x.dtype()))
    }

    /// No CUDA selection kernel either (see `sort`).
    fn topk(
        &self,
        x: &Buffer,
        _: &Layout,
        _: usize,
        _: usize,
        _: bool,
        _: bool,
    ) -> Result<Vec<usize>> {
        Err(super::refuse_dtype("topk", x.dtype()))
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &Buffer,
        _: &Layout,
        _: &Buffer,
        _: &Layout,
    ) -> Result<Out> {
        Err(super::refuse_dtype(op.name(), a.dtype()))
    }

    fn where_(
        &self,
        _: (&Buffer, &Layout),
        a: (&Buffer, &Layout),
        _: (&Buffer, &Layout),
    ) -> Result<Out> {
        Err(super::refuse_dtype("where", a.0.dtype()))
    }

    fn unary(&self, op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        let n = lx.numel();
        let name = kernels::kernel!("unary").of(xb.dtype());
        let out = map_into(
            dev,
            "unary op",
            (xb, lx),
            &lx.shape,
            xb.dtype(),
            |xp, lx, yp| {
                let (vec, work) = kernels::vector_plan(xb.dtype(), n, &[(&lx, xp)], yp);
                let args = [
                    Arg::I32(kernels::unary_code(op)),
                    Arg::Layout(lx),
                    Arg::U64(xp),
                    Arg::U64(yp),
                    Arg::U64(n as u64),
                    Arg::I32(vec),
                ];
                launch(dev, "unary op", name, work, &args)
            },
        )?;
        Ok(wrap(out, &lx.shape))
    }

    fn pow_scalar(&self, x: &Buffer, lx: &Layout, exponent: f64) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        let (n, dtype) = (lx.numel(), xb.dtype());
        let name = kernels::kernel!("pow_scalar").of(dtype);
        let out = map_into(dev, "pow", (xb, lx), &lx.shape, dtype, |xp, lx, yp| {
            let (vec, work) = kernels::vector_plan(dtype, n, &[(&lx, xp)], yp);
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::scalar(dtype, exponent),
                Arg::U64(yp),
                Arg::U64(n as u64),
                Arg::I32(vec),
            ];
            launch(dev, "pow", name, work, &args)
        })?;
        Ok(wrap(out, &lx.shape))
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out> {
        let (dev, ab) = dev_of(a)?;
        let bb = device_buffer(dev, "binary op", b)?;
        let shape = broadcast_shapes(&la.shape, &lb.shape)?;
        let la = layout_of(dev, "binary op", &la.expand(&shape)?)?;
        let lb = layout_of(dev, "binary op", &lb.expand(&shape)?)?;
        let n: usize = shape.iter().product();
        let mut out = DeviceBuffer::alloc(dev, ab.dtype(), n)?;
        let (ap, bp, yp) = (
            ab.ptr(&dev.stream),
            bb.ptr(&dev.stream),
            out.ptr_mut(&dev.stream),
        );
        let (vec, work) = kernels::vector_plan(ab.dtype(), n, &[(&la, ap), (&lb, bp)], yp);
        let args = [
            Arg::I32(kernels::binary_code(op)),
            Arg::Layout(la),
            Arg::U64(ap),
            Arg::Layout(lb),
            Arg::U64(bp),
            Arg::U64(yp),
            Arg::U64(n as u64),
            Arg::I32(vec),
        ];
        launch(
            dev,
            "binary op",
            kernels::kernel!("binary").of(ab.dtype()),
            work,
            &args,
        )?;
        Ok(wrap(out, &shape))
    }

    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Buffer,
        lx: &Layout,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        let (n, dtype) = (lx.numel(), xb.dtype());
        let name = kernels::kernel!("binary_scalar").of(dtype);
        let out = map_into(
            dev,
            "binary op",
            (xb, lx),
            &lx.shape,
            dtype,
            |xp, lx, yp| {
                let (vec, work) = kernels::vector_plan(dtype, n, &[(&lx, xp)], yp);
                let args = [
                    Arg::I32(kernels::binary_code(op)),
                    Arg::Layout(lx),
                    Arg::U64(xp),
                    Arg::scalar(dtype, s),
                    Arg::I32(i32::from(scalar_on_left)),
                    Arg::U64(yp),
                    Arg::U64(n as u64),
                    Arg::I32(vec),
                ];
                launch(dev, "binary op", name, work, &args)
            },
        )?;
        Ok(wrap(out, &lx.shape))
    }

    fn grad_formula(
        &self,
        op: GradFormula,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out> {
        let (dev, ab) = dev_of(a)?;
        let bb = device_buffer(dev, "backward formula", b)?;
        let n = la.numel();
        let shape = &la.shape;
        let la = layout_of(dev, "backward formula", la)?;
        let lb = layout_of(dev, "backward formula", lb)?;
        let mut out = DeviceBuffer::alloc(dev, ab.dtype(), n)?;
        let (code, exponent) = kernels::grad_formula_code(op);
        let (ap, bp, yp) = (
            ab.ptr(&dev.stream),
            bb.ptr(&dev.stream),
            out.ptr_mut(&dev.stream),
        );
        let (vec, work) = kernels::vector_plan(ab.dtype(), n, &[(&la, ap), (&lb, bp)], yp);
        let args = [
            Arg::I32(code),
            Arg::scalar(ab.dtype(), exponent),
            Arg::Layout(la),
            Arg::U64(ap),
            Arg::Layout(lb),
            Arg::U64(bp),
            Arg::U64(yp),
            Arg::U64(n as u64),
            Arg::I32(vec),
        ];
        let name = kernels::kernel!("grad_formula").of(ab.dtype());
        launch(dev, "backward formula", name, work, &args)?;
        Ok(wrap(out, shape))
    }

    fn grad_formula_inplace(
        &self,
        op: GradFormula,
        (a, la): (&mut Buffer, &Layout),
        (b, lb): (&Buffer, &Layout),
    ) -> Result<()> {
        // Element `i` of the output reads only element `i` of `a` and `b`, so writing over `a`
        // (contiguous, unshared: the caller's proof) is race-free.
        let (dev, _) = dev_of(a)?;
        let n = la.numel();
        let dtype = a.dtype();
        let offset = la.offset;
        let la = layout_of(dev, "backward formula", la)?;
        let lb = layout_of(dev, "backward formula", lb)?;
        let bp = device_buffer(dev, "backward formula", b)?.ptr(&dev.stream);
        let ap = device_buffer_mut(dev, "backward formula", a)?.ptr_mut(&dev.stream);
        let (code, exponent) = kernels::grad_formula_code(op);
        let yp = ap + (offset * dtype.size_of()) as u64;
        let (vec, work) = kernels::vector_plan(dtype, n, &[(&la, ap), (&lb, bp)], yp);
        let args = [
            Arg::I32(code),
            Arg::scalar(dtype, exponent),
            Arg::Layout(la),
            Arg::U64(ap),
            Arg::Layout(lb),
            Arg::U64(bp),
            Arg::U64(yp),
            Arg::U64(n as u64),
            Arg::I32(vec),
        ];
        launch(
            dev,
            "backward formula",
            kernels::kernel!("grad_formula").of(dtype),
            work,
            &args,
        )
    }

    fn binary_inplace(
        &self,
        op: BinaryOp,
        (dst, ld): (&mut Buffer, &Layout),
        (src, ls): (&Buffer, &Layout),
    ) -> Result<()> {
        // A source aliasing the destination arrives as a copy (the caller's rule): a broadcast
        // source element could otherwise be written by another thread of the same launch before
        // every reader has seen it.
        let (dev, _) = dev_of(dst)?;
        let dtype = dst.dtype();
        let n = ld.numel();
        let ldk = layout_of(dev, "in-place op", ld)?;
        let ls = layout_of(dev, "in-place op", &ls.expand(&ld.shape)?)?;
        let ld = ldk;
        let sp = device_buffer(dev, "in-place op", src)?.ptr(&dev.stream);
        let dp = device_buffer_mut(dev, "in-place op", dst)?.ptr_mut(&dev.stream);
        let args = [
            Arg::I32(kernels::binary_code(op)),
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::Layout(ls),
            Arg::U64(sp),
            Arg::U64(n as u64),
        ];
        let name = kernels::kernel!("binary_inplace").of(dtype);
        launch(dev, "in-place op", name, n, &args)
    }

    fn fill(&self, dst: &mut Buffer, ld: &Layout, value: f64) -> Result<()> {
        let (dev, _) = dev_of(dst)?;
        let dtype = dst.dtype();
        let n = ld.numel();
        let ld = layout_of(dev, "fill", ld)?;
        let dp = device_buffer_mut(dev, "fill", dst)?.ptr_mut(&dev.stream);
        let args = [
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::scalar(dtype, value),
            Arg::U64(n as u64),
        ];
        launch(dev, "fill", kernels::kernel!("fill").of(dtype), n, &args)
    }

    fn copy_into(
        &self,
        (dst, ld): (&mut Buffer, &Layout),
        (src, ls): (&Buffer, &Layout),
    ) -> Result<()> {
        let (dev, _) = dev_of(dst)?;
        let dtype = dst.dtype();
        let n = ld.numel();
        let ld = layout_of(dev, "copy", ld)?;
        let ls = layout_of(dev, "copy", ls)?;
        let sp = device_buffer(dev, "copy", src)?.ptr(&dev.stream);
        let dp = device_buffer_mut(dev, "copy", dst)?.ptr_mut(&dev.stream);
        let args = [
            Arg::Layout(ld),
            Arg::U64(dp),
            Arg::Layout(ls),
            Arg::U64(sp),
            Arg::U64(n as u64),
        ];
        launch(dev, "copy", kernels::kernel!("copy").of(dtype), n, &args)
    }

    fn contiguous(&self, x: &Buffer, lx: &Layout) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        Ok(wrap(contiguous(dev, (xb, lx))?, &lx.shape))
    }

    fn to_dtype(&self, x: &Buffer, lx: &Layout, dtype: DType) -> Result<Out> {
        if dtype == x.dtype() {
            return self.contiguous(x, lx);
        }
        let (dev, xb) = dev_of(x)?;
        let n = lx.numel();
        let name = match dtype {
            DType::F64 => "cast_f32_f64",
            DType::F32 => "cast_f64_f32",
            other => return Err(super::refuse_dtype("to_dtype", other)),
        };
        let out = map_into(dev, "to_dtype", (xb, lx), &lx.shape, dtype, |xp, lx, yp| {
            let args = [
                Arg::Layout(lx),
                Arg::U64(xp),
                Arg::U64(yp),
                Arg::U64(n as u64),
            ];
            launch(dev, "to_dtype", name, n, &args)
        })?;
        Ok(wrap(out, &lx.shape))
    }

    fn to_device(&self, x: &Buffer, lx: &Layout, device: Device) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        match device {
            Device::Cpu | Device::Virtual(_) => download(dev, (xb, lx)),
            Device::Cuda(i) if i == xb.ordinal => self.contiguous(x, lx),
            // Between GPUs through the host: correct everywhere, if not the fastest path.
            Device::Cuda(i) => {
                let (host, shape) = download(dev, (xb, lx))?;
                upload(&host, &Layout::contiguous(&shape), i)
            }
        }
    }

    /// A generated kernel of one input ([`generated::map_kernel`](crate::backend::generated::map_kernel)),
    /// one launch, on a dense copy when `x` is not dense from its buffer's start.
    fn map(&self, op: MapOp, x: &Buffer, lx: &Layout) -> Result<Out> {
        let n = lx.numel();
        let dense;
        let input = if lx.offset == 0 && lx.is_contiguous() {
            x
        } else {
            dense = self.contiguous(x, lx)?.0;
            &dense
        };
        if n == 0 {
            return self.contiguous(input, &Layout::contiguous(&lx.shape));
        }
        let (kernel, scalars) = crate::backend::generated::map_kernel(op);
        let mut outs =
            self.generated(kernel, &[input], &[false], &scalars[..kernel.n_scalars], n)?;
        let out = outs.pop().ok_or_else(|| {
            crate::Error::shape(
                "generated kernel",
                "internal error: the kernel has no output",
            )
        })?;
        Ok((out, lx.shape.clone()))
    }

    fn fused_step(&self, sets: Vec<StepSet<'_>>) -> Result<()> {
        super::optim::step(sets)
    }

    fn generated(
        &self,
        kernel: &crate::backend::generated::GeneratedKernel,
        inputs: &[&Buffer],
        repeated: &[bool],
        scalars: &[f64],
        n: usize,
    ) -> Result<Vec<Buffer>> {
        super::generated::run(kernel, inputs, repeated, scalars, n)
    }

    fn cat(&self, parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out> {
        let (first, first_layout) = parts[0];
        let (dev, first) = dev_of(first)?;
        let mut shape = first_layout.shape.to_vec();
        shape[dim] = parts.iter().map(|(_, l)| l.shape[dim]).sum();
        let n: usize = shape.iter().product();
        let dtype = first.dtype();
        let mut out = DeviceBuffer::alloc(dev, dtype, n)?;
        let out_layout = Layout::contiguous(&shape);
        let yp = out.ptr_mut(&dev.stream);
        let mut start = 0;
        for &(b, l) in parts {
            let len = l.shape[dim];
            let ld = layout_of(dev, "cat", &out_layout.narrow(dim, start, len))?;
            let ls = layout_of(dev, "cat", l)?;
            let sp = device_buffer(dev, "cat", b)?.ptr(&dev.stream);
            let m = l.numel();
            let args = [
                Arg::Layout(ld),
                Arg::U64(yp),
                Arg::Layout(ls),
                Arg::U64(sp),
                Arg::U64(m as u64),
            ];
            launch(dev, "cat", kernels::kernel!("copy").of(dtype), m, &args)?;
            start += len;
        }
        Ok(wrap(out, &shape))
    }

    fn sum_all(&self, x: &Buffer, lx: &Layout) -> Result<Out> {
        let axes: Vec<usize> = (0..lx.shape.len()).collect();
        self.sum_dims(x, lx, &axes, false)
    }

    fn sum_dims(&self, x: &Buffer, lx: &Layout, axes: &[usize], keepdim: bool) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        let xs = &lx.shape;
        let ndim = xs.len();
        let reduced = |d: usize| axes.contains(&d);
        // Kept dims first, reduced dims last: output `o` sums a run of `k` elements.
        let order: Vec<usize> = (0..ndim)
            .filter(|&d| !reduced(d))
            .chain((0..ndim).filter(|&d| reduced(d)))
            .collect();
        let lk = layout_of(dev, "sum", &lx.permute(&order))?;
        let shape: Vec<usize> = (0..ndim)
            .filter_map(|d| match (reduced(d), keepdim) {
                (false, _) => Some(xs[d]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let m: usize = shape.iter().product();
        let k: usize = axes.iter().map(|&d| xs[d]).product();
        let out = match lk.as_columns(m, k) {
            Some((rows, cols, ld, offset)) => {
                let x = xb.ptr(&dev.stream) + (offset * xb.dtype().size_of()) as u64;
                reduce::sum_columns(dev, xb.dtype(), x, ld, rows, cols)?
            }
            None => reduce::sum_runs(dev, xb, lk, m, k)?,
        };
        Ok(wrap(out, &shape))
    }

    fn sum_to(&self, x: &Buffer, lx: &Layout, shape: &[usize]) -> Result<Out> {
        let xs = &lx.shape;
        let lead = xs.len() - shape.len();
        let axes: Vec<usize> = (0..xs.len())
            .filter(|&d| d < lead || (shape[d - lead] == 1 && xs[d] != 1))
            .collect();
        // The kept dims, in order, hold exactly `shape`'s elements in C order.
        let (summed, _) = self.sum_dims(x, lx, &axes, false)?;
        Ok((summed, shape.into()))
    }

    fn softmax(&self, x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        let xd = dense(dev, (xb, lx))?;
        let xb = xd.buffer();
        let (outer, d, inner) = split_at_dim(&lx.shape, dim);
        let dtype = xb.dtype();
        let mut out = DeviceBuffer::alloc(dev, dtype, lx.numel())?;
        let xp = xb.ptr(&dev.stream);
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
            kernels::kernel!("softmax").of(dtype),
            lanes,
            &args,
        )?;
        Ok(wrap(out, &lx.shape))
    }

    fn argmax(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Vec<usize>> {
        let (dev, xb) = dev_of(x)?;
        let xd = dense(dev, (xb, lx))?;
        let xb = xd.buffer();
        let (outer, d, inner) = split_at_dim(&lx.shape, dim);
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
            let xp = xb.ptr(&dev.stream);
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
                kernels::kernel!("argmax").of(xb.dtype()),
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

    fn has_nan(&self, x: &Buffer, lx: &Layout) -> Result<bool> {
        let (dev, xb) = dev_of(x)?;
        let lk = layout_of(dev, "anomaly check", lx)?;
        let n = lx.numel();
        if n == 0 {
            return Ok(false);
        }
        dev.bind()?;
        let mut flag = dev
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(|e| dev.error("anomaly check", e))?;
        {
            let xp = xb.ptr(&dev.stream);
            let args = [
                Arg::Layout(lk),
                Arg::U64(xp),
                Arg::U64(flag.device_ptr_mut(&dev.stream).0),
                Arg::U64(n as u64),
            ];
            launch(
                dev,
                "anomaly check",
                kernels::kernel!("has_nan").of(xb.dtype()),
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

    fn index_select(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        index::index_select(dev, (xb, lx), dim, index)
    }

    fn index_add(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out> {
        let (dev, gb) = dev_of(g)?;
        index::index_add(dev, (gb, lg), shape, dim, index)
    }

    fn gather(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out> {
        let (dev, xb) = dev_of(x)?;
        index::gather(dev, (xb, lx), dim, index)
    }

    fn scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out> {
        let (dev, gb) = dev_of(g)?;
        index::scatter(dev, (gb, lg), shape, dim, index)
    }

    fn narrow_scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Out> {
        let (dev, gb) = dev_of(g)?;
        index::narrow_scatter(dev, (gb, lg), shape, dim, start)
    }

    /// No CUDA kernel yet: `scatter`, `scatter_add`, `index_add` and the gradients of `gather`
    /// and `masked_select` are host-only in this build (their forwards that only read, `gather`
    /// and `masked_select`, run on CUDA through `index_select`).
    fn put(
        &self,
        dst: (&Buffer, &Layout),
        _: (&Buffer, &Layout),
        _: &[usize],
        _: bool,
    ) -> Result<Out> {
        Err(super::refuse_dtype("scatter", dst.0.dtype()))
    }

    fn matmul(&self, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Out> {
        let (dev, ab) = dev_of(a)?;
        let bb = device_buffer(dev, "matmul", b)?;
        matmul::matmul(dev, (ab, la), (bb, lb))
    }
}
