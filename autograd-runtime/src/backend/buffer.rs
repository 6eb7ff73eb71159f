//! [`Buffer`]: the elements of one storage, in host memory (one variant per [`DType`]) or in a
//! device's memory. What every backend reads and writes; the tensor layer only holds it.

use std::any::TypeId;
use std::mem::ManuallyDrop;

use half::{bf16, f16};

use crate::{DType, DataElement};

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
    /// `f16` elements.
    F16(ElemVec<f16>),
    /// `bf16` elements.
    BF16(ElemVec<bf16>),
    /// `i64` elements.
    I64(ElemVec<i64>),
    /// `i32` elements.
    I32(ElemVec<i32>),
    /// `u8` elements.
    U8(ElemVec<u8>),
    /// `bool` elements.
    Bool(ElemVec<bool>),
    /// Elements in a CUDA device's memory. Boxed so that host buffers, on every
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
    pub(crate) fn host<T: DataElement>(v: ElemVec<T>) -> Buffer {
        macro_rules! try_variants {
            ($v:ident; $($var:ident $t:ty),*) => {
                $(let $v = match same_owned::<ElemVec<T>, ElemVec<$t>>($v) {
                    Ok(v) => return Buffer::$var(v),
                    Err(v) => v,
                };)*
            };
        }
        try_variants!(v; F32 f32, F64 f64, F16 f16, BF16 bf16, I64 i64, I32 i32, U8 u8, Bool bool);
        let _ = v;
        unreachable!("invariant: DataElement is sealed to the eight host element types")
    }

    /// The host elements, if they are of type `T`.
    #[inline]
    pub(crate) fn as_slice<T: DataElement>(&self) -> Option<&[T]> {
        macro_rules! arms {
            ($($var:ident $t:ty),*) => {
                match self {
                    $(Buffer::$var(v) => same::<ElemVec<$t>, ElemVec<T>>(v).map(|v| &v[..]),)*
                    Buffer::Cuda(_) => None,
                }
            };
        }
        arms!(F32 f32, F64 f64, F16 f16, BF16 bf16, I64 i64, I32 i32, U8 u8, Bool bool)
    }

    /// The host elements, mutably, if they are of type `T`.
    #[inline]
    pub(crate) fn as_mut_slice<T: DataElement>(&mut self) -> Option<&mut [T]> {
        macro_rules! arms {
            ($($var:ident $t:ty),*) => {
                match self {
                    $(Buffer::$var(v) => same_mut::<ElemVec<$t>, ElemVec<T>>(v).map(|v| &mut v[..]),)*
                    Buffer::Cuda(_) => None,
                }
            };
        }
        arms!(F32 f32, F64 f64, F16 f16, BF16 bf16, I64 i64, I32 i32, U8 u8, Bool bool)
    }

    /// The element type.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::F16(_) => DType::F16,
            Buffer::BF16(_) => DType::BF16,
            Buffer::I64(_) => DType::I64,
            Buffer::I32(_) => DType::I32,
            Buffer::U8(_) => DType::U8,
            Buffer::Bool(_) => DType::Bool,
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
            Buffer::F16(v) => v.len(),
            Buffer::BF16(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::U8(v) => v.len(),
            Buffer::Bool(v) => v.len(),
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
            Buffer::F16(v) => !v.spilled(),
            Buffer::BF16(v) => !v.spilled(),
            Buffer::I64(v) => !v.spilled(),
            Buffer::I32(v) => !v.spilled(),
            Buffer::U8(v) => !v.spilled(),
            Buffer::Bool(v) => !v.spilled(),
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
            // Half buffers too: the casts around every half-precision kernel allocate them.
            Buffer::F16(v) if v.spilled() && large(v.capacity(), 2) => {
                buffer_cache::give(std::mem::take(v).into_vec());
            }
            Buffer::BF16(v) if v.spilled() && large(v.capacity(), 2) => {
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
