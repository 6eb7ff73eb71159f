//! The CPU kernels on buffers: each takes host [`Buffer`]s with their [`Layout`]s and returns a
//! new contiguous buffer with its shape ([`Out`]), or writes through a layout in place. Each goes
//! to a dense kernel (contiguous buffers, split over threads, SIMD) when the operands allow it,
//! and to the ndarray kernel for strided views otherwise.
//!
//! They never see a tensor: the tensor layer's adapter (`tensor/kernels/`) takes the storage
//! locks, checks dtypes and devices, and wraps the results. `Cpu` (`routes.rs`) implements
//! `Backend` with them.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use smallvec::smallvec;

use super::dense::{self, Operand};
use super::{
    BinaryOp, UnaryOp, any, elementwise, gather, movement, reduce, standard, std_slice,
    to_contiguous,
};
use crate::backend::{Buffer, ElemVec, GradFormula, MapOp, Out, broadcast_shapes};
use crate::layout::{Dims, Layout, contiguous_strides, view, view_mut};
use crate::{DType, DataElement, Element, Error, Result};

/// Runs `$body` with `$v` bound to `$view::<T>(buffer, layout)` (`view` or `view_mut`) over host
/// buffer `$b` (of type `$bt`) laid out as `$l`, for whichever element type it holds. `$body` is
/// compiled once per dtype, so it may call generic kernels.
macro_rules! with_host_view {
    ($view:ident, $bt:ty, $b:expr, $l:expr, |$v:ident| $body:expr) => {{
        let (__b, __l): ($bt, &Layout) = ($b, $l);
        match __b {
            Buffer::F32(__d) => {
                let $v = $view::<f32>(__d, __l);
                $body
            }
            Buffer::F64(__d) => {
                let $v = $view::<f64>(__d, __l);
                $body
            }
            Buffer::Cuda(_) => unreachable!("invariant: host kernels only receive host buffers"),
            _ => unreachable!(
                "invariant: float kernels receive f32 or f64 buffers (the adapter widens halves \
                 and routes integers and bools to `any`)"
            ),
        }
    }};
}

/// Runs `$body` with `$v` bound to an ndarray view of host buffer `$b` laid out as `$l`.
macro_rules! with_view {
    ($b:expr, $l:expr, |$v:ident| $body:expr) => {
        with_host_view!(view, &Buffer, $b, $l, |$v| $body)
    };
}

/// Like [`with_view`] for two buffers of the same dtype (the caller checked it).
macro_rules! with_views2 {
    ($a:expr, $la:expr, $b:expr, $lb:expr, |$va:ident, $vb:ident| $body:expr) => {{
        let (__a, __la, __b, __lb): (&Buffer, &Layout, &Buffer, &Layout) = ($a, $la, $b, $lb);
        match (__a, __b) {
            (Buffer::F32(__x), Buffer::F32(__y)) => {
                let $va = view::<f32>(__x, __la);
                let $vb = view::<f32>(__y, __lb);
                $body
            }
            (Buffer::F64(__x), Buffer::F64(__y)) => {
                let $va = view::<f64>(__x, __la);
                let $vb = view::<f64>(__y, __lb);
                $body
            }
            _ => unreachable!("invariant: dtypes were checked equal by the caller"),
        }
    }};
}

/// Runs `$body` with `$v` bound to a mutable view of host buffer `$b` laid out as `$l`.
macro_rules! with_view_mut {
    ($b:expr, $l:expr, |$v:ident| $body:expr) => {
        with_host_view!(view_mut, &mut Buffer, $b, $l, |$v| $body)
    };
}

/// A kernel result (any layout) as an [`Out`], without copying when it is already in standard
/// layout.
#[inline]
pub(crate) fn out_of<T: Element>(a: ArrayD<T>) -> Out {
    let a = if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    };
    let shape: Dims = a.shape().into();
    let (mut v, offset) = a.into_raw_vec_and_offset();
    if let Some(off) = offset.filter(|&o| o != 0) {
        v.drain(..off);
    }
    v.truncate(shape.iter().product());
    (Buffer::host(v.into()), shape)
}

/// Tensors of up to this many elements take the ndarray kernels, which fill a tensor's inline
/// buffer directly: the hot path of scalar graphs.
const SMALL: usize = 2;

/// `v` as an [`Out`] of `shape`.
#[inline]
fn tensor_of<T: Element>(v: Vec<T>, shape: &[usize]) -> Out {
    (Buffer::host(ElemVec::from_vec(v)), shape.into())
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
    f: impl Fn(usize, Operand<'_, T>, Operand<'_, T>) -> Vec<T>,
) -> Result<Out> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let n = shape.iter().product();
    if let (Some(x), Some(y)) = (operand(&a, &shape), operand(&b, &shape)) {
        return Ok(tensor_of(f(n, x, y), &shape));
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
    ))
}

fn binary_typed<T: Element>(
    op: BinaryOp,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
) -> Result<Out> {
    if a.len() <= SMALL && b.len() <= SMALL {
        return Ok(out_of(elementwise::binary(op, a, b)?));
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let n = shape.iter().product();
    if let (Some(x), Some(y)) = (operand(&a, &shape), operand(&b, &shape)) {
        return Ok(tensor_of(dense::binary(op, n, x, y), &shape));
    }
    // One operand repeated as a block of the other (a bias row, a column).
    for (big, small, swap) in [(&a, &b, false), (&b, &a, true)] {
        if big.shape() != shape.as_slice() {
            continue;
        }
        if let (Some(x), Some(y)) = (big.to_slice(), small.to_slice())
            && let Some((_, mid, inner)) = elementwise::block_broadcast(small.shape(), &shape)
        {
            let out = dense::block_binary(op, x, y, (mid, inner), swap);
            return Ok(tensor_of(out, &shape));
        }
    }
    Ok(out_of(elementwise::binary(op, a, b)?))
}

/// `dst (op)= src`, `src` broadcast to `dst` without growing it.
fn inplace_typed<T: Element>(
    op: BinaryOp,
    mut dst: ArrayViewMutD<'_, T>,
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

/// Runs `f` with a write view of `dst` and a read view of `src` (two distinct buffers; the
/// caller took their locks), or [`Error::DTypeMismatch`] naming `op`.
fn with_dst_src<R>(
    op: &'static str,
    (dst, ld): (&mut Buffer, &Layout),
    (src, ls): (&Buffer, &Layout),
    f32s: impl FnOnce(ArrayViewMutD<'_, f32>, ArrayViewD<'_, f32>) -> Result<R>,
    f64s: impl FnOnce(ArrayViewMutD<'_, f64>, ArrayViewD<'_, f64>) -> Result<R>,
) -> Result<R> {
    let (lhs, rhs) = (dst.dtype(), src.dtype());
    match (dst, src) {
        (Buffer::F32(x), Buffer::F32(y)) => f32s(view_mut(x, ld), view(y, ls)),
        (Buffer::F64(x), Buffer::F64(y)) => f64s(view_mut(x, ld), view(y, ls)),
        _ => Err(Error::DTypeMismatch { op, lhs, rhs }),
    }
}

/// `op(x)` element-wise.
pub(crate) fn unary(op: UnaryOp, x: &Buffer, lx: &Layout) -> Out {
    with_view!(x, lx, |a| {
        if a.len() <= SMALL {
            out_of(elementwise::unary(op, a))
        } else {
            let shape = a.shape().to_vec();
            let a = standard(a);
            tensor_of(dense::unary(op, std_slice(&a)), &shape)
        }
    })
}

/// `op` of every element ([`MapOp`]): one pass over the elements in the order the layout
/// lists them, split over the intra-op threads when there are more than a grain of them. `erf`
/// runs on SIMD lanes (`vmath`).
pub(crate) fn map(op: MapOp, x: &Buffer, lx: &Layout) -> Out {
    with_view!(x, lx, |a| {
        let shape = a.shape().to_vec();
        let a = standard(a);
        let src = std_slice(&a);
        // SAFETY: each chunk's every element is written, from the same positions of `src`
        // (`map_into` writes all of its `dst`).
        let v = unsafe {
            super::parallel::collect_chunks(src.len(), |start, chunk| {
                let n = chunk.len();
                let src = &src[start..start + n];
                if let MapOp::Erf = op {
                    super::vmath::map_into(super::vmath::MathFn::Erf, src, chunk);
                    return;
                }
                for (o, &x) in chunk.iter_mut().zip(src) {
                    o.write(map_one(op, x));
                }
            })
        };
        tensor_of(v, &shape)
    })
}

/// `op` of one element.
#[inline]
fn map_one<T: Element + super::vmath::VMath>(op: MapOp, x: T) -> T {
    match op {
        MapOp::Clamp { lo, hi } => {
            let (lo, hi) = (T::from_f64(lo), T::from_f64(hi));
            let y = if x < lo { lo } else { x };
            if y > hi { hi } else { y }
        }
        MapOp::ClampInterior { lo, hi } => {
            if x > T::from_f64(lo) && x < T::from_f64(hi) {
                T::one()
            } else {
                T::zero()
            }
        }
        MapOp::Erf => super::vmath::eval(super::vmath::MathFn::Erf, x),
        MapOp::Softplus { beta, threshold } => {
            super::formulas::softplus(x, T::from_f64(beta), T::from_f64(threshold))
        }
        MapOp::SoftplusSlope { beta, threshold } => {
            super::formulas::softplus_slope(x, T::from_f64(beta), T::from_f64(threshold))
        }
    }
}

/// `x^exponent` element-wise.
pub(crate) fn pow_scalar(x: &Buffer, lx: &Layout, exponent: f64) -> Out {
    with_view!(x, lx, |a| out_of(elementwise::pow_scalar(a, exponent)))
}

/// `a (op) b` with broadcasting (same dtype: checked by the caller).
pub(crate) fn binary(
    op: BinaryOp,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Result<Out> {
    with_views2!(a, la, b, lb, |x, y| binary_typed(op, x, y))
}

/// `x (op) s`, or `s (op) x` when `scalar_on_left`.
pub(crate) fn binary_scalar(
    op: BinaryOp,
    x: &Buffer,
    lx: &Layout,
    s: f64,
    scalar_on_left: bool,
) -> Out {
    with_view!(x, lx, |a| {
        let s = DataElement::from_f64(s);
        match a.to_slice() {
            Some(v) if v.len() > SMALL => {
                let (p, q) = if scalar_on_left {
                    (Operand::Scalar(s), Operand::Slice(v))
                } else {
                    (Operand::Slice(v), Operand::Scalar(s))
                };
                tensor_of(dense::binary(op, v.len(), p, q), a.shape())
            }
            _ => out_of(elementwise::binary_scalar(op, a, s, scalar_on_left)),
        }
    })
}

/// A backward formula of `a` and `b` in one pass (same dtype: checked by the caller).
pub(crate) fn grad_formula(
    op: GradFormula,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Result<Out> {
    with_views2!(a, la, b, lb, |x, y| broadcast_dense(x, y, |n, p, q| {
        dense::grad_formula(op, n, p, q)
    }))
}

/// A closed-form backward formula written over `a` (contiguous, unshared: the caller's proof).
pub(crate) fn grad_formula_inplace(
    op: GradFormula,
    a: (&mut Buffer, &Layout),
    b: (&Buffer, &Layout),
) -> Result<()> {
    fn typed<T: Element>(
        op: GradFormula,
        mut a: ArrayViewMutD<'_, T>,
        b: ArrayViewD<'_, T>,
    ) -> Result<()> {
        let shape = a.shape().to_vec();
        let Some(a) = a.as_slice_mut() else {
            return Err(Error::shape(
                "grad_formula_inplace",
                "expects a contiguous target",
            ));
        };
        match operand(&b, &shape) {
            Some(b) => dense::grad_formula_inplace(op, a, b),
            None => {
                // A strided saved tensor (a transposed input): one contiguous copy.
                let b = b.broadcast(IxDyn(&shape)).ok_or_else(|| {
                    Error::shape(
                        "grad_formula_inplace",
                        "operand does not broadcast to the target",
                    )
                })?;
                let b = to_contiguous(b);
                let b = b.as_slice().expect("invariant: to_contiguous is standard");
                dense::grad_formula_inplace(op, a, Operand::Slice(b));
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

/// `dst (op)= src` through `dst`'s layout, `src` broadcast to it (distinct buffers).
pub(crate) fn binary_inplace(
    op: BinaryOp,
    dst: (&mut Buffer, &Layout),
    src: (&Buffer, &Layout),
) -> Result<()> {
    with_dst_src(
        "in-place op",
        dst,
        src,
        |d, s| inplace_typed(op, d, s),
        |d, s| inplace_typed(op, d, s),
    )
}

/// Sets every element of `dst` (through its layout) to `value`.
pub(crate) fn fill(dst: &mut Buffer, ld: &Layout, value: f64) {
    with_view_mut!(dst, ld, |a| {
        let v = DataElement::from_f64(value);
        if a.is_standard_layout() {
            dense::fill(a.into_slice().expect("invariant: standard layout"), v);
        } else {
            elementwise::fill(a, v);
        }
    });
}

/// Writes `src`'s values into `dst`'s elements (same shape; distinct buffers).
pub(crate) fn copy_into(dst: (&mut Buffer, &Layout), src: (&Buffer, &Layout)) -> Result<()> {
    with_dst_src(
        "copy",
        dst,
        src,
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

/// Whether `b` holds `f32` or `f64` elements: what the float kernels take.
#[inline]
pub(super) fn is_float(b: &Buffer) -> bool {
    matches!(b, Buffer::F32(_) | Buffer::F64(_))
}

/// A contiguous copy.
pub(crate) fn contiguous(x: &Buffer, lx: &Layout) -> Out {
    if !is_float(x) {
        return any::contiguous(x, lx);
    }
    with_view!(x, lx, |a| match a.to_slice() {
        Some(s) if s.len() > SMALL => tensor_of(dense::copy(s), a.shape()),
        _ => out_of(to_contiguous(a)),
    })
}

/// `parts` (same dtype as the first, else [`Error::WrongDType`]) concatenated along `dim`.
pub(crate) fn cat(parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out> {
    fn typed<T: Element>(parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out> {
        let views = parts
            .iter()
            .map(|&(b, l)| {
                let data = b.as_slice::<T>().ok_or(Error::WrongDType {
                    expected: T::DTYPE,
                    actual: b.dtype(),
                })?;
                Ok(view(data, l))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(out_of(movement::cat(&views, dim)))
    }
    let (first, _) = parts
        .first()
        .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
    match first.dtype() {
        DType::F32 => typed::<f32>(parts, dim),
        DType::F64 => typed::<f64>(parts, dim),
        _ => any::cat(parts, dim),
    }
}

/// The sum of all elements, 0-dim.
pub(crate) fn sum_all(x: &Buffer, lx: &Layout) -> Out {
    with_view!(x, lx, |a| {
        let s = reduce::sum_all(a);
        (Buffer::host(smallvec![s]), Dims::new())
    })
}

/// Sums over `axes`, dropping them unless `keepdim`.
pub(crate) fn sum_dims(x: &Buffer, lx: &Layout, axes: &[usize], keepdim: bool) -> Out {
    with_view!(x, lx, |a| out_of(reduce::sum_axes(a, axes, keepdim)))
}

/// Reduces a broadcast `x` back to `shape`.
pub(crate) fn sum_to(x: &Buffer, lx: &Layout, shape: &[usize]) -> Out {
    with_view!(x, lx, |a| out_of(reduce::sum_to(a, shape)))
}

/// Softmax (or log-softmax) over `dim`.
pub(crate) fn softmax(x: &Buffer, lx: &Layout, dim: usize, log: bool) -> Out {
    with_view!(x, lx, |a| out_of(if log {
        reduce::log_softmax(a, dim)
    } else {
        reduce::softmax(a, dim)
    }))
}

/// The positions of the first maximum along `dim`, in the C order of the keepdim shape.
pub(crate) fn argmax(x: &Buffer, lx: &Layout, dim: usize) -> Vec<usize> {
    with_view!(x, lx, |a| reduce::max_dim(a, dim, true)
        .1
        .into_raw_vec_and_offset()
        .0)
}

/// The maxima along `dim` (keepdim-shaped) and their positions.
pub(crate) fn max_dim(x: &Buffer, lx: &Layout, dim: usize) -> (Out, Vec<usize>) {
    with_view!(x, lx, |a| {
        let (values, index) = reduce::max_dim(a, dim, true);
        (out_of(values), index.into_raw_vec_and_offset().0)
    })
}

/// Whether any element is NaN.
pub(crate) fn has_nan(x: &Buffer, lx: &Layout) -> bool {
    with_view!(x, lx, |a| reduce::has_nan(a))
}

/// The slices of `x` at `index` along `dim`.
pub(crate) fn index_select(x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Out {
    with_view!(x, lx, |a| out_of(movement::index_select(a, dim, index)))
}

/// Zeros of `shape` with `g`'s slices added at `index` along `dim`.
pub(crate) fn index_add(
    g: &Buffer,
    lg: &Layout,
    shape: &[usize],
    dim: usize,
    index: &[usize],
) -> Out {
    with_view!(g, lg, |v| out_of(movement::index_add(shape, dim, index, v)))
}

/// `x` at one position per lane of `dim` (`index` in the C order of the keepdim shape).
pub(crate) fn gather(x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Result<Out> {
    let mut keep = lx.shape.to_vec();
    if let Some(d) = keep.get_mut(dim) {
        *d = 1;
    }
    let strides = contiguous_strides(&keep);
    let index = ArrayViewD::from_shape(IxDyn(&keep).strides(IxDyn(&strides)), index)
        .map_err(|_| Error::shape("gather", "index does not match the reduced shape"))?;
    Ok(with_view!(x, lx, |a| out_of(gather::gather_dim(
        a,
        dim,
        index.view()
    ))))
}

/// Zeros of `shape` with the keepdim-shaped `g` written at `index` along `dim`.
pub(crate) fn scatter(
    g: &Buffer,
    lg: &Layout,
    shape: &[usize],
    dim: usize,
    index: &[usize],
) -> Out {
    let index = ArrayViewD::from_shape(IxDyn(&[index.len()]), index)
        .expect("invariant: a 1-D view of a slice has the slice's length");
    with_view!(g, lg, |v| out_of(movement::scatter_max_grad(
        shape,
        dim,
        index.view(),
        v
    )))
}

/// Zeros of `shape` with `g` written at `start..` along `dim`.
pub(crate) fn narrow_scatter(
    g: &Buffer,
    lg: &Layout,
    shape: &[usize],
    dim: usize,
    start: usize,
) -> Out {
    with_view!(g, lg, |v| out_of(movement::narrow_scatter(
        shape, dim, start, v
    )))
}

/// PyTorch's `matmul` (same dtype: checked by the caller).
pub(crate) fn matmul(a: &Buffer, la: &Layout, b: &Buffer, lb: &Layout) -> Result<Out> {
    with_views2!(a, la, b, lb, |x, y| Ok::<_, Error>(out_of(super::matmul(
        x, y
    )?)))
}
