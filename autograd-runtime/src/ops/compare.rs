//! Comparisons (`eq ne lt le gt ge`), `where`, `masked_fill`, `argmax`/`argmin`, `any`/`all`:
//! the ops that make and use bool masks and integer indices.
//!
//! Comparisons and the arg-reductions are not differentiable (PyTorch's outputs are bool and
//! int64, which never require grad); `where` and `masked_fill` are, through their value
//! operands.

use autograd_macros::{backward, differentiable, jvp};

use super::Scalar;
use super::binary::{no_tangent, spread_term};
use super::derivative_rules::{Binary, Read, Reads, Rule, UnaryWith, reduce_grad};
use crate::backend::CompareOp;
use crate::layout::wrap_dim;
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor};

/// A bool mask an op selects with: kept by the node to route the gradient (PyTorch saves the
/// condition of `where` and the mask of `masked_fill` the same way).
#[derive(Clone)]
struct Mask(Tensor);

#[differentiable(builtin, crate = "crate", name = "WhereBackward0")]
fn where_self(a: &Tensor, b: &Tensor, cond: &Mask) -> Result<Tensor> {
    kernels::of_tensor(a)?.where_(&cond.0, a, b)
}

#[backward(where_self)]
fn where_self_backward(
    grad: &Tensor,
    cond: &Mask,
    needs_input_grad: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let zero = Tensor::filled(&[], 0.0, grad.dtype(), grad.device())?;
    let ga = if needs_input_grad[0] {
        Some(Tensor::where_(&cond.0, grad, &zero)?)
    } else {
        None
    };
    let gb = if needs_input_grad[1] {
        Some(Tensor::where_(&cond.0, &zero, grad)?)
    } else {
        None
    };
    Ok((ga, gb))
}

/// `where(condition, self_t, other_t)`, a zero for an operand without a tangent.
#[jvp(where_self)]
fn where_self_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    cond: &Mask,
    result: &Tensor,
) -> Result<Tensor> {
    let zero = |t: &Tensor| Tensor::filled(&[], 0.0, t.dtype(), t.device());
    let t = match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => Tensor::where_(&cond.0, a_t, b_t)?,
        (Some(a_t), None) => Tensor::where_(&cond.0, a_t, &zero(a_t)?)?,
        (None, Some(b_t)) => Tensor::where_(&cond.0, &zero(b_t)?, b_t)?,
        (None, None) => return no_tangent(),
    };
    // The condition and the operand with a tangent may not span the result.
    spread_term(t, result)
}

#[differentiable(builtin, crate = "crate", name = "MaskedFillBackward0")]
fn masked_fill(x: &Tensor, mask: &Mask, value: Scalar) -> Result<Tensor> {
    let fill = Tensor::filled_scalar(&[], value, x.dtype(), x.device())?;
    let out = kernels::of_tensor(x)?.where_(&mask.0, &fill, x)?;
    if out.shape() != x.shape() {
        return Err(Error::shape(
            "masked_fill",
            format!(
                "the mask of shape {:?} does not broadcast to the tensor's shape {:?}",
                mask.0.shape(),
                x.shape()
            ),
        ));
    }
    Ok(out)
}

#[backward(masked_fill)]
fn masked_fill_backward(grad: &Tensor, mask: &Mask) -> Result<Tensor> {
    grad.masked_fill(&mask.0, 0.0)
}

/// `self_t.masked_fill(mask, 0)`.
#[jvp(masked_fill)]
fn masked_fill_jvp(x_t: &Tensor, mask: &Mask) -> Result<Tensor> {
    masked_fill(x_t, mask, Scalar::Float(0.0))
}

/// `mask` checked to be a bool tensor, as PyTorch's `where` and `masked_fill` require.
fn bool_mask(op: &str, mask: &Tensor) -> Result<Mask> {
    if mask.dtype() != DType::Bool {
        return Err(Error::InvalidArgument(format!(
            "{op} expected condition to be a boolean tensor, but got a tensor with dtype {}",
            mask.dtype().scalar_type_name()
        )));
    }
    Ok(Mask(mask.detach()))
}

impl Tensor {
    /// `self (op) other` with broadcasting and promotion: a bool tensor.
    fn compare(&self, op: CompareOp, other: &Tensor) -> Result<Tensor> {
        let dtype = super::result_type(self, other);
        let (a, b) = (self.promoted_to(dtype)?, other.promoted_to(dtype)?);
        kernels::of_pair(op.name(), &a, &b)?.compare(op, &a, &b)
    }

    /// `self (op) s`: the scalar in the promoted dtype.
    fn compare_scalar(&self, op: CompareOp, s: Scalar) -> Result<Tensor> {
        let dtype = s.result_type_with(self.dtype());
        let a = self.promoted_to(dtype)?;
        let b = Tensor::filled_scalar(&[], s, dtype, self.device())?;
        kernels::of_tensor(&a)?.compare(op, &a, &b)
    }

    /// Element-wise `self == other` with broadcasting and type promotion: a bool tensor (never
    /// recorded). The scalar forms are [`Tensor::eq_scalar`] and its siblings.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`] for incompatible shapes; [`Error::DeviceMismatch`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    /// let b = Tensor::from_vec(vec![1i64, 5, 3], &[3])?;
    /// let m = a.eq(&b)?;
    /// assert_eq!((m.dtype(), m.to_vec::<bool>()?), (DType::Bool, vec![true, false, true]));
    /// assert_eq!(a.gt_scalar(1.5)?.to_vec::<bool>()?, vec![false, true, true]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn eq(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Eq, other)
    }

    /// Element-wise `self != other` (true where either is NaN); as [`Tensor::eq`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq`].
    pub fn ne(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Ne, other)
    }

    /// Element-wise `self < other`; as [`Tensor::eq`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq`].
    pub fn lt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Lt, other)
    }

    /// Element-wise `self <= other`; as [`Tensor::eq`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq`].
    pub fn le(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Le, other)
    }

    /// Element-wise `self > other`; as [`Tensor::eq`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq`].
    pub fn gt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Gt, other)
    }

    /// Element-wise `self >= other`; as [`Tensor::eq`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq`].
    pub fn ge(&self, other: &Tensor) -> Result<Tensor> {
        self.compare(CompareOp::Ge, other)
    }

    /// Element-wise `self == s` for a scalar of any Rust number type (promoted as PyTorch's
    /// `x == 2.5`: an integer tensor compares as `f32` with a float scalar).
    ///
    /// # Errors
    ///
    /// A device error.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let labels = Tensor::from_vec(vec![0i64, 2, 2], &[3])?;
    /// assert_eq!(labels.eq_scalar(2)?.to_vec::<bool>()?, vec![false, true, true]);
    /// assert_eq!(labels.lt_scalar(0.5)?.to_vec::<bool>()?, vec![true, false, false]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn eq_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Eq, s.into())
    }

    /// Element-wise `self != s`; as [`Tensor::eq_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq_scalar`].
    pub fn ne_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Ne, s.into())
    }

    /// Element-wise `self < s`; as [`Tensor::eq_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq_scalar`].
    pub fn lt_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Lt, s.into())
    }

    /// Element-wise `self <= s`; as [`Tensor::eq_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq_scalar`].
    pub fn le_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Le, s.into())
    }

    /// Element-wise `self > s`; as [`Tensor::eq_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq_scalar`].
    pub fn gt_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Gt, s.into())
    }

    /// Element-wise `self >= s`; as [`Tensor::eq_scalar`].
    ///
    /// # Errors
    ///
    /// As [`Tensor::eq_scalar`].
    pub fn ge_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        self.compare_scalar(CompareOp::Ge, s.into())
    }

    /// PyTorch's `torch.where(condition, x, y)`: `x` where `condition` is true, else `y`, with
    /// three-way broadcasting and `x`, `y` promoted to their result type. Differentiable in `x`
    /// and `y` (`WhereBackward0`: the gradient goes to the side that was picked).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `condition` is not a bool tensor (PyTorch's text);
    /// [`Error::Broadcast`]; [`Error::DeviceMismatch`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0f64, 2.0, -3.0], &[3])?.requires_grad_(true)?;
    /// let relu = Tensor::where_(&x.gt_scalar(0)?, &x, &Tensor::scalar(0.0f64))?;
    /// assert_eq!(relu.to_vec::<f64>()?, vec![0.0, 2.0, 0.0]);
    /// relu.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![0.0, 1.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn where_(condition: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let cond = bool_mask("where", condition)?;
        let dtype = super::result_type(x, y);
        if x.dtype() != dtype || y.dtype() != dtype {
            return Tensor::where_(condition, &x.to_dtype(dtype)?, &y.to_dtype(dtype)?);
        }
        where_self(x, y, &cond)
    }

    /// PyTorch's `masked_fill(mask, value)`: `value` where `mask` (a bool tensor broadcasting to
    /// this tensor's shape) is true, in this tensor's dtype (an integer tensor filled with 2.7
    /// holds 2; an integer value stays exact). Differentiable (`MaskedFillBackward0`: no
    /// gradient where the value was filled).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `mask` is not a bool tensor, or in PyTorch's words when
    /// the dtype cannot hold `value` (`"value cannot be converted to type c10::Half without
    /// overflow"`); [`Error::Shape`] when `mask` does not broadcast to this tensor's shape.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// // A causal attention mask: -inf above the diagonal.
    /// let scores = Tensor::zeros(&[2, 2], autograd_runtime::DType::F32)?;
    /// let above = Tensor::ones(&[2, 2], autograd_runtime::DType::Bool)?.triu(1)?;
    /// let masked = scores.masked_fill(&above, f64::NEG_INFINITY)?;
    /// assert_eq!(masked.to_vec::<f32>()?, vec![0.0, f32::NEG_INFINITY, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        let mask = bool_mask("masked_fill_", mask)?;
        // The value in this tensor's dtype, which it keeps (PyTorch's `masked_fill` does not
        // promote: an integer tensor filled with 2.7 holds 2).
        value.check_fits(self.dtype(), true)?;
        masked_fill(self, &mask, value)
    }

    /// The flat positions (`dim == None`) or the positions along `dim` of the first maximum, as
    /// an `I64` tensor (PyTorch's `argmax`; NaN counts as the maximum).
    ///
    /// # Errors
    ///
    /// [`Error::DimOutOfRange`]; [`Error::Shape`] for an empty tensor or dim.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let logits = Tensor::from_vec(vec![0.1f32, 2.0, 0.3, 5.0, 0.0, 1.0], &[2, 3])?;
    /// let pred = logits.argmax(Some(1), false)?;
    /// assert_eq!((pred.dtype(), pred.to_vec::<i64>()?), (DType::I64, vec![1, 0]));
    /// assert_eq!(logits.argmax(None, false)?.item::<i64>()?, 3);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn argmax(&self, dim: Option<usize>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmax", dim, keepdim, true)
    }

    /// As [`Tensor::argmax`], for the first minimum (PyTorch's `argmin`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::argmax`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3i32, 1, 2, 1], &[4])?;
    /// assert_eq!(t.argmin(Some(0), false)?.item::<i64>()?, 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn argmin(&self, dim: Option<usize>, keepdim: bool) -> Result<Tensor> {
        self.arg_extreme("argmin", dim, keepdim, false)
    }

    fn arg_extreme(
        &self,
        op: &'static str,
        dim: Option<usize>,
        keepdim: bool,
        largest: bool,
    ) -> Result<Tensor> {
        if self.numel() == 0 {
            return Err(Error::shape(
                op,
                "Expected reduction dim to be specified for input.numel() == 0.",
            ));
        }
        let Some(dim) = dim else {
            let flat = self.reshape(&[self.numel()])?;
            let at = flat.arg_extreme(op, Some(0), false, largest)?;
            return if keepdim {
                at.reshape(&vec![1; self.ndim()])
            } else {
                Ok(at)
            };
        };
        let dim = wrap_dim(dim as isize, self.ndim().max(1))?;
        let k = kernels::of_tensor(self)?;
        let index = if largest {
            k.argmax(self, dim)?
        } else {
            k.argmin(self, dim)?
        };
        let mut shape = self.shape().to_vec();
        if self.ndim() > 0 {
            if keepdim {
                shape[dim] = 1;
            } else {
                shape.remove(dim);
            }
        }
        let index: Vec<i64> = index.into_iter().map(|i| i as i64).collect();
        Tensor::from_vec(index, &shape)?.to(self.device())
    }

    /// Whether any element is nonzero (true), as a 0-dim bool tensor (PyTorch's `any()`; uint8
    /// for a uint8 tensor, as PyTorch).
    ///
    /// # Errors
    ///
    /// A device error.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![0.0f32, 2.0], &[2])?;
    /// assert!(t.any()?.item::<bool>()?);
    /// assert!(!t.all()?.item::<bool>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn any(&self) -> Result<Tensor> {
        let nonzero = self.ne_scalar(0)?.promoted_to(DType::I64)?;
        let n = kernels::of_tensor(&nonzero)?.sum_all(&nonzero)?;
        self.uint8_kept(n.gt_scalar(0)?)
    }

    /// PyTorch's `any` / `all` of a uint8 tensor are uint8 (0 or 1), bool for other dtypes.
    fn uint8_kept(&self, b: Tensor) -> Result<Tensor> {
        if self.dtype() == DType::U8 {
            b.to_dtype(DType::U8)
        } else {
            Ok(b)
        }
    }

    /// Whether every element is nonzero, as a 0-dim bool tensor (PyTorch's `all()`; uint8 for a
    /// uint8 tensor, as PyTorch).
    ///
    /// # Errors
    ///
    /// A device error.
    pub fn all(&self) -> Result<Tensor> {
        let zero = self.eq_scalar(0)?.promoted_to(DType::I64)?;
        let n = kernels::of_tensor(&zero)?.sum_all(&zero)?;
        self.uint8_kept(n.eq_scalar(0)?)
    }
}

// ----- derivative rules for `#[differentiable(derive)]` (see `derivative_rules.rs`) -------------

/// The rule of a comparison of two tensors: no gradient reaches either operand (PyTorch's
/// comparisons give bool tensors, which are not differentiable).
const NO_GRADIENT_PAIR: Rule<Binary> = Rule {
    reads: Reads {
        operands: &[Read::Nothing, Read::Nothing],
        result: false,
        value_for: &[],
    },
    apply: |_grad, _needs, _a, _b, _result| Ok((None, None)),
};

/// The rule of a comparison with a scalar: a zero gradient in the operand's shape (a derived
/// body that feeds a mask into arithmetic gets no gradient through it, as in PyTorch).
const NO_GRADIENT_SCALAR: Rule<UnaryWith<f64>> = Rule {
    reads: Reads {
        operands: &[Read::Shape],
        result: false,
        value_for: &[],
    },
    apply: |grad, x, _result, _s| Tensor::filled(x.shape(), 0.0, grad.dtype(), grad.device()),
};

/// The comparisons and `masked_fill` as written in a derived body: a mask made in the body
/// (`x.gt_scalar(0.0)?`) is kept for the backward, and only the value operand gets a gradient,
/// routed as the recorded op's `MaskedFillBackward0` routes it.
#[doc(hidden)]
#[allow(non_upper_case_globals, clippy::type_complexity)]
impl super::DerivativeRules {
    pub const eq: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const ne: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const lt: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const le: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const gt: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const ge: Rule<Binary> = NO_GRADIENT_PAIR;
    pub const eq_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;
    pub const ne_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;
    pub const lt_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;
    pub const le_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;
    pub const gt_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;
    pub const ge_scalar: Rule<UnaryWith<f64>> = NO_GRADIENT_SCALAR;

    pub const masked_fill: Rule<
        fn(
            &Tensor,
            [bool; 2],
            &Tensor,
            &Tensor,
            &Tensor,
            f64,
        ) -> Result<(Option<Tensor>, Option<Tensor>)>,
    > = Rule {
        // The mask's values; the filled tensor only as the shape to reduce to.
        reads: Reads {
            operands: &[Read::Shape, Read::Value],
            result: false,
            value_for: &[],
        },
        apply: |grad, needs, x, mask, _result, _value| {
            let gx = if needs[0] {
                Some(grad.masked_fill(mask, 0.0)?)
            } else {
                None
            };
            Ok((reduce_grad(gx, x)?, None))
        },
    };
}

impl Tensor {
    /// The derivative rule of [`Tensor::where_`] in a derived body (called there as
    /// `Tensor::where_(&cond, &x, &y)`, so its rule is looked up beside the function): the
    /// condition is kept, and each value operand gets the gradient where it was chosen, as
    /// `WhereBackward0` routes it.
    #[doc(hidden)]
    #[allow(non_upper_case_globals, clippy::type_complexity)]
    pub const __autograd_where__rule: Rule<
        fn(
            &Tensor,
            [bool; 3],
            &Tensor,
            &Tensor,
            &Tensor,
            &Tensor,
        ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)>,
    > = Rule {
        reads: Reads {
            operands: &[Read::Value, Read::Shape, Read::Shape],
            result: false,
            value_for: &[],
        },
        apply: |grad, needs, cond, x, y, _result| {
            let cond = bool_mask("where", cond)?;
            let (gx, gy) = where_self_backward(grad, &cond, [needs[1], needs[2]])?;
            Ok((None, reduce_grad(gx, x)?, reduce_grad(gy, y)?))
        },
    };
}
