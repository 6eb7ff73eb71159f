//! [`Cpu`], the [`Backend`] over host memory: each method routed by the buffers' dtype, to the
//! float kernels of `dispatch.rs` (`f32`, `f64`: dense or ndarray) or to the any-dtype kernels
//! (`any.rs`, `sort.rs`, `scatter.rs`). Half buffers never reach a float kernel: the adapter
//! widens them first (`tensor/widen.rs`).

use super::any;
use super::dispatch::{
    argmax, binary, binary_inplace, binary_scalar, cat, contiguous, copy_into, fill, gather,
    grad_formula, grad_formula_inplace, has_nan, index_add, index_select, is_float, map, matmul,
    max_dim, narrow_scatter, pow_scalar, scatter, softmax, sum_all, sum_dims, sum_to, unary,
};
use super::rows;
use crate::backend::step::StepSet;
use crate::backend::{
    Backend, BinaryOp, Buffer, CompareOp, GradFormula, MapOp, NormSpec, Out, Patches, RowMask,
    UnaryOp,
};
use crate::layout::Layout;
use crate::{DType, Device, Result};

/// The CPU backend (a unit type: the kernels keep no state).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cpu;

impl Backend for Cpu {
    fn unary(&self, op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Out> {
        if !is_float(x) {
            return any::unary(op, x, lx);
        }
        Ok(unary(op, x, lx))
    }

    fn map(&self, op: MapOp, x: &Buffer, lx: &Layout) -> Result<Out> {
        Ok(map(op, x, lx))
    }

    fn fused_step(&self, sets: Vec<StepSet<'_>>) -> Result<()> {
        super::optim::fused_step(sets)
    }

    fn pow_scalar(&self, x: &Buffer, lx: &Layout, exponent: f64) -> Result<Out> {
        Ok(pow_scalar(x, lx, exponent))
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out> {
        if !is_float(a) {
            return any::binary(op, a, la, b, lb);
        }
        binary(op, a, la, b, lb)
    }

    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Buffer,
        lx: &Layout,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Out> {
        if !is_float(x) {
            return any::binary_scalar(op, x, lx, s, scalar_on_left);
        }
        Ok(binary_scalar(op, x, lx, s, scalar_on_left))
    }

    fn grad_formula(
        &self,
        op: GradFormula,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out> {
        grad_formula(op, a, la, b, lb)
    }

    fn grad_formula_inplace(
        &self,
        op: GradFormula,
        a: (&mut Buffer, &Layout),
        b: (&Buffer, &Layout),
    ) -> Result<()> {
        grad_formula_inplace(op, a, b)
    }

    fn binary_inplace(
        &self,
        op: BinaryOp,
        dst: (&mut Buffer, &Layout),
        src: (&Buffer, &Layout),
    ) -> Result<()> {
        binary_inplace(op, dst, src)
    }

    fn fill(&self, dst: &mut Buffer, ld: &Layout, value: f64) -> Result<()> {
        if !is_float(dst) {
            any::fill(dst, ld, value);
            return Ok(());
        }
        fill(dst, ld, value);
        Ok(())
    }

    fn copy_into(&self, dst: (&mut Buffer, &Layout), src: (&Buffer, &Layout)) -> Result<()> {
        if !is_float(dst.0) {
            return any::copy_into(dst, src);
        }
        copy_into(dst, src)
    }

    fn contiguous(&self, x: &Buffer, lx: &Layout) -> Result<Out> {
        Ok(contiguous(x, lx))
    }

    fn to_dtype(&self, x: &Buffer, lx: &Layout, dtype: DType) -> Result<Out> {
        Ok(super::convert::to_dtype(x, lx, dtype))
    }

    fn to_device(&self, x: &Buffer, lx: &Layout, device: Device) -> Result<Out> {
        match device {
            Device::Cpu | Device::Virtual(_) => Ok(contiguous(x, lx)),
            Device::Cuda(i) => crate::backend::upload_cuda(x, lx, i),
        }
    }

    fn cat(&self, parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out> {
        cat(parts, dim)
    }

    fn generated(
        &self,
        kernel: &crate::backend::generated::GeneratedKernel,
        inputs: &[&Buffer],
        repeated: &[bool],
        scalars: &[f64],
        n: usize,
    ) -> Result<Vec<Buffer>> {
        match inputs.first().map(|b| b.dtype()) {
            Some(DType::F64) => super::generated::run::<f64>(kernel, inputs, repeated, scalars, n),
            _ => super::generated::run::<f32>(kernel, inputs, repeated, scalars, n),
        }
    }

    fn sum_all(&self, x: &Buffer, lx: &Layout) -> Result<Out> {
        if !is_float(x) {
            return Ok(any::sum_int(x, lx, None, false));
        }
        Ok(sum_all(x, lx))
    }

    fn sum_dims(&self, x: &Buffer, lx: &Layout, axes: &[usize], keepdim: bool) -> Result<Out> {
        if !is_float(x) {
            return Ok(any::sum_int(x, lx, Some(axes), keepdim));
        }
        Ok(sum_dims(x, lx, axes, keepdim))
    }

    fn sum_to(&self, x: &Buffer, lx: &Layout, shape: &[usize]) -> Result<Out> {
        Ok(sum_to(x, lx, shape))
    }

    fn softmax(&self, x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Result<Out> {
        Ok(softmax(x, lx, dim, log))
    }

    fn fused_rows(&self) -> bool {
        true
    }

    fn softmax_masked(
        &self,
        x: &Buffer,
        lx: &Layout,
        mask: RowMask<'_>,
        log: bool,
        safe: bool,
    ) -> Result<Out> {
        Ok(rows::softmax_masked(x, lx, mask, log, safe))
    }

    fn softmax_backward(
        &self,
        g: &Buffer,
        lg: &Layout,
        y: &Buffer,
        ly: &Layout,
        dim: usize,
        log: bool,
    ) -> Result<Out> {
        Ok(rows::softmax_backward(g, lg, y, ly, dim, log))
    }

    fn norm(
        &self,
        x: &Buffer,
        lx: &Layout,
        weight: Option<(&Buffer, &Layout)>,
        bias: Option<(&Buffer, &Layout)>,
        spec: NormSpec,
    ) -> Result<Out> {
        Ok(rows::norm(x, lx, weight, bias, spec))
    }

    fn norm_backward(
        &self,
        g: (&Buffer, &Layout),
        x: (&Buffer, &Layout),
        weight: Option<(&Buffer, &Layout)>,
        spec: NormSpec,
        needs: [bool; 3],
    ) -> Result<[Option<Out>; 3]> {
        Ok(rows::norm_backward(g, x, weight, spec, needs))
    }

    fn argmax(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Vec<usize>> {
        if !is_float(x) {
            return Ok(any::arg_extreme(x, lx, dim, true));
        }
        Ok(argmax(x, lx, dim))
    }

    fn argmin(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<Vec<usize>> {
        Ok(any::arg_extreme(x, lx, dim, false))
    }

    fn sort(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        descending: bool,
        _stable: bool,
    ) -> Result<(Out, Vec<usize>)> {
        // Always stable (see `sort.rs`), which `stable == false` allows.
        Ok(super::sort::sort(x, lx, dim, descending))
    }

    fn topk(
        &self,
        x: &Buffer,
        lx: &Layout,
        dim: usize,
        k: usize,
        largest: bool,
        sorted: bool,
    ) -> Result<Vec<usize>> {
        Ok(super::sort::topk(x, lx, dim, k, largest, sorted))
    }

    fn max_dim(&self, x: &Buffer, lx: &Layout, dim: usize) -> Result<(Out, Vec<usize>)> {
        if !is_float(x) {
            let index = any::arg_extreme(x, lx, dim, true);
            return Ok((any::gather(x, lx, dim, &index), index));
        }
        Ok(max_dim(x, lx, dim))
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &Buffer,
        la: &Layout,
        b: &Buffer,
        lb: &Layout,
    ) -> Result<Out> {
        any::compare(op, a, la, b, lb)
    }

    fn where_(
        &self,
        cond: (&Buffer, &Layout),
        a: (&Buffer, &Layout),
        b: (&Buffer, &Layout),
    ) -> Result<Out> {
        any::where_(cond, a, b)
    }

    fn has_nan(&self, x: &Buffer, lx: &Layout) -> Result<bool> {
        Ok(has_nan(x, lx))
    }

    fn index_select(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out> {
        if !is_float(x) {
            return Ok(any::index_select(x, lx, dim, index));
        }
        Ok(index_select(x, lx, dim, index))
    }

    fn index_add(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out> {
        Ok(index_add(g, lg, shape, dim, index))
    }

    fn gather(&self, x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out> {
        if !is_float(x) {
            return Ok(any::gather(x, lx, dim, index));
        }
        gather(x, lx, dim, index)
    }

    fn scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Out> {
        Ok(scatter(g, lg, shape, dim, index))
    }

    fn narrow_scatter(
        &self,
        g: &Buffer,
        lg: &Layout,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Out> {
        Ok(narrow_scatter(g, lg, shape, dim, start))
    }

    fn put(
        &self,
        dst: (&Buffer, &Layout),
        src: (&Buffer, &Layout),
        flat: &[usize],
        accumulate: bool,
    ) -> Result<Out> {
        super::scatter::put(dst, src, flat, accumulate)
    }

    fn matmul(&self, a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Out> {
        matmul(a, la, b, lb)
    }

    fn im2col(&self, x: &Buffer, lx: &Layout, p: &Patches) -> Result<Out> {
        super::conv::im2col_buffer(x, lx, p)
    }

    fn col2im(&self, cols: &Buffer, lc: &Layout, p: &Patches) -> Result<Out> {
        super::conv::col2im_buffer(cols, lc, p)
    }

    fn conv2d(
        &self,
        x: (&Buffer, &Layout),
        w: (&Buffer, &Layout),
        bias: Option<(&Buffer, &Layout)>,
        p: &Patches,
        groups: usize,
    ) -> Result<Out> {
        super::conv::conv2d_buffer(x, w, bias, p, groups)
    }

    fn conv2d_backward(
        &self,
        g: (&Buffer, &Layout),
        x: (&Buffer, &Layout),
        w: (&Buffer, &Layout),
        p: &Patches,
        groups: usize,
        needs: [bool; 3],
    ) -> Result<[Option<Out>; 3]> {
        super::conv::conv2d_backward_buffer(g, x, w, p, groups, needs)
    }

    fn fused_conv(&self) -> bool {
        true
    }
}
