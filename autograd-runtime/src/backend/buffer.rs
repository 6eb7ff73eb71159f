//! [`Buffer`]: the elements of one storage, in host memory (`f32` or `f64`) or in a device's
//! memory. What every backend reads and writes; the tensor layer only holds it.

use std::any::TypeId;
use std::mem::ManuallyDrop;

use crate::{DType, Element};

/// The elements of one storage. Tensors of up to two elements (scalars: every gradient of a
/// scalar loss) keep them inline, saving an allocation per tensor on the engine's hot path.
pub(crate) type ElemVec<T> = smallvec::SmallVec<[T; 2]>;

/// The element buffer of one storage, tagged by dtype.
#[derive(Debug)]
pub(crate) enum Buffer {
    /// `f32` elements.
    F32(ElemVec<f32>),
    /// `f64` elements.
    F64(ElemVec<f64>),
    /// Elements in a CUDA device's memory (either dtype). Boxed so that host buffers, on every
    /// hot path, keep the enum (and every storage) as small as before CUDA support.
    #[cfg_attr(
        not(feature = "cuda"),
        expect(
            dead_code,
            reason = "DeviceBuffer is uninhabited without the cuda feature"
        )
    )]
    Cuda(Box<DeviceBuffer>),
}

/// Device memory of the CUDA backend.
#[cfg(feature = "cuda")]
pub(crate) use super::cuda::DeviceBuffer;

/// Device memory of the CUDA backend: none in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
#[derive(Debug)]
pub(crate) enum DeviceBuffer {}

/// `a` as a `B` when `A` and `B` are the same type (decided at compile time).
#[inline(always)]
fn same<A: 'static, B: 'static>(a: &A) -> Option<&B> {
    if TypeId::of::<A>() == TypeId::of::<B>() {
        // SAFETY: `A` and `B` are the same type, so the reference is unchanged.
        Some(unsafe { &*(a as *const A).cast::<B>() })
    } else {
        None
    }
}

/// [`same`] for a mutable reference.
#[inline(always)]
fn same_mut<A: 'static, B: 'static>(a: &mut A) -> Option<&mut B> {
    if TypeId::of::<A>() == TypeId::of::<B>() {
        // SAFETY: `A` and `B` are the same type, so the reference is unchanged.
        Some(unsafe { &mut *(a as *mut A).cast::<B>() })
    } else {
        None
    }
}

/// [`same`] by value.
#[inline(always)]
fn same_owned<A: 'static, B: 'static>(a: A) -> Result<B, A> {
    if TypeId::of::<A>() == TypeId::of::<B>() {
        let a = ManuallyDrop::new(a);
        // SAFETY: `A` and `B` are the same type; `a` is not dropped, so the value moves once.
        Ok(unsafe { std::ptr::read((&*a as *const A).cast::<B>()) })
    } else {
        Err(a)
    }
}

impl Buffer {
    /// Host elements of type `T` as a buffer.
    #[inline]
    pub(crate) fn host<T: Element>(v: ElemVec<T>) -> Buffer {
        match same_owned::<ElemVec<T>, ElemVec<f32>>(v) {
            Ok(v) => Buffer::F32(v),
            Err(v) => match same_owned::<ElemVec<T>, ElemVec<f64>>(v) {
                Ok(v) => Buffer::F64(v),
                Err(_) => unreachable!("invariant: Element is sealed to f32 and f64"),
            },
        }
    }

    /// The host elements, if they are of type `T`.
    #[inline]
    pub(crate) fn as_slice<T: Element>(&self) -> Option<&[T]> {
        match self {
            Buffer::F32(v) => same::<ElemVec<f32>, ElemVec<T>>(v).map(|v| &v[..]),
            Buffer::F64(v) => same::<ElemVec<f64>, ElemVec<T>>(v).map(|v| &v[..]),
            Buffer::Cuda(_) => None,
        }
    }

    /// The host elements, mutably, if they are of type `T`.
    #[inline]
    pub(crate) fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        match self {
            Buffer::F32(v) => same_mut::<ElemVec<f32>, ElemVec<T>>(v).map(|v| &mut v[..]),
            Buffer::F64(v) => same_mut::<ElemVec<f64>, ElemVec<T>>(v).map(|v| &mut v[..]),
            Buffer::Cuda(_) => None,
        }
    }

    /// The element type.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(d) => d.dtype(),
            #[cfg(not(feature = "cuda"))]
            Buffer::Cuda(d) => match **d {},
        }
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(d) => d.len(),
            #[cfg(not(feature = "cuda"))]
            Buffer::Cuda(d) => match **d {},
        }
    }

    /// Whether the elements sit inline (host memory, at most two of them): such a buffer's
    /// storage can be reused for a new small tensor.
    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        match self {
            Buffer::F32(v) => !v.spilled(),
            Buffer::F64(v) => !v.spilled(),
            Buffer::Cuda(_) => false,
        }
    }

    /// Hands a large host allocation to the CPU backend's buffer cache for the next kernel
    /// output of its size (small and inline buffers are simply freed), leaving `self` empty.
    pub(crate) fn recycle(&mut self) {
        use super::cpu::buffer_cache;
        let large = |cap: usize, elem: usize| cap * elem >= buffer_cache::MIN_BYTES;
        match self {
            Buffer::F32(v) if v.spilled() && large(v.capacity(), 4) => {
                buffer_cache::give(std::mem::take(v).into_vec());
            }
            Buffer::F64(v) if v.spilled() && large(v.capacity(), 8) => {
                buffer_cache::give(std::mem::take(v).into_vec());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Buffer, ElemVec};
    use crate::DType;

    #[test]
    fn device_buffers_do_not_grow_host_buffers() {
        // A host buffer is a tag plus an inline `SmallVec<[f64; 2]>`: the CUDA variant is boxed
        // so that it adds nothing to the storage of every host tensor.
        assert!(
            std::mem::size_of::<Buffer>() <= 32,
            "{}",
            std::mem::size_of::<Buffer>()
        );
    }

    #[test]
    fn host_buffers_hand_out_their_elements_only_at_their_own_type() {
        let b = Buffer::host::<f32>(ElemVec::from_vec(vec![1.0, 2.0, 3.0]));
        assert_eq!(b.dtype(), DType::F32);
        assert_eq!(b.as_slice::<f32>(), Some(&[1.0f32, 2.0, 3.0][..]));
        assert!(b.as_slice::<f64>().is_none());
        assert!(!b.is_inline());
        let s = Buffer::host::<f64>(ElemVec::from_vec(vec![4.0]));
        assert!(s.is_inline() && s.dtype() == DType::F64 && s.len() == 1);
    }
}
