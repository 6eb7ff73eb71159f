//! Kernels for every dtype: copies and conversions, `cat` and the index ops, integer and bool
//! arithmetic, comparisons, `where`, and the integer reductions.
//!
//! The float kernels (`dense`, `elementwise`, `reduce`) are generic over [`Element`](crate::Element)
//! (`f32`, `f64`) and tuned; these are generic over [`DataElement`] (all eight host types) and
//! plain: one pass over an ndarray view in C order. Integer arithmetic runs in `i64` and wraps
//! back into the operand type, which for `+ - *` is the wrapping arithmetic of the narrower type
//! (PyTorch's integer kernels wrap too); bool `+` is "or" and `*` is "and", as in PyTorch.

use half::{bf16, f16};
use ndarray::{ArrayViewD, Axis, IxDyn};

use crate::backend::{BinaryOp, Buffer, CompareOp, ElemVec, Out, UnaryOp, broadcast_shapes};
use crate::layout::{Dims, Layout, view, view_mut};
use crate::{DType, DataElement, Error, Result};

/// Runs `$body` with `$d` bound to the elements of host buffer `$b` and the type alias `$T` to
/// their Rust type, for whichever of the eight host types it holds (compiled once per type).
macro_rules! with_data {
    ($b:expr, |$d:ident: $T:ident| $body:expr) => {
        match $b {
            Buffer::F32($d) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            Buffer::F64($d) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            Buffer::F16($d) => {
                #[allow(dead_code)]
                type $T = f16;
                $body
            }
            Buffer::BF16($d) => {
                #[allow(dead_code)]
                type $T = bf16;
                $body
            }
            Buffer::I64($d) => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            Buffer::I32($d) => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            Buffer::U8($d) => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
            Buffer::Bool($d) => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            Buffer::Cuda(_) => unreachable!("invariant: host kernels only receive host buffers"),
        }
    };
}
pub(super) use with_data;

/// Runs `$body` with the type alias `$T` bound to `$dtype`'s Rust type.
macro_rules! with_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {
        match $dtype {
            DType::F32 => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            DType::F64 => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
            DType::F16 => {
                #[allow(dead_code)]
                type $T = f16;
                $body
            }
            DType::BF16 => {
                #[allow(dead_code)]
                type $T = bf16;
                $body
            }
            DType::I64 => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            DType::I32 => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            DType::U8 => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
            DType::Bool => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
        }
    };
}

pub(super) use with_dtype;

/// `v` as an [`Out`] of `shape`.
fn out<T: DataElement>(v: Vec<T>, shape: &[usize]) -> Out {
    (Buffer::host(ElemVec::from_vec(v)), shape.into())
}

/// The elements `l` selects from `d`, in C order.
fn collect<T: DataElement>(d: &[T], l: &Layout) -> Vec<T> {
    if l.is_contiguous() {
        return d[l.offset..l.offset + l.numel()].to_vec();
    }
    view(d, l).iter().copied().collect()
}

/// `x` and `y` broadcast to their common shape, element pairs in C order through `f`.
fn zip_broadcast<A: Copy, B: Copy, R>(
    x: ArrayViewD<'_, A>,
    y: ArrayViewD<'_, B>,
    mut f: impl FnMut(A, B) -> Result<R>,
) -> Result<(Vec<R>, Vec<usize>)> {
    let shape = broadcast_shapes(x.shape(), y.shape())?;
    let bx = x
        .broadcast(IxDyn(&shape))
        .expect("invariant: shape is the broadcast of both operands");
    let by = y
        .broadcast(IxDyn(&shape))
        .expect("invariant: shape is the broadcast of both operands");
    let v = bx
        .iter()
        .zip(by.iter())
        .map(|(&a, &b)| f(a, b))
        .collect::<Result<Vec<R>>>()?;
    Ok((v, shape))
}

/// A contiguous copy.
pub(crate) fn contiguous(x: &Buffer, lx: &Layout) -> Out {
    with_data!(x, |d: T| out::<T>(collect(d, lx), &lx.shape))
}

/// Sets every element of `dst` (through its layout) to `value` cast to its dtype.
pub(crate) fn fill(dst: &mut Buffer, ld: &Layout, value: f64) {
    with_data!(dst, |d: T| view_mut(d, ld).fill(T::from_f64(value)))
}

/// Writes `src`'s values into `dst`'s elements (same shape; distinct buffers).
pub(crate) fn copy_into(
    (dst, ld): (&mut Buffer, &Layout),
    (src, ls): (&Buffer, &Layout),
) -> Result<()> {
    let (lhs, rhs) = (dst.dtype(), src.dtype());
    with_data!(dst, |d: T| {
        let s = src.as_slice::<T>().ok_or(Error::DTypeMismatch {
            op: "copy",
            lhs,
            rhs,
        })?;
        view_mut(d, ld).assign(&view(s, ls));
        Ok(())
    })
}

/// `parts` (one dtype) concatenated along `dim`.
pub(crate) fn cat(parts: &[(&Buffer, &Layout)], dim: usize) -> Result<Out> {
    let (first, _) = parts
        .first()
        .ok_or_else(|| Error::shape("cat", "expected a non-empty list of tensors"))?;
    with_data!(*first, |_d: T| {
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
        let joined = ndarray::concatenate(Axis(dim), &views)
            .map_err(|e| Error::shape("cat", e.to_string()))?;
        let shape = joined.shape().to_vec();
        Ok(out::<T>(joined.iter().copied().collect(), &shape))
    })
}

/// The slices of `x` at `index` along `dim`, in that order: each slice of the inner dimensions
/// copied as one run (ndarray's `select` builds a view per index and concatenates them, which
/// cost the `tril` of the GPT main job's 64 x 64 boolean attention mask about 6% of a training
/// step).
///
/// # Panics
///
/// If an index is out of bounds for `dim` (checked by the caller).
pub(crate) fn index_select(x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Out {
    with_data!(x, |d: T| {
        let src = collect::<T>(d, lx);
        let (len, inner) = (lx.shape[dim], lx.shape[dim + 1..].iter().product::<usize>());
        let mut shape = lx.shape.to_vec();
        shape[dim] = index.len();
        let mut v = Vec::with_capacity(shape.iter().product());
        if len * inner > 0 {
            for block in src.chunks_exact(len * inner) {
                for &i in index {
                    v.extend_from_slice(&block[i * inner..(i + 1) * inner]);
                }
            }
        }
        out::<T>(v, &shape)
    })
}

/// `x` at one position per lane of `dim` (`index` in the C order of the keepdim shape).
pub(crate) fn gather(x: &Buffer, lx: &Layout, dim: usize, index: &[usize]) -> Out {
    with_data!(x, |d: T| {
        let a = view(d, lx);
        if a.ndim() == 0 {
            return out::<T>(a.iter().copied().collect(), &[]);
        }
        let mut keep = lx.shape.to_vec();
        keep[dim] = 1;
        let mut v = Vec::with_capacity(index.len());
        let mut pos = vec![0usize; keep.len()];
        for &k in index {
            let mut src = pos.clone();
            src[dim] = k;
            v.push(a[IxDyn(&src)]);
            // Next position of `keep` in C order.
            for i in (0..keep.len()).rev() {
                pos[i] += 1;
                if pos[i] < keep[i] {
                    break;
                }
                pos[i] = 0;
            }
        }
        out::<T>(v, &keep)
    })
}

/// `op(x)` for an integer or bool tensor: `neg`, `abs`, `sign`, `relu` keep the dtype (the
/// floating functions are computed in a float dtype by the caller).
pub(crate) fn unary(op: UnaryOp, x: &Buffer, lx: &Layout) -> Result<Out> {
    let dtype = x.dtype();
    let refuse = || Error::NotImplementedForDType {
        op: format!("{op:?}").to_lowercase(),
        dtype,
    };
    if dtype == DType::Bool {
        return match op {
            UnaryOp::Neg => Err(Error::InvalidArgument(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are \
                 trying to invert a mask, use the `~` or `logical_not()` operator instead."
                    .into(),
            )),
            // PyTorch names its CPU kernel: "abs_cpu" not implemented for 'Bool'.
            UnaryOp::Abs => Err(Error::NotImplementedForDType {
                op: "abs_cpu".into(),
                dtype,
            }),
            UnaryOp::Sign | UnaryOp::Relu => Ok(contiguous(x, lx)),
            _ => Err(refuse()),
        };
    }
    let f: fn(i64) -> i64 = match op {
        UnaryOp::Neg => i64::wrapping_neg,
        UnaryOp::Abs => i64::wrapping_abs,
        UnaryOp::Sign => i64::signum,
        UnaryOp::Relu => |v| v.max(0),
        _ => return Err(refuse()),
    };
    with_data!(x, |d: T| Ok(out::<T>(
        view(d, lx)
            .iter()
            .map(|&v| T::from_i64(f(v.to_i64())))
            .collect(),
        &lx.shape
    )))
}

/// One integer op on two `i64` values (wrapping), or the error PyTorch raises.
fn int_op(op: BinaryOp, a: i64, b: i64) -> Result<i64> {
    let by_zero = || Error::InvalidArgument("ZeroDivisionError".into());
    Ok(match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Minimum => a.min(b),
        BinaryOp::Maximum => a.max(b),
        // `i64::MIN % -1` is 0 (wrapping), as in PyTorch; only 0 is refused.
        BinaryOp::Fmod | BinaryOp::Remainder if b == 0 => return Err(by_zero()),
        BinaryOp::Fmod => a.wrapping_rem(b),
        BinaryOp::Remainder => {
            let r = a.wrapping_rem(b);
            if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            }
        }
        BinaryOp::Div | BinaryOp::Atan2 | BinaryOp::MinShare => {
            return Err(Error::NotImplementedForDType {
                op: format!("{op:?}").to_lowercase(),
                dtype: DType::I64,
            });
        }
    })
}

/// One bool op, or PyTorch's error.
fn bool_op(op: BinaryOp, a: bool, b: bool) -> Result<bool> {
    match op {
        BinaryOp::Add | BinaryOp::Maximum => Ok(a | b),
        BinaryOp::Mul | BinaryOp::Minimum => Ok(a & b),
        BinaryOp::Sub => Err(Error::InvalidArgument(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` \
             or `logical_xor()` operator instead."
                .into(),
        )),
        // PyTorch names its CPU kernels: "remainder_cpu" not implemented for 'Bool'.
        BinaryOp::Remainder | BinaryOp::Fmod => Err(Error::NotImplementedForDType {
            op: format!("{op:?}_cpu").to_lowercase(),
            dtype: DType::Bool,
        }),
        _ => Err(Error::NotImplementedForDType {
            op: format!("{op:?}").to_lowercase(),
            dtype: DType::Bool,
        }),
    }
}

/// `a (op) b` for two integer or two bool buffers of one dtype, broadcasting.
pub(crate) fn binary(
    op: BinaryOp,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Result<Out> {
    let (lhs, rhs) = (a.dtype(), b.dtype());
    with_data!(a, |x: T| {
        let y = b.as_slice::<T>().ok_or(Error::DTypeMismatch {
            op: "binary op",
            lhs,
            rhs,
        })?;
        let (v, shape) = if lhs == DType::Bool {
            zip_broadcast(view(x, la), view(y, lb), |p: T, q: T| {
                Ok(T::from_i64(i64::from(bool_op(
                    op,
                    p.to_i64() != 0,
                    q.to_i64() != 0,
                )?)))
            })?
        } else {
            zip_broadcast(view(x, la), view(y, lb), |p: T, q: T| {
                Ok(T::from_i64(int_op(op, p.to_i64(), q.to_i64())?))
            })?
        };
        Ok(out::<T>(v, &shape))
    })
}

/// `x (op) s` (or `s (op) x`) for an integer or bool buffer; `s` is cast to its dtype.
pub(crate) fn binary_scalar(
    op: BinaryOp,
    x: &Buffer,
    lx: &Layout,
    s: f64,
    scalar_on_left: bool,
) -> Result<Out> {
    let scalar = Buffer::host(ElemVec::from_vec(vec![s as i64]));
    let scalar = super::convert::to_dtype(&scalar, &Layout::contiguous(&[]), x.dtype()).0;
    let ls = Layout::contiguous(&[]);
    if scalar_on_left {
        binary(op, &scalar, &ls, x, lx)
    } else {
        binary(op, x, lx, &scalar, &ls)
    }
}

/// `a (op) b` for two buffers of one dtype (any), broadcasting: a bool buffer.
pub(crate) fn compare(
    op: CompareOp,
    a: &Buffer,
    la: &Layout,
    b: &Buffer,
    lb: &Layout,
) -> Result<Out> {
    let (lhs, rhs) = (a.dtype(), b.dtype());
    with_data!(a, |x: T| {
        let y = b.as_slice::<T>().ok_or(Error::DTypeMismatch {
            op: "comparison",
            lhs,
            rhs,
        })?;
        // Floats compare as `f64` (exact for every float dtype; NaN compares unequal); integers
        // as `i64` (exact).
        let (v, shape) = if lhs.is_floating_point() {
            zip_broadcast(view(x, la), view(y, lb), |p: T, q: T| {
                Ok(op.holds(p.to_f64(), q.to_f64()))
            })?
        } else {
            zip_broadcast(view(x, la), view(y, lb), |p: T, q: T| {
                Ok(op.holds(p.to_i64(), q.to_i64()))
            })?
        };
        Ok(out::<bool>(v, &shape))
    })
}

/// `cond ? a : b` element-wise with three-way broadcasting (`a` and `b` of one dtype).
pub(crate) fn where_(
    (cond, lc): (&Buffer, &Layout),
    (a, la): (&Buffer, &Layout),
    (b, lb): (&Buffer, &Layout),
) -> Result<Out> {
    let c = cond.as_slice::<bool>().ok_or(Error::WrongDType {
        expected: DType::Bool,
        actual: cond.dtype(),
    })?;
    let (lhs, rhs) = (a.dtype(), b.dtype());
    with_data!(a, |x: T| {
        let y = b.as_slice::<T>().ok_or(Error::DTypeMismatch {
            op: "where",
            lhs,
            rhs,
        })?;
        let (x, y, c) = (view(x, la), view(y, lb), view(c, lc));
        let shape = broadcast_shapes(&broadcast_shapes(x.shape(), y.shape())?, c.shape())?;
        let at = |s: &[usize]| IxDyn(s);
        let (bx, by, bc) = (
            x.broadcast(at(&shape)).expect("invariant: broadcast shape"),
            y.broadcast(at(&shape)).expect("invariant: broadcast shape"),
            c.broadcast(at(&shape)).expect("invariant: broadcast shape"),
        );
        // `Zip` walks the three (broadcast) views a contiguous inner run at a time, where zipped
        // element iterators would step an `IxDyn` index per element (a masked softmax's mask
        // is broadcast over batch and heads: the hot case).
        let n: usize = shape.iter().product();
        let Some(&fill) = bx.iter().next() else {
            return Ok(out::<T>(Vec::new(), &shape));
        };
        let mut v: Vec<T> = vec![fill; n];
        let dst = ndarray::ArrayViewMutD::from_shape(at(&shape), &mut v)
            .expect("invariant: a standard-layout buffer of the broadcast shape");
        ndarray::Zip::from(dst)
            .and(&bc)
            .and(&bx)
            .and(&by)
            .for_each(|o, &k, &p, &q| *o = if k { p } else { q });
        Ok(out::<T>(v, &shape))
    })
}

/// The sum over `axes` (all of them when `None`) of an integer or bool buffer, as `i64`
/// (PyTorch sums integers and bools into `int64`), dropping the axes unless `keepdim`.
pub(crate) fn sum_int(x: &Buffer, lx: &Layout, axes: Option<&[usize]>, keepdim: bool) -> Out {
    with_data!(x, |d: T| {
        let mut a = view(d, lx).mapv(|v: T| v.to_i64());
        let all: Vec<usize> = (0..a.ndim()).collect();
        let mut axes = axes.unwrap_or(&all).to_vec();
        axes.sort_unstable_by(|p, q| q.cmp(p));
        for &ax in &axes {
            a = a.sum_axis(Axis(ax));
            if keepdim {
                a.insert_axis_inplace(Axis(ax));
            }
        }
        let shape = a.shape().to_vec();
        out::<i64>(a.iter().copied().collect(), &shape)
    })
}

/// The positions of the first maximum (or minimum, `largest == false`) along `dim`, in the C
/// order of the keepdim shape; NaN counts as the extreme, as in PyTorch.
pub(crate) fn arg_extreme(x: &Buffer, lx: &Layout, dim: usize, largest: bool) -> Vec<usize> {
    with_data!(x, |d: T| {
        let a = view(d, lx);
        if a.ndim() == 0 {
            return vec![0];
        }
        let better = |p: f64, q: f64| {
            if q.is_nan() {
                false
            } else if p.is_nan() {
                true
            } else if largest {
                p > q
            } else {
                p < q
            }
        };
        let lanes = a.lanes(Axis(dim));
        let mut keep: Dims = lx.shape.clone();
        keep[dim] = 1;
        let mut best = Vec::with_capacity(keep.iter().product());
        for lane in lanes {
            let mut at = 0;
            let mut v = f64::NAN;
            for (i, &e) in lane.iter().enumerate() {
                let e = e.to_f64();
                if i == 0 || better(e, v) {
                    at = i;
                    v = e;
                }
                if v.is_nan() {
                    break;
                }
            }
            best.push(at);
        }
        best
    })
}
