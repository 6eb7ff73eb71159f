//! Element types a tensor can hold: the runtime `DType` tag and the `Element` trait that links it to
//! a Rust scalar type.

use std::fmt;

/// The element type of a [`Tensor`](crate::Tensor), chosen at run time as in PyTorch.
///
/// Floating dtypes (`F32`, `F64`, `F16`, `BF16`) can require gradients; integer and bool tensors
/// (`I64`, `I32`, `U8`, `Bool`) hold labels, indices and masks and never do. Ops between dtypes
/// promote as PyTorch's `torch.result_type` does ([`DType::promote`]); half-precision tensors store
/// half and compute in `f32`, rounding each result once, as PyTorch's CPU kernels do.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Tensor};
/// let t = Tensor::zeros(&[2], DType::F64)?;
/// assert_eq!(t.dtype(), DType::F64);
/// assert!(DType::BF16.is_floating_point() && !DType::I64.is_floating_point());
/// assert_eq!(DType::I64.promote(DType::F16), DType::F16);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float (`f32`, PyTorch's `torch.float32`): the default dtype.
    F32,
    /// 64-bit IEEE float (`f64`, `torch.float64`); what `gradcheck` uses.
    F64,
    /// 16-bit IEEE float (`half::f16`, `torch.float16`).
    F16,
    /// bfloat16 (`half::bf16`, `torch.bfloat16`): `f32`'s exponent with 8 bits of mantissa.
    BF16,
    /// 64-bit signed integer (`i64`, `torch.int64`): PyTorch's index and label type.
    I64,
    /// 32-bit signed integer (`i32`, `torch.int32`).
    I32,
    /// 8-bit unsigned integer (`u8`, `torch.uint8`).
    U8,
    /// Boolean (`bool`, `torch.bool`): masks and comparison results.
    Bool,
}

impl DType {
    /// Every dtype, in the order of PyTorch's promotion table's categories (bool, integers,
    /// floats) — handy for sweeps.
    pub const ALL: [DType; 8] = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    pub fn size_of(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// Whether this is a floating dtype (PyTorch's `dtype.is_floating_point`): the only dtypes
    /// that can require gradients.
    pub fn is_floating_point(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// Whether the float kernels take this dtype as it is (`f32`, `f64`).
    #[inline]
    pub(crate) fn is_native_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Whether this is a half-precision dtype, stored in 16 bits and computed in `f32`.
    pub(crate) fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// The category PyTorch's promotion compares first: bool (0) < integer (1) < float (2).
    pub(crate) fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::U8 | DType::I32 | DType::I64 => 1,
            _ => 2,
        }
    }

    /// The dtype two tensors of these dtypes promote to (PyTorch's `torch.promote_types`):
    /// the higher category wins, and within one the wider type; `f16` and `bf16` meet at `f32`,
    /// `u8` and a signed integer at the signed one.
    ///
    /// ```
    /// use autograd_runtime::DType;
    /// assert_eq!(DType::F32.promote(DType::F64), DType::F64);
    /// assert_eq!(DType::F16.promote(DType::BF16), DType::F32);
    /// assert_eq!(DType::U8.promote(DType::Bool), DType::U8);
    /// assert_eq!(DType::I32.promote(DType::F16), DType::F16);
    /// ```
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        if self == other {
            return self;
        }
        match (self, other) {
            (F16, BF16) | (BF16, F16) => F32,
            (a, b) if a.category() != b.category() => {
                if a.category() > b.category() {
                    a
                } else {
                    b
                }
            }
            // Same category, different types: the wider one. Integers: u8 < i32 < i64 (u8 with a
            // signed type gives the signed type, which holds every u8). Floats: halves < f32 < f64.
            (a, b) => {
                let rank = |d: DType| match d {
                    U8 => 0,
                    I32 => 1,
                    I64 => 2,
                    F16 | BF16 => 0,
                    F32 => 1,
                    _ => 2,
                };
                if rank(a) >= rank(b) { a } else { b }
            }
        }
    }

    /// PyTorch's `torch.*` name (`torch.float32`, `torch.int64`, ...), as `repr` prints it.
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "torch.float32",
            DType::F64 => "torch.float64",
            DType::F16 => "torch.float16",
            DType::BF16 => "torch.bfloat16",
            DType::I64 => "torch.int64",
            DType::I32 => "torch.int32",
            DType::U8 => "torch.uint8",
            DType::Bool => "torch.bool",
        }
    }

    /// The scalar-type name in PyTorch's kernel errors (`"add" not implemented for 'Bool'`).
    pub(crate) fn scalar_type_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::I64 => "Long",
            DType::I32 => "Int",
            DType::U8 => "Byte",
            DType::Bool => "Bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::U8 => "u8",
            DType::Bool => "bool",
        })
    }
}

/// A Rust type a tensor's storage can hold: `f32`, `f64`, [`half::f16`], [`half::bf16`], `i64`,
/// `i32`, `u8` or `bool` (sealed). What [`Tensor::from_vec`](crate::Tensor::from_vec),
/// [`Tensor::to_vec`](crate::Tensor::to_vec) and [`Tensor::item`](crate::Tensor::item) take.
///
/// Conversions between element types follow PyTorch's casts: float to integer truncates toward
/// zero (and wraps into the narrower integer types, as `torch.tensor([300.]).to(torch.uint8)`
/// gives 44), anything to bool is "not zero", `f64` to a half type rounds through `f32` as
/// `c10::Half` does.
///
/// ```
/// use autograd_runtime::{DType, DataElement, Tensor};
/// let labels = Tensor::from_vec(vec![3i64, 0, 2], &[3])?;
/// assert_eq!(labels.dtype(), DType::I64);
/// assert_eq!(<u8 as DataElement>::cast_from(300.0f64), 44);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait DataElement:
    sealed::Sealed + Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Converts from `f64` with PyTorch's cast rules (rounding for narrower floats).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (exact for every type but `i64` beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts from `i64` with PyTorch's cast rules (wrapping into narrower integers).
    fn from_i64(v: i64) -> Self;
    /// Converts to `i64` (floats truncate toward zero).
    fn to_i64(self) -> i64;

    /// `v` of any element type converted to this one, with PyTorch's cast rules: exact between
    /// integers (wrapping), through `f64` from a float.
    #[inline]
    fn cast_from<S: DataElement>(v: S) -> Self {
        if S::DTYPE.is_floating_point() {
            Self::from_f64(v.to_f64())
        } else {
            Self::from_i64(v.to_i64())
        }
    }
}

macro_rules! float_data_element {
    ($t:ty, $dtype:ident, |$v:ident| $from_f64:expr, |$w:ident| $to_f64:expr) => {
        impl DataElement for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn from_f64($v: f64) -> Self {
                $from_f64
            }
            #[inline]
            fn to_f64(self) -> f64 {
                let $w = self;
                $to_f64
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                // `static_cast<float>(int64_t)`: one rounding, then (halves) a second as PyTorch's.
                Self::from_f64(v as f32 as f64)
            }
            #[inline]
            fn to_i64(self) -> i64 {
                f64_to_i64(self.to_f64())
            }
        }
    };
}

float_data_element!(f32, F32, |v| v as f32, |w| f64::from(w));
float_data_element!(half::f16, F16, |v| half::f16::from_f32(v as f32), |w| w
    .to_f64());
float_data_element!(half::bf16, BF16, |v| half::bf16::from_f32(v as f32), |w| w
    .to_f64());

impl DataElement for f64 {
    const DTYPE: DType = DType::F64;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    #[inline]
    fn to_i64(self) -> i64 {
        f64_to_i64(self)
    }
}

/// `v` truncated toward zero into `i64` as PyTorch's x86 CPU kernels convert it: NaN,
/// infinities and values out of range give `i64::MIN` (`cvttsd2si`'s "integer indefinite").
#[inline]
fn f64_to_i64(v: f64) -> i64 {
    // 2^63: the first value past i64's range; -2^63 itself is in range.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if (-LIMIT..LIMIT).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// `v` truncated toward zero into `i32` as PyTorch's x86 CPU kernels convert it: NaN,
/// infinities and values out of range give `i32::MIN`.
#[inline]
fn f64_to_i32(v: f64) -> i32 {
    if v > -2_147_483_649.0 && v < 2_147_483_648.0 {
        v as i32
    } else {
        i32::MIN
    }
}

macro_rules! int_data_element {
    ($t:ty, $dtype:ident, |$v:ident| $from_f64:expr) => {
        impl DataElement for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn from_f64($v: f64) -> Self {
                $from_f64
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn to_i64(self) -> i64 {
                self as i64
            }
        }
    };
}

int_data_element!(i64, I64, |v| f64_to_i64(v));
int_data_element!(i32, I32, |v| f64_to_i32(v));
// Through `int64`, wrapping: `torch.tensor([300.]).to(torch.uint8)` is 44, `-1.` is 255.
int_data_element!(u8, U8, |v| f64_to_i64(v) as u8);

impl DataElement for bool {
    const DTYPE: DType = DType::Bool;
    #[inline]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline]
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
}

/// A floating element type the compute kernels run in: `f32` or `f64` (sealed). Half-precision
/// tensors are computed in `f32`; integer and bool tensors have their own kernels.
///
/// Kernels in `backend/` are generic over `Element`; the tensor dispatches on its [`DType`] once per
/// op and calls the monomorphised kernel.
pub trait Element:
    DataElement
    + num_traits::Float
    + ndarray::LinalgScalar
    + ndarray::ScalarOperand
    + std::iter::Sum
    + std::ops::AddAssign
    + std::ops::MulAssign
    + std::ops::SubAssign
    + std::ops::DivAssign
    + fmt::Display
{
}

impl Element for f32 {}
impl Element for f64 {}

mod sealed {
    /// Implemented by the element types the backends store, and only by them.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
    impl Sealed for u8 {}
    impl Sealed for bool {}
}
