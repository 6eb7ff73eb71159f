//! Type promotion as PyTorch's `torch.result_type`, and [`Scalar`], the one type every scalar
//! argument goes through (`x * 2`, `x.add_scalar(1u8)`, `x.mul_scalar(0.5f32)`).
//!
//! PyTorch orders operands in three tiers: tensors with dimensions, then 0-dim tensors, then
//! Python numbers. Within each tier dtypes promote by [`DType::promote`]; a lower tier only
//! changes the result when its category (bool < integer < float) is higher than every higher
//! tier's: `int_tensor * 2.5` is `f32` (the default float dtype), `f16_tensor + f32_0dim` stays
//! `f16`, `f32_tensor + f64_tensor` is `f64`.

use crate::tensor::kernels;
use crate::{DType, Result, Tensor};

/// A scalar operand: a Rust number or bool, keeping its kind (bool, integer, float), which is
/// what promotion looks at (PyTorch's Python `bool`/`int`/`float`).
///
/// Every scalar argument takes `impl Into<Scalar>`, so any Rust number works:
///
/// ```
/// use autograd_runtime::{DType, Tensor};
/// let x = Tensor::from_vec(vec![1i64, 2, 3], &[3])?;
/// assert_eq!(x.mul_scalar(2)?.dtype(), DType::I64); // an integer scalar keeps int64
/// let y = x.mul_scalar(0.5f32)?; // a float scalar promotes to the default float dtype
/// assert_eq!((y.dtype(), y.to_vec::<f32>()?), (DType::F32, vec![0.5, 1.0, 1.5]));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A `bool`.
    Bool(bool),
    /// An integer (any Rust integer type, as `i64`).
    Int(i64),
    /// A float (`f32` or `f64`, as `f64`).
    Float(f64),
}

impl Scalar {
    /// The value as `f64` (what the kernels take; exact for integers up to 2^53).
    #[inline]
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The promotion category: bool 0, integer 1, float 2.
    #[inline]
    fn category(self) -> u8 {
        match self {
            Scalar::Bool(_) => 0,
            Scalar::Int(_) => 1,
            Scalar::Float(_) => 2,
        }
    }

    /// `-self` (a bool negates as the integer it is).
    pub(crate) fn neg(self) -> Scalar {
        match self {
            Scalar::Bool(b) => Scalar::Int(-i64::from(b)),
            Scalar::Int(i) => Scalar::Int(i.wrapping_neg()),
            Scalar::Float(f) => Scalar::Float(-f),
        }
    }

    /// The dtype of `tensor (op) self` for a tensor of `dtype`: the tensor's, unless the
    /// scalar's category is higher, then that category's default (`i64`, `f32`).
    #[inline]
    pub fn result_type_with(self, dtype: DType) -> DType {
        if self.category() <= dtype.category() {
            return dtype;
        }
        match self {
            Scalar::Float(_) => DType::F32,
            _ => DType::I64,
        }
    }
}

macro_rules! scalar_from {
    ($variant:ident, $as:ty: $($t:ty),*) => {$(
        impl From<$t> for Scalar {
            #[inline]
            fn from(v: $t) -> Scalar {
                Scalar::$variant(v as $as)
            }
        }
    )*};
}

scalar_from!(Int, i64: i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
scalar_from!(Float, f64: f32, f64);

impl From<bool> for Scalar {
    fn from(v: bool) -> Scalar {
        Scalar::Bool(v)
    }
}

impl From<half::f16> for Scalar {
    fn from(v: half::f16) -> Scalar {
        Scalar::Float(v.to_f64())
    }
}

impl From<half::bf16> for Scalar {
    fn from(v: half::bf16) -> Scalar {
        Scalar::Float(v.to_f64())
    }
}

/// The dtype PyTorch gives `a (op) b` (`torch.result_type(a, b)`): dimensioned tensors over
/// 0-dim tensors within a category, the higher category first.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{DType, Tensor, result_type};
/// let ints = Tensor::from_vec(vec![1i64, 2], &[2])?;
/// let half = Tensor::zeros(&[2], DType::F16)?;
/// assert_eq!(result_type(&ints, &Tensor::scalar(1.5f64)), DType::F64);
/// assert_eq!(result_type(&half, &Tensor::scalar(1.5f32)), DType::F16);
/// assert_eq!(result_type(&half, &Tensor::zeros(&[2], DType::F32)?), DType::F32);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn result_type(a: &Tensor, b: &Tensor) -> DType {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return da;
    }
    match (a.ndim() == 0, b.ndim() == 0) {
        (false, true) if db.category() <= da.category() => da,
        (true, false) if da.category() <= db.category() => db,
        (false, true) => db,
        (true, false) => da,
        _ => da.promote(db),
    }
}

impl Tensor {
    /// This tensor's values in `dtype` without autograd history: how an op converts an operand
    /// to the promoted dtype inside its forward (the engine casts each input's gradient back to
    /// the input's dtype, as PyTorch's `validate_outputs` does).
    pub(crate) fn promoted_to(&self, dtype: DType) -> Result<Tensor> {
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        kernels::of_tensor(self)?.to_dtype(self, dtype)
    }

    /// This tensor converted (differentiably) to the dtype of `self (op) s`: itself when the
    /// scalar does not promote it (every float tensor), else an integer or bool tensor's
    /// values in the scalar's category's default dtype.
    pub(crate) fn promoted_for(&self, s: Scalar) -> Result<Tensor> {
        self.to_dtype(s.result_type_with(self.dtype()))
    }

    /// `f` of this tensor, or of its promotion for `self (op) s` when the scalar promotes it:
    /// the scalar ops' path, which on a float tensor (every op of a scalar chain) neither clones
    /// the handle nor converts.
    #[inline]
    pub(crate) fn with_promoted<R>(
        &self,
        s: Scalar,
        f: impl FnOnce(&Tensor) -> Result<R>,
    ) -> Result<R> {
        let dtype = s.result_type_with(self.dtype());
        if dtype == self.dtype() {
            f(self)
        } else {
            f(&self.to_dtype(dtype)?)
        }
    }
}
