//! Element maps on host tensors of one or two elements and in place: the inline path of scalar
//! arithmetic (every gradient of a scalar chain), which a backend call would cost more than.

use super::super::Tensor;
use crate::backend::{Buffer, ElemVec};
use crate::layout::Layout;
use crate::{Device, Element};

/// A per-element function usable on either dtype (a closure cannot be generic over `T`).
pub(crate) trait ElementMap: Copy {
    /// The function's value at `x`.
    fn apply<T: Element>(self, x: T) -> T;
}

/// `m` applied to the elements `layout` selects from `data`, as a new contiguous tensor. One or
/// two contiguous elements (scalars: every gradient of a scalar chain) are mapped inline and go
/// straight into the result's storage (a spare tensor's, usually), no `Buffer` built in
/// between; anything larger is out of line.
#[inline(always)]
fn map_typed<T: Element, M: ElementMap>(
    data: &[T],
    layout: &Layout,
    m: M,
    device: Device,
) -> Tensor {
    if layout.is_contiguous() {
        let n = layout.numel();
        if n <= 2 {
            let src = &data[layout.offset..layout.offset + n];
            let mut buf = [T::default(); 2];
            buf.iter_mut().zip(src).for_each(|(b, &x)| *b = m.apply(x));
            return Tensor::small(buf, src.len(), &layout.shape, device);
        }
    }
    map_typed_large(data, layout, m, device)
}

/// [`map_typed`] of more than two elements, or of a non-contiguous layout.
#[inline(never)]
fn map_typed_large<T: Element, M: ElementMap>(
    data: &[T],
    layout: &Layout,
    m: M,
    device: Device,
) -> Tensor {
    let v: ElemVec<T> = if layout.is_contiguous() {
        let src = &data[layout.offset..layout.offset + layout.numel()];
        ElemVec::from_vec(src.iter().map(|&x| m.apply(x)).collect())
    } else {
        ElemVec::from_vec(
            crate::layout::view(data, layout)
                .iter()
                .map(|&x| m.apply(x))
                .collect(),
        )
    };
    Tensor::from_buffer(Buffer::host(v), &layout.shape, device)
}

impl Tensor {
    /// Applies `m` to every element into a new contiguous tensor, reading the storage slice
    /// directly (the hot path of scalar arithmetic in backward formulas).
    pub(crate) fn map_elements<M: ElementMap>(&self, m: M) -> Tensor {
        let guard = self.0.storage.data.read();
        match &*guard {
            Buffer::F32(d) => map_typed(d, self.layout(), m, self.device()),
            Buffer::F64(d) => map_typed(d, self.layout(), m, self.device()),
            _ => unreachable!("invariant: map_elements is for f32 and f64 host tensors only"),
        }
    }

    /// Applies `m` to every element in place. The caller guarantees that nothing else can
    /// observe the write ([`Tensor::is_uniquely_owned`]) and that the tensor is on the host.
    pub(crate) fn map_elements_in_place<M: ElementMap>(&self, m: M) {
        // Inlined, so that a map known to the caller (the scalar multiply of a chain's
        // backward) is applied directly rather than dispatched on its operator.
        #[inline(always)]
        fn map<T: Element, M: ElementMap>(data: &mut [T], layout: &Layout, m: M) {
            let n = layout.numel();
            match &mut data[layout.offset..layout.offset + n] {
                // A scalar (every gradient of a scalar chain): skips the vectorised loop's
                // set-up, most of this function's instructions for one element.
                [x] => *x = m.apply(*x),
                xs => xs.iter_mut().for_each(|x| *x = m.apply(*x)),
            }
        }
        let mut guard = self.0.storage.data.write();
        match &mut *guard {
            Buffer::F32(d) => map(d, self.layout(), m),
            Buffer::F64(d) => map(d, self.layout(), m),
            _ => unreachable!("invariant: map_elements is for f32 and f64 host tensors only"),
        }
    }
}
