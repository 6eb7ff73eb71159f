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

/// A Rust scalar type that a tensor can store: `f32` or `f64` (sealed: the backends hold exactly
/// these two).
///
/// Kernels in `backend/` are generic over `Element`; the tensor dispatches on its [`DType`] once per
/// op and calls the monomorphised kernel.
pub trait Element:
    sealed::Sealed
    + num_traits::Float
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
}

mod sealed {
    /// Implemented by the element types the backends store, and only by them.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}
