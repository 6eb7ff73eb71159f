//! Element-wise binary ops with PyTorch broadcasting (`add sub mul div`), and their scalar forms.
//! Gradients are reduced back to each input's shape by the engine's `validate_outputs` (B07).

use autograd_macros::{backward, differentiable, jvp};

use super::Scalar;
use super::derivative_rules::{Read, Reads, Rule, UnaryWith};
use crate::backend::{BinaryOp, cpu};
use crate::layout::is_expandable_to;
use crate::tensor::data::ElementMap;
use crate::tensor::kernels;
use crate::{DType, Element, Error, Result, Tensor};

/// `x (op) s` or `s (op) x` for one element.
#[derive(Clone, Copy)]
struct ScalarOp {
    op: BinaryOp,
    s: f64,
    scalar_on_left: bool,
}

impl ElementMap for ScalarOp {
    #[inline]
    fn apply<T: Element>(self, x: T) -> T {
        let s = T::from_f64(self.s);
        let (a, b) = if self.scalar_on_left { (s, x) } else { (x, s) };
        match self.op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Minimum => cpu::minimum(a, b),
            BinaryOp::Maximum => cpu::maximum(a, b),
            BinaryOp::Fmod => a % b,
            BinaryOp::Remainder => cpu::remainder(a, b),
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::MinShare => cpu::min_share(a, b),
        }
    }
}

// ----- the ops, declared as PyTorch's derivatives.yaml entries ---------------------------------

#[differentiable(builtin, crate = "crate", rule)]
fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Add, "add", b)
}

#[backward(add)]
fn add_backward(grad: &Tensor, needs_input_grad: [bool; 2]) -> (Tensor, Option<Tensor>) {
    (grad.clone(), needs_input_grad[1].then(|| grad.clone()))
}

/// `ȧ + ḃ`.
#[jvp(add)]
fn add_jvp(a_t: Option<&Tensor>, b_t: Option<&Tensor>, result: &Tensor) -> Result<Tensor> {
    match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => a_t.add(b_t),
        // A copy: the result's tangent must not be the input's.
        (Some(t), None) | (None, Some(t)) => spread(t, result),
        (None, None) => no_tangent(),
    }
}

/// An input's tangent `t` as the tangent of `result`, the other operand's tangent being zero:
/// broadcast to `result`'s shape and promoted with `result`'s dtype, as PyTorch's sum with the
/// other operand's zero tangent (`_efficientzerotensor`, of that operand's dtype) gives it, and
/// always a tensor of its own (the result's tangent may not be the input's: an in-place op on
/// one would write into the other).
pub(super) fn spread(t: &Tensor, result: &Tensor) -> Result<Tensor> {
    let dtype = t.dtype().promote(result.dtype());
    let expanded;
    let t = if t.shape() == result.shape() {
        t
    } else {
        expanded = t.broadcast_to(result.shape())?;
        &expanded
    };
    if dtype == t.dtype() {
        t.copy()
    } else {
        t.to_dtype(dtype)
    }
}

/// [`spread`] for a term computed by the rule (a tensor of its own already): broadcast and
/// promoted only where it needs to be.
pub(super) fn spread_term(t: Tensor, result: &Tensor) -> Result<Tensor> {
    if t.shape() == result.shape() && t.dtype().promote(result.dtype()) == t.dtype() {
        Ok(t)
    } else {
        spread(&t, result)
    }
}

/// The tangent of a binary op called with no input tangent: never, as the op runs its rule
/// only when an input has one.
pub(super) fn no_tangent() -> Result<Tensor> {
    Err(Error::msg(
        "internal error: a forward derivative rule with no tangent",
    ))
}

#[differentiable(builtin, crate = "crate", rule)]
fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_bool_sub(a.dtype() == DType::Bool, b.dtype() == DType::Bool)?;
    a.binary_kernel(BinaryOp::Sub, "sub", b)
}

/// PyTorch's `sub_check`: subtraction refuses two bool operands, and one bool operand (a tensor
/// or a scalar) beside another dtype, each with its own text.
fn check_bool_sub(a_bool: bool, b_bool: bool) -> Result<()> {
    if a_bool && b_bool {
        return Err(Error::InvalidArgument(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` \
             or `logical_xor()` operator instead."
                .into(),
        ));
    }
    if a_bool || b_bool {
        return Err(Error::InvalidArgument(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead."
                .into(),
        ));
    }
    Ok(())
}

/// The scalar of `x + s` / `s - x` as PyTorch's CPU kernels see it: cast to the tensor's dtype
/// first when that is a half type (through `f32`, as `c10::Half(double)`), exact otherwise.
/// (`x * s` and `x / s` take the scalar in `f32` unrounded: PyTorch's `original_scalar_value`.)
fn additive_scalar(dtype: DType, s: f64) -> f64 {
    match dtype {
        DType::F16 => half::f16::from_f32(s as f32).to_f64(),
        DType::BF16 => half::bf16::from_f32(s as f32).to_f64(),
        _ => s,
    }
}

/// `x / s` (PyTorch's `DivBackward0` with a scalar divisor). As PyTorch's CPU kernel does,
/// `f32`/`f64` multiply by `1 / s`, and a half-precision `x` divides in `f32` by the scalar
/// (not rounded to half) and rounds once.
#[differentiable(builtin, crate = "crate", name = "DivBackward0", rule)]
fn div_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    if x.dtype().is_half() {
        x.scalar_kernel(BinaryOp::Div, s, false)
    } else {
        x.scalar_kernel(BinaryOp::Mul, 1.0 / s, false)
    }
}

#[backward(div_scalar)]
fn div_scalar_backward(grad: &Tensor, s: f64) -> Result<Tensor> {
    div_scalar(grad, s)
}

/// `ẋ / s`: the forward's own kernel.
#[jvp(div_scalar)]
fn div_scalar_jvp(x_t: &Tensor, s: f64) -> Result<Tensor> {
    div_scalar(x_t, s)
}

#[backward(sub)]
fn sub_backward(grad: &Tensor, needs_input_grad: [bool; 2]) -> Result<(Tensor, Option<Tensor>)> {
    let gb = if needs_input_grad[1] {
        Some(grad.neg()?)
    } else {
        None
    };
    Ok((grad.clone(), gb))
}

/// `ȧ - ḃ`.
#[jvp(sub)]
fn sub_jvp(a_t: Option<&Tensor>, b_t: Option<&Tensor>, result: &Tensor) -> Result<Tensor> {
    match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => a_t.sub(b_t),
        (Some(a_t), None) => spread(a_t, result),
        (None, Some(b_t)) => spread_term(b_t.neg()?, result),
        (None, None) => no_tangent(),
    }
}

/// Each operand is saved only if the other one needs its gradient (B14: with only `a` requiring
/// grad, `a` is not saved and may be modified in place before backward).
#[differentiable(builtin, crate = "crate", rule)]
fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Mul, "mul", b)
}

/// `ȧ b + a ḃ`.
#[jvp(mul)]
fn mul_jvp(a_t: Option<&Tensor>, b_t: Option<&Tensor>, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    product_rule(a_t.map(|t| t.mul(b)), b_t.map(|t| a.mul(t)))
}

/// `ȧ·b + a·ḃ` from the terms present (the tangents given; at least one is).
pub(super) fn product_rule(
    left: Option<Result<Tensor>>,
    right: Option<Result<Tensor>>,
) -> Result<Tensor> {
    match (left.transpose()?, right.transpose()?) {
        (Some(l), Some(r)) => l.add(&r),
        (Some(t), None) | (None, Some(t)) => Ok(t),
        (None, None) => no_tangent(),
    }
}

#[backward(mul)]
fn mul_backward(
    grad: &Tensor,
    // PyTorch's order (`other` before `self`): saved tensors are unpacked in parameter order, so
    // when both were modified in place, the error names the one PyTorch names.
    #[needed_for(a)] b: Option<&Tensor>,
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = b.map(|b| grad.mul(b)).transpose()?;
    // The last use of `grad`: its buffer may take the product.
    let gb = a.map(|a| grad.last_use(BinaryOp::Mul, a)).transpose()?;
    Ok((ga, gb))
}

#[differentiable(builtin, crate = "crate", rule)]
fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.binary_kernel(BinaryOp::Div, "div", b)
}

#[backward(div)]
fn div_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    b: &Tensor, // unpacked first, as PyTorch's `other_`
    #[needed_for(b)] a: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = if needs_input_grad[0] {
        Some(grad.div(b)?)
    } else {
        None
    };
    // d(a/b)/db = -a / b²
    let gb = match a {
        Some(a) => Some(grad.mul(a)?.div(&b.mul(b)?)?.neg()?),
        None => None,
    };
    Ok((ga, gb))
}

/// `(ȧ - ḃ · result) / b`, from the result as PyTorch's.
#[jvp(div)]
fn div_jvp(
    a_t: Option<&Tensor>,
    b_t: Option<&Tensor>,
    b: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    match (a_t, b_t) {
        (Some(a_t), Some(b_t)) => a_t.sub(&b_t.mul(result)?)?.div(b),
        (Some(a_t), None) => a_t.div(b),
        (None, Some(b_t)) => b_t.mul(result)?.div(b)?.neg(),
        (None, None) => no_tangent(),
    }
}

#[differentiable(builtin, crate = "crate", name = "MulBackward0", rule)]
fn mul_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Mul, s, false)
}

#[backward(mul_scalar)]
fn mul_scalar_backward(grad: &Tensor, s: f64) -> Result<Tensor> {
    grad.mul_scalar_last_use(s)
}

/// `ẋ s`.
#[jvp(mul_scalar)]
fn mul_scalar_jvp(x_t: &Tensor, s: f64) -> Result<Tensor> {
    x_t.mul_scalar(s)
}

#[differentiable(builtin, crate = "crate", name = "AddBackward0", rule)]
fn add_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Add, s, false)
}

#[backward(add_scalar)]
fn add_scalar_backward(grad: &Tensor) -> Tensor {
    grad.clone()
}

/// `result: self_t.clone()`: a copy, as the result's tangent may not be the input's.
#[jvp(add_scalar)]
fn add_scalar_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.copy()
}

/// `s - x`.
#[differentiable(builtin, crate = "crate", name = "RsubBackward1", rule)]
fn rsub_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Sub, s, true)
}

#[backward(rsub_scalar)]
fn rsub_scalar_backward(grad: &Tensor) -> Result<Tensor> {
    grad.neg()
}

/// `-ẋ`.
#[jvp(rsub_scalar)]
fn rsub_scalar_jvp(x_t: &Tensor) -> Result<Tensor> {
    x_t.neg()
}

/// `1 / x`, PyTorch's `reciprocal`: saves its result (not `x`), as PyTorch does.
#[differentiable(builtin, crate = "crate")]
fn reciprocal(x: &Tensor) -> Result<Tensor> {
    x.scalar_kernel(BinaryOp::Div, 1.0, true)
}

#[backward(reciprocal)]
fn reciprocal_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    // d(1/x)/dx = -1/x² = -result²
    grad.mul(&result.mul(result)?)?.neg()
}

/// `-ẋ · result²`, from the result as PyTorch's.
#[jvp(reciprocal)]
fn reciprocal_jvp(x_t: &Tensor, result: &Tensor) -> Result<Tensor> {
    x_t.mul(&result.mul(result)?)?.neg()
}

/// d(s/x)/dx = -s / x²: the derivative rule of `s / x` in `#[differentiable(derive)]` bodies.
fn rdiv_scalar_backward(grad: &Tensor, x: &Tensor, s: f64) -> Result<Tensor> {
    grad.mul_scalar(-s)?.div(&x.mul(x)?)
}

/// The element count of `a` and `b` broadcast together, without building the shape (this runs
/// for every broadcasting op): `None` if they do not broadcast, PyTorch's overflow error if the
/// count exceeds `usize`.
fn broadcast_numel(op: &'static str, a: &[usize], b: &[usize]) -> Result<Option<usize>> {
    let n = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| (i + s.len()).checked_sub(n).map_or(1, |j| s[j]);
    let mut count = 1usize;
    for i in 0..n {
        let size = match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => x,
            (1, y) => y,
            _ => return Ok(None),
        };
        count = count.checked_mul(size).ok_or_else(|| {
            crate::Error::shape(
                op,
                format!("storage size calculation overflowed with sizes={a:?} and {b:?}"),
            )
        })?;
    }
    Ok(Some(count))
}

impl Tensor {
    /// `self (op) other` for the last use of `self` in a backward formula: written over this
    /// tensor's buffer when nothing else references it ([`Tensor::is_uniquely_owned`]), the
    /// result has this tensor's shape, and the formula is not recorded (`create_graph`);
    /// otherwise the ordinary, recorded op. Nobody can observe the write, so the result is
    /// the same either way, without an allocation.
    pub(crate) fn last_use(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        if !super::records(&[self, other])
            && self.is_uniquely_owned()
            && is_expandable_to(other.shape(), self.shape())
            && self.dtype() == other.dtype()
            && self.device() == other.device()
        {
            kernels::of_tensor(self)?.binary_inplace(op, self, other)?;
            return Ok(self.clone());
        }
        match op {
            BinaryOp::Add => self.add(other),
            BinaryOp::Sub => self.sub(other),
            BinaryOp::Mul => self.mul(other),
            BinaryOp::Div => self.div(other),
            BinaryOp::Minimum => self.minimum(other),
            BinaryOp::Maximum => self.maximum(other),
            BinaryOp::Fmod => self.fmod(other),
            BinaryOp::Remainder => self.remainder(other),
            BinaryOp::Atan2 => self.atan2(other),
            BinaryOp::MinShare => self.binary_kernel(BinaryOp::MinShare, "minimum", other),
        }
    }

    /// `self * s` for the last use of `self` in a backward formula: as [`Tensor::last_use`],
    /// written over this tensor's buffer when nothing else references it and the formula is not
    /// recorded; otherwise the ordinary, recorded [`Tensor::mul_scalar`]. On a scalar chain this
    /// is every node's whole backward: the incoming gradient becomes the outgoing one, with no
    /// tensor built and none retired.
    pub(crate) fn mul_scalar_last_use(&self, s: f64) -> Result<Tensor> {
        if self.device().is_host() && !super::records(&[self]) && self.is_uniquely_owned() {
            if self.numel() <= 2 && self.dtype().is_native_float() {
                self.map_elements_in_place(ScalarOp {
                    op: BinaryOp::Mul,
                    s,
                    scalar_on_left: false,
                });
                return Ok(self.clone());
            }
            // Not for halves, whose factor would round to half (PyTorch multiplies by it in
            // `f32`): they take `mul_scalar` below.
            if self.dtype().is_native_float() {
                let factor = Tensor::filled(&[], s, self.dtype(), self.device())?;
                kernels::of_tensor(self)?.binary_inplace(BinaryOp::Mul, self, &factor)?;
                return Ok(self.clone());
            }
        }
        self.mul_scalar(s)
    }

    /// `self (op) other` with broadcasting, not recorded.
    pub(crate) fn binary_kernel(
        &self,
        op: BinaryOp,
        name: &'static str,
        other: &Tensor,
    ) -> Result<Tensor> {
        if self.dtype() != other.dtype()
            || (!self.dtype().is_floating_point() && matches!(op, BinaryOp::Div | BinaryOp::Atan2))
        {
            // PyTorch's TensorIterator: both operands in the result type (true division and
            // `atan2` of integers in the default float dtype). The engine casts each input's
            // gradient back to its dtype.
            let mut dtype = super::result_type(self, other);
            if !dtype.is_floating_point() && matches!(op, BinaryOp::Div | BinaryOp::Atan2) {
                dtype = crate::DType::F32;
            }
            let (a, b) = (self.promoted_to(dtype)?, other.promoted_to(dtype)?);
            return a.binary_kernel(op, name, &b);
        }
        if self.shape() != other.shape() {
            // A broadcast result can be far larger than either operand: check it can exist.
            // Incompatible shapes are left to the backend, which reports them.
            let larger = self.numel().max(other.numel());
            if let Some(n) =
                broadcast_numel(name, self.shape(), other.shape())?.filter(|&n| n > larger)
            {
                crate::layout::check_alloc(name, n, self.dtype().size_of())?;
            }
        }
        kernels::of_pair(name, self, other)?.binary(op, self, other)
    }

    /// `self (op) s` (or `s (op) self`), not recorded. Scalars (every gradient of a scalar
    /// graph) are computed inline, without a trip through the backend; the backend's path is
    /// out of line.
    #[inline]
    pub(crate) fn scalar_kernel(
        &self,
        op: BinaryOp,
        s: f64,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        if self.numel() <= 2
            && self.device().is_host()
            && self.dtype().is_native_float()
            && matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            )
        {
            return Ok(self.map_elements(ScalarOp {
                op,
                s,
                scalar_on_left,
            }));
        }
        self.scalar_kernel_backend(op, s, scalar_on_left)
    }

    /// `self (op) s` (or `s (op) self`) for an integer scalar and an integer or bool tensor:
    /// the scalar exact in the tensor's (promoted) dtype, not through `f64` (which keeps
    /// integers exact only up to 2^53), and wrapped into a narrower integer dtype as PyTorch
    /// casts its `int64_t` scalar. `None` for every other pair (a float on either side), which
    /// takes the recorded ops. Nothing here can require grad, so nothing is recorded.
    ///
    /// The test that rules out a float on either side is inline (every scalar op of a float
    /// graph asks it: about 30 instructions per op as a call); the integer case is out of line.
    #[inline(always)]
    pub(super) fn integer_scalar_op(
        &self,
        op: BinaryOp,
        name: &'static str,
        s: Scalar,
        scalar_on_left: bool,
    ) -> Result<Option<Tensor>> {
        // A float tensor makes the result type float whatever the scalar.
        if !matches!(s, Scalar::Int(_)) || self.dtype().is_floating_point() {
            return Ok(None);
        }
        self.integer_scalar_op_of_ints(op, name, s, scalar_on_left)
            .map(Some)
    }

    /// [`Tensor::integer_scalar_op`] for an integer scalar and an integer or bool tensor, whose
    /// result type is integer.
    #[inline(never)]
    fn integer_scalar_op_of_ints(
        &self,
        op: BinaryOp,
        name: &'static str,
        s: Scalar,
        scalar_on_left: bool,
    ) -> Result<Tensor> {
        let dtype = s.result_type_with(self.dtype());
        let x = self.promoted_to(dtype)?;
        let t = Tensor::filled_scalar(&[], s, dtype, x.device())?;
        if scalar_on_left {
            t.binary_kernel(op, name, &x)
        } else {
            x.binary_kernel(op, name, &t)
        }
    }

    /// [`Tensor::scalar_kernel`] through the backend (more than two elements, or device memory).
    #[inline(never)]
    fn scalar_kernel_backend(&self, op: BinaryOp, s: f64, scalar_on_left: bool) -> Result<Tensor> {
        kernels::of_tensor(self)?.binary_scalar(op, self, s, scalar_on_left)
    }

    /// Element-wise `self + other`, broadcasting as PyTorch.
    ///
    /// # Errors
    ///
    /// [`Error::Broadcast`](crate::Error::Broadcast) for incompatible shapes,
    /// [`Error::DTypeMismatch`](crate::Error::DTypeMismatch),
    /// [`Error::DeviceMismatch`](crate::Error::DeviceMismatch).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3, 1])?;
    /// let b = Tensor::from_vec(vec![10.0f32, 20.0], &[2])?;
    /// assert_eq!(a.add(&b)?.shape(), &[3, 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        add(self, other)
    }

    /// Element-wise `self - other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![5.0f64, 7.0], &[2])?;
    /// assert_eq!(a.sub(&Tensor::scalar(1.0))?.to_vec::<f64>()?, vec![4.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        sub(self, other)
    }

    /// Element-wise `self * other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![2.0f64, 3.0], &[2])?.requires_grad_(true)?;
    /// a.mul(&a)?.sum()?.backward()?;
    /// assert_eq!(a.grad().unwrap().to_vec::<f64>()?, vec![4.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        mul(self, other)
    }

    /// Element-wise `self / other`, broadcasting.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 3.0], &[2])?;
    /// assert_eq!(a.div(&Tensor::scalar(2.0))?.to_vec::<f64>()?, vec![0.5, 1.5]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        div(self, other)
    }

    /// `self * s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// [`Error::DeviceUnavailable`](crate::Error::DeviceUnavailable) if this build has no kernels
    /// for the tensor's device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).mul_scalar(2.0)?.item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[inline]
    pub fn mul_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        let s = s.into();
        if let Some(r) = self.integer_scalar_op(BinaryOp::Mul, "mul", s, false)? {
            return Ok(r);
        }
        self.with_promoted(s, |x| mul_scalar(x, s.to_f64()))
    }

    /// `self + s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).add_scalar(2.0)?.item::<f64>()?, 5.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[inline]
    pub fn add_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        let s = s.into();
        if let Some(r) = self.integer_scalar_op(BinaryOp::Add, "add", s, false)? {
            return Ok(r);
        }
        self.with_promoted(s, |x| add_scalar(x, additive_scalar(x.dtype(), s.to_f64())))
    }

    /// `self - s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).sub_scalar(2.0)?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[inline]
    pub fn sub_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        let s = s.into();
        check_bool_sub(self.dtype() == DType::Bool, matches!(s, Scalar::Bool(_)))?;
        self.add_scalar(s.neg())
    }

    /// `self / s` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).div_scalar(2.0)?.item::<f64>()?, 1.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        // True division: a float whatever the operands (an integer tensor goes to `f32`).
        let s = s.into().to_f64();
        if self.dtype().is_floating_point() {
            div_scalar(self, s)
        } else {
            div_scalar(&self.promoted_for(Scalar::Float(s))?, s)
        }
    }

    /// `s - self` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).rsub_scalar(1.0)?.item::<f64>()?, -2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[inline]
    pub fn rsub_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        let s = s.into();
        check_bool_sub(self.dtype() == DType::Bool, matches!(s, Scalar::Bool(_)))?;
        if let Some(r) = self.integer_scalar_op(BinaryOp::Sub, "sub", s, true)? {
            return Ok(r);
        }
        self.with_promoted(s, |x| {
            rsub_scalar(x, additive_scalar(x.dtype(), s.to_f64()))
        })
    }

    /// `s / self` for a scalar `s`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(4.0f64).rdiv_scalar(2.0)?.item::<f64>()?, 0.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// Recorded as PyTorch records `s / x`: `x.reciprocal() * s` (`ReciprocalBackward0`, which
    /// keeps the reciprocal, then `MulBackward0`), so `x` and the result may both be modified
    /// in place before backward.
    pub fn rdiv_scalar(&self, s: impl Into<Scalar>) -> Result<Tensor> {
        let s = s.into();
        reciprocal(&self.promoted_for(Scalar::Float(s.to_f64()))?)?.mul_scalar(s)
    }

    /// `1 / x` element-wise (PyTorch's `reciprocal`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::mul_scalar`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![2.0f64, 4.0], &[2])?.requires_grad_(true)?;
    /// let r = x.reciprocal()?;
    /// assert_eq!(r.to_vec::<f64>()?, vec![0.5, 0.25]);
    /// r.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![-0.25, -0.0625]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn reciprocal(&self) -> Result<Tensor> {
        crate::amp::autocast_op!(Reciprocal, self, |x| x.reciprocal());
        reciprocal(self)
    }
}

// ----- derivative rules for `#[differentiable(derive)]` (see `derivative_rules.rs`) -------------

/// The rules of the scalar methods that are not an op of their own: `sub_scalar` is
/// `add_scalar` (its rule generated from that op's declaration); `rdiv_scalar` is `reciprocal`
/// then `mul_scalar`, one rule for the two.
#[doc(hidden)]
#[allow(non_upper_case_globals)]
impl super::DerivativeRules {
    pub const sub_scalar: Rule<UnaryWith<f64>> = Self::add_scalar;
    pub const rdiv_scalar: Rule<UnaryWith<f64>> = Rule {
        // -s / x²: reads `x`.
        reads: Reads {
            operands: &[Read::Value],
            result: false,
            value_for: &[],
        },
        apply: |grad, x, _result, s| rdiv_scalar_backward(grad, x, s),
    };
}
