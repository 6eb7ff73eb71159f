//! The fused row kernels on buffers ([`Backend::softmax_masked`], [`Backend::softmax_backward`],
//! [`Backend::norm`], [`Backend::norm_backward`] of the CPU): each operand read as a contiguous
//! slice (borrowed when its layout is contiguous, else copied once), then the kernels of
//! `softmax.rs` and `norm.rs`.
//!
//! [`Backend::softmax_masked`]: crate::backend::Backend::softmax_masked
//! [`Backend::softmax_backward`]: crate::backend::Backend::softmax_backward
//! [`Backend::norm`]: crate::backend::Backend::norm
//! [`Backend::norm_backward`]: crate::backend::Backend::norm_backward

use std::borrow::Cow;

use smallvec::smallvec;

use super::vmath::VMath;
use super::{norm, softmax, to_contiguous};
use crate::backend::{Buffer, ElemVec, NormSpec, Out, RowMask};
use crate::layout::{Dims, Layout, view};
use crate::{DataElement, Element};

/// The elements of `data` laid out as `l`, in C order: borrowed when `l` is contiguous.
fn dense<'a, T: Element>(data: &'a [T], l: &Layout) -> Cow<'a, [T]> {
    if l.is_contiguous() {
        Cow::Borrowed(&data[l.offset..l.offset + l.numel()])
    } else {
        Cow::Owned(to_contiguous(view(data, l)).into_raw_vec_and_offset().0)
    }
}

/// The elements of an operand, as [`dense`] reads them.
fn read<'a, T: Slice>((b, l): (&'a Buffer, &Layout)) -> Cow<'a, [T]> {
    dense(T::of(b), l)
}

/// `v` as an [`Out`] of `shape`.
fn out<T: DataElement>(v: Vec<T>, shape: &[usize]) -> Out {
    (Buffer::host(ElemVec::from_vec(v)), shape.into())
}

/// The typed slice of an `f32`/`f64` host buffer of element type `T` (the caller matched the
/// dtype of a buffer of the same call).
trait Slice: Element + VMath {
    fn of(b: &Buffer) -> &[Self];
}

impl Slice for f32 {
    fn of(b: &Buffer) -> &[f32] {
        match b {
            Buffer::F32(d) => &d[..],
            _ => unreachable!("invariant: the operands of a fused row kernel share one dtype"),
        }
    }
}

impl Slice for f64 {
    fn of(b: &Buffer) -> &[f64] {
        match b {
            Buffer::F64(d) => &d[..],
            _ => unreachable!("invariant: the operands of a fused row kernel share one dtype"),
        }
    }
}

/// Runs `$body` with `$T` the element type of float host buffer `$b`.
macro_rules! with_float {
    ($b:expr, |$T:ident| $body:expr) => {
        match $b {
            Buffer::F32(_) => {
                type $T = f32;
                $body
            }
            Buffer::F64(_) => {
                type $T = f64;
                $body
            }
            _ => unreachable!(
                "invariant: float kernels receive f32 or f64 host buffers (the adapter widens \
                 halves)"
            ),
        }
    };
}

/// See [`Backend::softmax_masked`](crate::backend::Backend::softmax_masked).
pub(crate) fn softmax_masked(
    x: &Buffer,
    lx: &Layout,
    mask: RowMask<'_>,
    log: bool,
    safe: bool,
) -> Out {
    with_float!(x, |T| {
        let xs = dense(T::of(x), lx);
        let shape = &lx.shape;
        let rows_per_matrix = if shape.len() >= 2 {
            shape[shape.len() - 2]
        } else {
            1
        };
        let m = match mask {
            RowMask::None => softmax::Mask::None,
            RowMask::Causal => softmax::Mask::Causal { rows_per_matrix },
            RowMask::Add(b, l) => softmax::Mask::Add {
                data: T::of(b),
                offset: l.offset,
                strides: &l.strides,
                shape,
            },
        };
        out(softmax::softmax_masked(&xs, shape, m, log, safe), shape)
    })
}

/// See [`Backend::softmax_backward`](crate::backend::Backend::softmax_backward).
pub(crate) fn softmax_backward(
    g: &Buffer,
    lg: &Layout,
    y: &Buffer,
    ly: &Layout,
    dim: usize,
    log: bool,
) -> Out {
    with_float!(g, |T| {
        let (gs, ys) = (dense(T::of(g), lg), dense(T::of(y), ly));
        let shape = &lg.shape;
        out(softmax::softmax_backward(&gs, &ys, shape, dim, log), shape)
    })
}

/// See [`Backend::norm`](crate::backend::Backend::norm).
pub(crate) fn norm(
    x: &Buffer,
    lx: &Layout,
    weight: Option<(&Buffer, &Layout)>,
    bias: Option<(&Buffer, &Layout)>,
    spec: NormSpec,
) -> Out {
    with_float!(x, |T| {
        let xs = dense(T::of(x), lx);
        let w = weight.map(read::<T>);
        let b = bias.map(read::<T>);
        out(
            norm::forward(&xs, w.as_deref(), b.as_deref(), spec),
            &lx.shape,
        )
    })
}

/// See [`Backend::norm_backward`](crate::backend::Backend::norm_backward).
pub(crate) fn norm_backward(
    g: (&Buffer, &Layout),
    x: (&Buffer, &Layout),
    weight: Option<(&Buffer, &Layout)>,
    spec: NormSpec,
    needs: [bool; 3],
) -> [Option<Out>; 3] {
    with_float!(x.0, |T| {
        let (gs, xs) = (read::<T>(g), read::<T>(x));
        let w = weight.map(read::<T>);
        let [dx, dw, db] = norm::backward(&gs, &xs, w.as_deref(), spec, needs);
        let row: Dims = smallvec![spec.n];
        [
            dx.map(|v| out(v, &x.1.shape)),
            dw.map(|v| out(v, &row)),
            db.map(|v| out(v, &row)),
        ]
    })
}
