//! Element types a tensor can hold: the runtime `DType` tag and the `Element` trait that links it to
//! a Rust scalar type.

use std::fmt;

/// The element type of a [`Tensor`](crate::Tensor), chosen at run time as in PyTorch.
///
/// Ops never promote silently: mixing `F32` and `F64` in one op is an
/// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[2], DType::F64)?;
/// assert_eq!(t.dtype(), DType::F64);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float (`f32`).
    F32,
    /// 64-bit IEEE float (`f64`); what `gradcheck` uses.
    F64,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size_of(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
        })
    }
}

/// A Rust scalar type that a tensor can store: `f32` or `f64`.
///
/// Kernels in `backend/` are generic over `Element`; the tensor dispatches on its [`DType`] once per
/// op and calls the monomorphised kernel.
pub trait Element:
    num_traits::Float
    + ndarray::LinalgScalar
    + ndarray::ScalarOperand
    + std::iter::Sum
    + std::ops::AddAssign
    + std::ops::MulAssign
    + std::ops::SubAssign
    + std::ops::DivAssign
    + fmt::Debug
    + fmt::Display
    + Default
    + Send
    + Sync
    + 'static
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Converts from `f64` (rounding for `f32`).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` exactly.
    fn to_f64(self) -> f64;
    #[doc(hidden)]
    fn wrap(v: ElemVec<Self>) -> Buffer;
    #[doc(hidden)]
    fn slice(b: &Buffer) -> Option<&[Self]>;
    #[doc(hidden)]
    fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]>;
}

/// The elements of one storage. Tensors of up to two elements (scalars: every gradient of a
/// scalar loss) keep them inline, saving an allocation per tensor on the engine's hot path.
#[doc(hidden)]
pub type ElemVec<T> = smallvec::SmallVec<[T; 2]>;

/// The element buffer of one storage, tagged by dtype (an implementation detail of [`Element`]).
#[doc(hidden)]
#[derive(Debug)]
pub enum Buffer {
    /// `f32` elements.
    F32(ElemVec<f32>),
    /// `f64` elements.
    F64(ElemVec<f64>),
    /// Elements in a CUDA device's memory (either dtype). Boxed so that host buffers, on every
    /// hot path, keep the enum (and every storage) as small as before CUDA support.
    Cuda(Box<DeviceBuffer>),
}

/// Device memory of the CUDA backend.
#[cfg(feature = "cuda")]
pub(crate) use crate::backend::cuda::DeviceBuffer;

/// Device memory of the CUDA backend: none in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
#[doc(hidden)]
#[derive(Debug)]
pub enum DeviceBuffer {}

impl Buffer {
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
}

macro_rules! buffer_access {
    ($t:ty, $variant:ident) => {
        #[inline]
        fn wrap(v: ElemVec<Self>) -> Buffer {
            Buffer::$variant(v)
        }
        #[inline]
        fn slice(b: &Buffer) -> Option<&[Self]> {
            match b {
                Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
        #[inline]
        fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]> {
            match b {
                Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    buffer_access!(f32, F32);
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    buffer_access!(f64, F64);
}

#[cfg(test)]
mod tests {
    use super::Buffer;

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
}
