//! The scatter kernel for every dtype: `put`, a copy of a tensor with some of its elements
//! (given by flat position) set to, or increased by, the elements of another. `scatter`,
//! `scatter_add`, `index_add` and the gradients of `gather` and `masked_select` all reduce to it
//! once the op layer has turned their index tensors into flat positions.
//!
//! Accumulation runs in the element type itself, one element at a time in `src`'s C order, as
//! PyTorch's CPU loops do: `f32`/`f64` add natively (an `f32` sum stays `f32`), integers wrap,
//! and bool `+` is "or". A half buffer here adds in `f32` and rounds after every addition
//! (`c10::Half`'s `+=`, what PyTorch's `put_(accumulate=True)` gives); `scatter_add` and
//! `index_add` on halves accumulate in `f32` and round once, so the tensor layer widens them
//! first (`tensor/widen.rs`), as it does for the other float kernels.

use half::{bf16, f16};

use super::any::with_data;
use crate::backend::{Buffer, ElemVec, Out};
use crate::layout::{Layout, view};
use crate::{DataElement, Error, Result};

/// `a + b` in the element type, as PyTorch's CPU kernels add two elements of that type.
pub(crate) trait Accumulate: DataElement {
    /// `self + v`, rounded (floats), wrapped (integers) or or-ed (bool).
    fn accumulate(self, v: Self) -> Self;
}

macro_rules! native_add {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline]
            fn accumulate(self, v: $t) -> $t {
                self + v
            }
        }
    )*};
}
native_add!(f32, f64);

macro_rules! half_add {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline]
            fn accumulate(self, v: $t) -> $t {
                <$t>::from_f32(self.to_f32() + v.to_f32())
            }
        }
    )*};
}
half_add!(f16, bf16);

macro_rules! wrapping_add {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline]
            fn accumulate(self, v: $t) -> $t {
                self.wrapping_add(v)
            }
        }
    )*};
}
wrapping_add!(i64, i32, u8);

impl Accumulate for bool {
    #[inline]
    fn accumulate(self, v: bool) -> bool {
        self | v
    }
}

/// A contiguous copy of `dst` in which element `flat[k]` (a position in `dst`'s C order) is
/// set to element `k` of `src` (in `src`'s C order), or increased by it when `accumulate`. With
/// repeated positions the last write wins, or every term is added, in order.
///
/// # Errors
///
/// [`Error::DTypeMismatch`] when `src` is not of `dst`'s dtype; [`Error::InvalidArgument`] when
/// `flat` and `src` differ in length or a position is past `dst` (the op layer checks both
/// first, so this only guards the invariant).
pub(crate) fn put(
    (dst, ld): (&Buffer, &Layout),
    (src, ls): (&Buffer, &Layout),
    flat: &[usize],
    accumulate: bool,
) -> Result<Out> {
    let (lhs, rhs) = (dst.dtype(), src.dtype());
    with_data!(dst, |d: T| {
        let s = src.as_slice::<T>().ok_or(Error::DTypeMismatch {
            op: "scatter",
            lhs,
            rhs,
        })?;
        put_typed::<T>(view(d, ld), view(s, ls), flat, accumulate)
            .map(|v| (Buffer::host(ElemVec::from_vec(v)), ld.shape.clone()))
    })
}

/// [`put`] for one element type.
fn put_typed<T: Accumulate>(
    dst: ndarray::ArrayViewD<'_, T>,
    src: ndarray::ArrayViewD<'_, T>,
    flat: &[usize],
    accumulate: bool,
) -> Result<Vec<T>> {
    if src.len() != flat.len() {
        return Err(Error::InvalidArgument(format!(
            "put: {} positions for {} source elements",
            flat.len(),
            src.len()
        )));
    }
    let mut out: Vec<T> = match dst.as_slice() {
        Some(s) => s.to_vec(),
        None => dst.iter().copied().collect(),
    };
    let n = out.len();
    for (&k, &v) in flat.iter().zip(src.iter()) {
        let slot = out.get_mut(k).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "put: position {k} is past a tensor of {n} elements"
            ))
        })?;
        *slot = if accumulate { slot.accumulate(v) } else { v };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf<T: DataElement>(v: Vec<T>) -> Buffer {
        Buffer::host(ElemVec::from_vec(v))
    }

    #[test]
    fn put_assigns_in_order_and_accumulates_every_term() {
        let dst = buf(vec![0.0f32; 4]);
        let src = buf(vec![1.0f32, 2.0, 3.0]);
        let (ld, ls) = (Layout::contiguous(&[2, 2]), Layout::contiguous(&[3]));
        let (set, shape) = put((&dst, &ld), (&src, &ls), &[3, 0, 3], false).unwrap();
        assert_eq!(shape.as_slice(), &[2, 2]);
        assert_eq!(set.as_slice::<f32>().unwrap(), &[2.0, 0.0, 0.0, 3.0]);
        let (sum, _) = put((&dst, &ld), (&src, &ls), &[3, 0, 3], true).unwrap();
        assert_eq!(sum.as_slice::<f32>().unwrap(), &[2.0, 0.0, 0.0, 4.0]);
    }

    #[test]
    fn halves_round_after_every_addition_integers_wrap_bools_or() {
        // 1 + 2^-12 rounds back to 1 in f16 each time, as PyTorch's `c10::Half +=` does.
        let dst = buf(vec![f16::ONE]);
        let src = buf(vec![f16::from_f32(1.0 / 4096.0); 4]);
        let (l1, l4) = (Layout::contiguous(&[1]), Layout::contiguous(&[4]));
        let (h, _) = put((&dst, &l1), (&src, &l4), &[0; 4], true).unwrap();
        assert_eq!(h.as_slice::<f16>().unwrap(), &[f16::ONE]);
        let (u, _) = put(
            (&buf(vec![250u8]), &l1),
            (&buf(vec![3u8, 4]), &Layout::contiguous(&[2])),
            &[0, 0],
            true,
        )
        .unwrap();
        assert_eq!(u.as_slice::<u8>().unwrap(), &[1]);
        let (b, _) = put(
            (&buf(vec![false, false]), &Layout::contiguous(&[2])),
            (&buf(vec![true, false]), &Layout::contiguous(&[2])),
            &[1, 1],
            true,
        )
        .unwrap();
        assert_eq!(b.as_slice::<bool>().unwrap(), &[false, true]);
    }

    #[test]
    fn put_reports_bad_positions_and_dtypes_instead_of_panicking() {
        let l = Layout::contiguous(&[1]);
        let err = put((&buf(vec![0i64]), &l), (&buf(vec![1i64]), &l), &[1], false).unwrap_err();
        assert!(err.to_string().contains("position 1 is past"), "{err}");
        assert!(
            put(
                (&buf(vec![0i64]), &l),
                (&buf(vec![1.0f32]), &l),
                &[0],
                false
            )
            .is_err()
        );
    }
}
