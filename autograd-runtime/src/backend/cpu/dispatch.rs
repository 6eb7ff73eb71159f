//! [`Cpu`], the [`Backend`] of host memory: takes each kernel call to a dense kernel (contiguous
//! buffers, split over threads, SIMD) when the operands allow it, and to the ndarray kernel for
//! strided views otherwise.

use ndarray::{ArrayViewD, IxDyn, ShapeBuilder};
use smallvec::smallvec;

use super::dense::{self, Operand};
use super::{
    elementwise, gather, movement, reduce, standard, std_slice, to_contiguous, BinaryOp, UnaryOp,
};
use crate::backend::{broadcast_shapes, Backend, FusedOp};
use crate::sync::Arc;
use crate::tensor::data::{view, view_mut, with_view, with_view_mut, with_views2};
use crate::tensor::dtype::ElemVec;
use crate::tensor::layout::contiguous_strides;
use crate::tensor::storage::Buffer;
use crate::{DType, Device, Element, Error, Result, Tensor};

/// The CPU backend (a unit type: the kernels keep no state).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cpu;

/// Tensors of up to this many elements take the ndarray kernels, which fill a tensor's inline
/// buffer directly: the hot path of scalar graphs.
const SMALL: usize = 2;

/// A new contiguous tensor of `shape` on `device` holding `v`.
#[inline]
fn tensor_of<T: Element>(v: Vec<T>, shape: &[usize], device: Device) -> Tensor {
    Tensor::from_buffer(T::wrap(ElemVec::from_vec(v)), shape, device)
}

/// `a` as a dense operand of an element-wise kernel whose output has `shape` (a broadcast of
/// `a`'s shape): its slice when it is contiguous with that shape, its one value when it has one
/// element or is a view expanded from one (every stride 0).
#[inline]
fn operand<'a, T: Element>(a: &ArrayViewD<'a, T>, shape: &[usize]) -> Option<Operand<'a, T>> {
    if !a.is_empty() && (a.len() == 1 || a.strides().iter().all(|&s| s == 0)) {
        return a.first().map(|&x| Operand::Scalar(x));
    }
    if a.shape() == shape {
        a.to_slice().map(Operand::Slice)
    } else {
        None
    }
}

/// `f(a, b)` over the broadcast shape with a dense kernel when both operands allow one, else
/// over contiguous copies of both broadcast to that shape.
fn broadcast_dense<T: Element>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    device: Device,
    f: impl Fn(usize, Operand<'_, T>, Operand<'_, T>) -> Vec<T>,
) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let n = shape.iter().product();
    if let (Some(x), Some(y)) = (operand(&a, &shape), operand(&b, &shape)) {
        return Ok(tensor_of(f(n, x, y), &shape, device));
    }
    let expand = |v: &ArrayViewD<'_, T>| {
        to_contiguous(
            v.broadcast(IxDyn(&shape))
                .expect("invariant: shape is the broadcast of both operands"),
        )
    };
    let (x, y) = (expand(&a), expand(&b));
    let (x, y) = (
        x.as_slice().expect("invariant: to_contiguous is standard"),
        y.as_slice().expect("invariant: to_contiguous is standard"),
    );
    Ok(tensor_of(
        f(n, Operand::Slice(x), Operand::Slice(y)),
        &shape,
        device,
    ))
}

fn binary_typed<T: Element>(
    op: BinaryOp,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    device: Device,
) -> Result<Tensor> {
    if a.len() <= SMALL && b.len() <= SMALL {
        return Ok(Tensor::from_ndarray_on(
            elementwise::binary(op, a, b)?,
            device,
        ));
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let n = shape.iter().product();
    if let (Some(x), Some(y)) = (operand(&a, &shape), operand(&b, &shape)) {
        return Ok(tensor_of(dense::binary(op, n, x, y), &shape, device));
    }
    // One operand repeated as a block of the other (a bias row, a column).
    for (big, small, swap) in [(&a, &b, false), (&b, &a, true)] {
        if big.shape() != shape.as_slice() {
            continue;
        }
        if let (Some(x), Some(y)) = (big.to_slice(), small.to_slice()) {
            if let Some((_, mid, inner)) = elementwise::block_broadcast(small.shape(), &shape) {
                let out = dense::block_binary(op, x, y, (mid, inner), swap);
                return Ok(tensor_of(out, &shape, device));
            }
        }
    }
    Ok(Tensor::from_ndarray_on(
        elementwise::binary(op, a, b)?,
        device,
    ))
}

/// `dst (op)= src`, `src` broadcast to `dst` without growing it.
fn inplace_typed<T: Element>(
    op: BinaryOp,
    mut dst: ndarray::ArrayViewMutD<'_, T>,
    src: ArrayViewD<'_, T>,
) -> Result<()> {
    let dense_src = if src.shape() == dst.shape() {
        operand(&src, dst.shape())
    } else if src.len() == 1 && src.ndim() <= dst.ndim() {
        src.first().map(|&x| Operand::Scalar(x))
    } else {
        None
    };
    if let (Some(b), Some(a)) = (dense_src, dst.as_slice_mut()) {
        dense::binary_inplace(op, a, b);
        return Ok(());
    }
    elementwise::binary_inplace(op, dst, src).map_err(Error::from)
}

/// A contiguous copy of `x` on `device`.
fn contiguous_on(x: &Tensor, device: Device) -> Tensor {
    with_view!(x, |a| match a.to_slice() {
        Some(s) if s.len() > SMALL => tensor_of(dense::copy(s), a.shape(), device),
        _ => Tensor::from_ndarray_on(to_contiguous(a), device),
    })
}

/// Runs `f` with a write view of `dst` and a read view of `src` (same dtype, distinct
/// storages), taking the two locks in storage-address order, so that two threads running
/// `a (op)= b` and `b (op)= a` cannot deadlock.
fn with_dst_src<R>(
    op: &'static str,
    dst: &Tensor,
    src: &Tensor,
    f32s: impl FnOnce(ndarray::ArrayViewMutD<'_, f32>, ArrayViewD<'_, f32>) -> Result<R>,
    f64s: impl FnOnce(ndarray::ArrayViewMutD<'_, f64>, ArrayViewD<'_, f64>) -> Result<R>,
) -> Result<R> {
    debug_assert!(
        !dst.shares_storage(src),
        "invariant: the caller copied a shared src"
    );
    let (d, s) = (&dst.0.storage, &src.0.storage);
    let (mut wg, rg);
    if Arc::as_ptr(d) < Arc::as_ptr(s) {
        wg = d.data.write();
        rg = s.data.read();
    } else {
        rg = s.data.read();
        wg = d.data.write();
    }
    match (&mut *wg, &*rg) {
        (Buffer::F32(x), Buffer::F32(y)) => f32s(view_mut(x, dst.layout()), view(y, src.layout())),
        (Buffer::F64(x), Buffer::F64(y)) => f64s(view_mut(x, dst.layout()), view(y, src.layout())),
        _ => Err(Error::DTypeMismatch {
            op,
            lhs: dst.dtype(),
            rhs: src.dtype(),
        }),
    }
}

/// `src` itself, or a private contiguous copy when it shares `dst`'s storage (a kernel cannot
/// read a buffer it is writing).
fn unshared(dst: &Tensor, src: &Tensor) -> Tensor {
    if dst.shares_storage(src) {
        contiguous_on(src, src.device())
    } else {
        src.clone()
    }
}

impl Backend for Cpu {
    fn unary(&self, op: UnaryOp, x: &Tensor) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| {
            if a.len() <= SMALL {
                Tensor::from_ndarray_on(elementwise::unary(op, a), device)
            } else {
                let shape = a.shape().to_vec();
                let a = standard(a);
                tensor_of(dense::unary(op, std_slice(&a)), &shape, device)
            }
        }))
    }

    fn pow_scalar(&self, x: &Tensor, exponent: f64) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            elementwise::pow_scalar(a, exponent),
            device
        )))
    }

    fn binary(&self, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let device = a.device();
        with_views2!("binary op", a, b, |x, y| binary_typed(op, x, y, device))
    }

    fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &Tensor,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| {
            let s = Element::from_f64(s);
            match a.to_slice() {
                Some(v) if v.len() > SMALL => {
                    let (p, q) = if scalar_on_left {
                        (Operand::Scalar(s), Operand::Slice(v))
                    } else {
                        (Operand::Slice(v), Operand::Scalar(s))
                    };
                    tensor_of(dense::binary(op, v.len(), p, q), a.shape(), device)
                }
                _ => Tensor::from_ndarray_on(
                    elementwise::binary_scalar(op, a, s, scalar_on_left),
                    device,
                ),
            }
        }))
    }

    fn fused(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let device = a.device();
        with_views2!("fused op", a, b, |x, y| broadcast_dense(
            x,
            y,
            device,
            |n, p, q| dense::fused(op, n, p, q)
        ))
    }

    fn fused_inplace(&self, op: FusedOp, a: &Tensor, b: &Tensor) -> Result<()> {
        fn typed<T: Element>(
            op: FusedOp,
            mut a: ndarray::ArrayViewMutD<'_, T>,
            b: ArrayViewD<'_, T>,
        ) -> Result<()> {
            let shape = a.shape().to_vec();
            let Some(a) = a.as_slice_mut() else {
                return Err(Error::shape("fused_inplace", "expects a contiguous target"));
            };
            match operand(&b, &shape) {
                Some(b) => dense::fused_inplace(op, a, b),
                None => {
                    // A strided saved tensor (a transposed input): one contiguous copy.
                    let b = b.broadcast(IxDyn(&shape)).ok_or_else(|| {
                        Error::shape("fused_inplace", "operand does not broadcast to the target")
                    })?;
                    let b = to_contiguous(b);
                    let b = b.as_slice().expect("invariant: to_contiguous is standard");
                    dense::fused_inplace(op, a, Operand::Slice(b));
                }
            }
            Ok(())
        }
        with_dst_src(
            "backward formula",
            a,
            b,
            |x, y| typed(op, x, y),
            |x, y| typed(op, x, y),
        )
    }

    fn binary_inplace(&self, op: BinaryOp, dst: &Tensor, src: &Tensor) -> Result<()> {
        let src = unshared(dst, src);
        with_dst_src(
            "in-place op",
            dst,
            &src,
            |d, s| inplace_typed(op, d, s),
            |d, s| inplace_typed(op, d, s),
        )
    }

    fn fill(&self, dst: &Tensor, value: f64) -> Result<()> {
        with_view_mut!(dst, |a| {
            let v = Element::from_f64(value);
            if a.is_standard_layout() {
                dense::fill(a.into_slice().expect("invariant: standard layout"), v);
            } else {
                elementwise::fill(a, v);
            }
        });
        Ok(())
    }

    fn copy_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        let src = unshared(dst, src);
        with_dst_src(
            "copy",
            dst,
            &src,
            |d, s| {
                movement::assign(d, s);
                Ok(())
            },
            |d, s| {
                movement::assign(d, s);
                Ok(())
            },
        )
    }

    fn contiguous(&self, x: &Tensor) -> Result<Tensor> {
        Ok(contiguous_on(x, x.device()))
    }

    fn to_dtype(&self, x: &Tensor, dtype: DType) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| {
            let shape = a.shape().to_vec();
            let a = standard(a);
            let s = std_slice(&a);
            match dtype {
                DType::F32 => tensor_of(dense::convert::<_, f32>(s), &shape, device),
                DType::F64 => tensor_of(dense::convert::<_, f64>(s), &shape, device),
            }
        }))
    }

    fn to_device(&self, x: &Tensor, device: Device) -> Result<Tensor> {
        match device {
            Device::Cpu | Device::Virtual(_) => Ok(contiguous_on(x, device)),
            Device::Cuda(i) => crate::backend::upload_cuda(x, i),
        }
    }

    fn cat(&self, tensors: &[Tensor], dim: usize) -> Result<Tensor> {
        fn typed<T: Element>(tensors: &[Tensor], dim: usize, device: Device) -> Result<Tensor> {
            // Each part is copied out under its own lock: parts may share a storage.
            let arrays = tensors
                .iter()
                .map(|t| t.to_array::<T>())
                .collect::<Result<Vec<_>>>()?;
            let views: Vec<_> = arrays.iter().map(|a| a.view()).collect();
            Ok(Tensor::from_ndarray_on(movement::cat(&views, dim), device))
        }
        let first = tensors
            .first()
            .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
        match first.dtype() {
            DType::F32 => typed::<f32>(tensors, dim, first.device()),
            DType::F64 => typed::<f64>(tensors, dim, first.device()),
        }
    }

    fn sum_all(&self, x: &Tensor) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| {
            let s = reduce::sum_all(a);
            Tensor::from_buffer(Element::wrap(smallvec![s]), &[], device)
        }))
    }

    fn sum_dims(&self, x: &Tensor, axes: &[usize], keepdim: bool) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            reduce::sum_axes(a, axes, keepdim),
            device
        )))
    }

    fn sum_to(&self, x: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            reduce::sum_to(a, shape),
            device
        )))
    }

    fn softmax(&self, x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            if log {
                reduce::log_softmax(a, dim)
            } else {
                reduce::softmax(a, dim)
            },
            device
        )))
    }

    fn argmax(&self, x: &Tensor, dim: usize) -> Result<Vec<usize>> {
        Ok(with_view!(x, |a| reduce::max_dim(a, dim, true)
            .1
            .into_raw_vec_and_offset()
            .0))
    }

    fn max_dim(&self, x: &Tensor, dim: usize) -> Result<(Tensor, Vec<usize>)> {
        let device = x.device();
        Ok(with_view!(x, |a| {
            let (values, index) = reduce::max_dim(a, dim, true);
            (
                Tensor::from_ndarray_on(values, device),
                index.into_raw_vec_and_offset().0,
            )
        }))
    }

    fn has_nan(&self, x: &Tensor) -> Result<bool> {
        Ok(with_view!(x, |a| reduce::has_nan(a)))
    }

    fn index_select(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let device = x.device();
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            movement::index_select(a, dim, index),
            device
        )))
    }

    fn index_add(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        index: &[usize],
    ) -> Result<Tensor> {
        let device = g.device();
        Ok(with_view!(g, |v| Tensor::from_ndarray_on(
            movement::index_add(shape, dim, index, v),
            device
        )))
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &[usize]) -> Result<Tensor> {
        let device = x.device();
        let mut keep = x.shape().to_vec();
        if let Some(d) = keep.get_mut(dim) {
            *d = 1;
        }
        let strides = contiguous_strides(&keep);
        let index = ArrayViewD::from_shape(IxDyn(&keep).strides(IxDyn(&strides)), index)
            .map_err(|_| Error::shape("gather", "index does not match the reduced shape"))?;
        Ok(with_view!(x, |a| Tensor::from_ndarray_on(
            gather::gather_dim(a, dim, index.view()),
            device
        )))
    }

    fn scatter(&self, g: &Tensor, shape: &[usize], dim: usize, index: &[usize]) -> Result<Tensor> {
        let device = g.device();
        let index = ArrayViewD::from_shape(IxDyn(&[index.len()]), index)
            .expect("invariant: a 1-D view of a slice has the slice's length");
        Ok(with_view!(g, |v| Tensor::from_ndarray_on(
            movement::scatter_max_grad(shape, dim, index.view(), v),
            device
        )))
    }

    fn narrow_scatter(
        &self,
        g: &Tensor,
        shape: &[usize],
        dim: usize,
        start: usize,
    ) -> Result<Tensor> {
        let device = g.device();
        Ok(with_view!(g, |v| Tensor::from_ndarray_on(
            movement::narrow_scatter(shape, dim, start, v),
            device
        )))
    }

    fn matmul(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let device = a.device();
        with_views2!("matmul", a, b, |x, y| Ok::<_, Error>(
            Tensor::from_ndarray_on(super::matmul(x, y)?, device)
        ))
    }
}
