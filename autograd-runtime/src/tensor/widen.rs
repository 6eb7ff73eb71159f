//! How a float kernel runs on operands that are not `f32` or `f64`: [`Widen`].
//!
//! The backend's float kernels (element-wise maths, reductions, softmax, matmul, the backward
//! formulas) take `f32` and `f64` buffers. PyTorch's CPU kernels compute half-precision tensors
//! in `f32` (their "opmath" type) and round each result once to half; its float functions of
//! an integer tensor (`exp`, `sin`, `erf`, ...) promote it to the default dtype. The adapter
//! (`tensor/kernels/`) applies the same rules here, once, for every kernel: the backend never
//! sees a half or integer buffer in a float kernel, and a new dtype is one arm of [`Widen::of`].

use super::Tensor;
use super::kernels::Kernels;
use crate::layout::Layout;
use crate::{DType, Result};

/// How a float kernel sees operands of one dtype: converted to `compute`, and the result
/// converted back to `back` (or kept in `compute` when `back` is `None`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Widen {
    compute: DType,
    back: Option<DType>,
}

impl Widen {
    /// For a kernel whose result has its operands' dtype: half types compute in `f32` and round
    /// back (PyTorch's CPU kernels); integers and bools compute in `f64` and convert back (exact
    /// while every value and partial result stays within 2^53). `None` for `f32` and `f64`,
    /// which the kernels take as they are.
    pub(crate) fn of(dtype: DType) -> Option<Widen> {
        match dtype {
            DType::F32 | DType::F64 => None,
            DType::F16 | DType::BF16 => Some(Widen {
                compute: DType::F32,
                back: Some(dtype),
            }),
            DType::I64 | DType::I32 | DType::U8 | DType::Bool => Some(Widen {
                compute: DType::F64,
                back: Some(dtype),
            }),
        }
    }

    /// For a floating function (`exp`, `erf`, `x ** 0.5`, ...): half types as [`Widen::of`];
    /// integers and bools promote to the default dtype, `f32`, and stay there, as PyTorch's
    /// unary float ops promote them.
    pub(crate) fn to_float(dtype: DType) -> Option<Widen> {
        if dtype.is_floating_point() {
            return Widen::of(dtype);
        }
        Some(Widen {
            compute: DType::F32,
            back: None,
        })
    }

    /// `f` run on `xs` converted to the compute dtype, its result converted back.
    pub(crate) fn run<const N: usize>(
        self,
        k: Kernels,
        xs: [&Tensor; N],
        f: impl FnOnce([&Tensor; N]) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let wide = xs
            .iter()
            .map(|x| convert_keeping_strides(k, x, self.compute))
            .collect::<Result<Vec<_>>>()?;
        let out = f(std::array::from_fn(|i| &wide[i]))?;
        match self.back {
            Some(dtype) if dtype != out.dtype() => k.to_dtype(&out, dtype),
            _ => Ok(out),
        }
    }
}

/// `x` in `dtype`. A permuted dense operand (a transpose, the heads of attention) is converted
/// as the flat block of memory it covers, with one pass of the slice kernels, and viewed with
/// its own strides again: a kernel takes a strided operand as it would take `x`, while a
/// contiguous conversion of it would be a gather through every stride (for a matmul's
/// transposed weight, every element a new cache line).
fn convert_keeping_strides(k: Kernels, x: &Tensor, dtype: DType) -> Result<Tensor> {
    let l = x.layout();
    let numel = l.numel();
    if numel == 0 || l.is_contiguous() || !l.is_non_overlapping_and_dense() {
        return k.to_dtype(x, dtype);
    }
    // Non-overlapping and dense: the elements are exactly `offset..offset + numel`.
    let flat = Tensor::from_parts(
        x.0.storage.clone(),
        Layout {
            shape: [numel].into_iter().collect(),
            strides: [1].into_iter().collect(),
            offset: l.offset,
        },
    );
    let wide = k.to_dtype(&flat, dtype)?;
    Ok(Tensor::from_parts(
        wide.0.storage.clone(),
        Layout {
            shape: l.shape.clone(),
            strides: l.strides.clone(),
            offset: 0,
        },
    ))
}
