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
    /// The value as `f64` (what the kernels of floating-point tensors take; exact for integers
    /// up to 2^53: integer tensors take an integer scalar exactly, without this conversion).
    #[inline]
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// PyTorch's `checked_convert` of this scalar to `dtype`: an error when the value does not
    /// fit an integer dtype (a negative integer fits `uint8` down to -255, wrapping as two's
    /// complement), and with `floats`, a narrower float dtype (infinities and NaN fit; a finite
    /// value beyond the dtype's largest does not). `full` checks integers only, `fill_` and
    /// `masked_fill` floats too, as PyTorch's do; `bool` takes every value.
    pub(crate) fn check_fits(self, dtype: DType, floats: bool) -> Result<()> {
        let fits = match dtype {
            DType::I64 | DType::I32 | DType::U8 => {
                let (lowest, max) = match dtype {
                    DType::I64 => (i64::MIN, i64::MAX),
                    DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
                    _ => (-255, 255),
                };
                match self {
                    Scalar::Bool(_) => true,
                    Scalar::Int(i) => (lowest..=max).contains(&i),
                    // `f < lowest || f > max` in `f64` with the bounds rounded as PyTorch's
                    // (2^63 for `int64`, which it refuses); NaN never fits, and no negative
                    // float fits an unsigned type.
                    Scalar::Float(f) => {
                        let lowest = if dtype == DType::U8 {
                            0.0
                        } else {
                            lowest as f64
                        };
                        f >= lowest
                            && if dtype == DType::I64 {
                                f < max as f64
                            } else {
                                f <= max as f64
                            }
                    }
                }
            }
            DType::F32 | DType::F16 | DType::BF16 if floats => {
                let max = match dtype {
                    DType::F32 => f64::from(f32::MAX),
                    DType::F16 => half::f16::MAX.to_f64(),
                    _ => half::bf16::MAX.to_f64(),
                };
                let v = self.to_f64();
                v.is_infinite() || v.is_nan() || v.abs() <= max
            }
            _ => true,
        };
        if fits {
            return Ok(());
        }
        // The C++ type PyTorch's message names.
        let ctype = match dtype {
            DType::I64 => "int64_t",
            DType::I32 => "int",
            DType::U8 => "uint8_t",
            DType::F32 => "float",
            DType::F16 => "c10::Half",
            _ => "c10::BFloat16",
        };
        Err(crate::Error::InvalidArgument(format!(
            "value cannot be converted to type {ctype} without overflow"
        )))
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
    /// A new contiguous tensor of `shape` filled with `s` in `dtype`: an integer scalar in an
    /// integer or bool dtype exactly (wrapping into the narrower ones, as PyTorch's cast of an
    /// `int64_t` scalar), everything else through [`Tensor::filled`]'s `f64`.
    pub(crate) fn filled_scalar(
        shape: &[usize],
        s: Scalar,
        dtype: DType,
        device: crate::Device,
    ) -> Result<Tensor> {
        let i = match s {
            Scalar::Int(i) if !dtype.is_floating_point() => i,
            _ => return Tensor::filled(shape, s.to_f64(), dtype, device),
        };
        // The value wrapped into the dtype: exact in `f64` for every dtype but `int64`.
        let wrapped = match dtype {
            DType::I32 => i64::from(i as i32),
            DType::U8 => i64::from(i as u8),
            DType::Bool => i64::from(i != 0),
            _ => i,
        };
        const EXACT: u64 = 1 << f64::MANTISSA_DIGITS;
        if wrapped.unsigned_abs() <= EXACT {
            return Tensor::filled(shape, wrapped as f64, dtype, device);
        }
        // An `int64` beyond 2^53: built on the host, then moved and expanded.
        let one = Tensor::from_vec(vec![wrapped], &[])?.to(device)?;
        if shape.is_empty() {
            return Ok(one);
        }
        one.expand(shape)?.contiguous()
    }

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
