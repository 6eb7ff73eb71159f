//! In-place ops (`add_ sub_ mul_ div_ zero_ fill_ copy_`): bump the version counter (also under
//! `no_grad`), refuse leaves and views that are part of a graph (B35), and rebase the tensor's
//! history onto a new node when recording.

use autograd_macros::{backward, differentiable, jvp};

use super::Scalar;
use crate::backend::BinaryOp;
use crate::grad_mode::is_recording;
use crate::graph::InputMetadata;
use crate::tensor::kernels;
use crate::{DType, Error, Result, Tensor};

// ----- the ops --------------------------------------------------------------------------------
// Each modifies `x` in place and returns it (`dirty(x)`): the node becomes `x`'s new grad_fn (its
// history is rebased) and is named after the out-of-place op, as in PyTorch. The generated code
// runs `check_inplace` first, whenever grad mode is on; the kernel bumps the version (also under
// `no_grad`). The methods check dtype and device before that, as the hand-written ops did
// (but `copy_`, which converts its source as PyTorch's does).

#[differentiable(builtin, crate = "crate", dirty(x), name = "AddBackward0")]
fn add_(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    x.inplace_kernel(BinaryOp::Add, other)?;
    Ok(x.clone())
}

#[backward(add_)]
fn add_inplace_backward(grad: &Tensor, needs_input_grad: [bool; 2]) -> (Tensor, Option<Tensor>) {
    (grad.clone(), needs_input_grad[1].then(|| grad.clone()))
}

// Each rule runs after the op (its `x` is the result) and gives the new tangent, which
// `forward_ad::in_place_tangent` writes into `x`'s old one, as PyTorch's `self_t.op_(..)`.
#[jvp(add_)]
fn add_inplace_jvp(x_t: Option<&Tensor>, other_t: Option<&Tensor>, x: &Tensor) -> Result<Tensor> {
    let new = match (x_t, other_t) {
        (Some(x_t), Some(o_t)) => x_t.add(o_t)?,
        (Some(x_t), None) => return Ok(x_t.clone()),
        (None, Some(o_t)) => o_t.expand_to(x.shape())?.copy()?,
        (None, None) => x.zeros_like()?,
    };
    crate::forward_ad::in_place_tangent(x, x_t, new)
}

#[differentiable(builtin, crate = "crate", dirty(x), name = "SubBackward0")]
fn sub_(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    x.inplace_kernel(BinaryOp::Sub, other)?;
    Ok(x.clone())
}

#[backward(sub_)]
fn sub_inplace_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
) -> Result<(Tensor, Option<Tensor>)> {
    let gb = if needs_input_grad[1] {
        Some(grad.neg()?)
    } else {
        None
    };
    Ok((grad.clone(), gb))
}

#[jvp(sub_)]
fn sub_inplace_jvp(x_t: Option<&Tensor>, other_t: Option<&Tensor>, x: &Tensor) -> Result<Tensor> {
    let new = match (x_t, other_t) {
        (Some(x_t), Some(o_t)) => x_t.sub(o_t)?,
        (Some(x_t), None) => return Ok(x_t.clone()),
        (None, Some(o_t)) => o_t.neg()?.expand_to(x.shape())?.copy()?,
        (None, None) => x.zeros_like()?,
    };
    crate::forward_ad::in_place_tangent(x, x_t, new)
}

/// `other` is saved if `x` needs its gradient; `x` before the op (a differentiable copy, so that
/// a `create_graph` pass reaches its old history) if `other` does.
#[differentiable(builtin, crate = "crate", dirty(x), name = "MulBackward0")]
fn mul_(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    x.inplace_kernel(BinaryOp::Mul, other)?;
    Ok(x.clone())
}

#[backward(mul_)]
fn mul_inplace_backward(
    grad: &Tensor,
    #[needed_for(x)] other: Option<&Tensor>,
    #[original]
    #[needed_for(other)]
    x: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((
        other.map(|b| grad.mul(b)).transpose()?,
        x.map(|a| grad.mul(a)).transpose()?,
    ))
}

// PyTorch's `self_t * other_p + other_t * original_self_p`: `other` as it is after the op (the
// written tensor itself, where it aliases it), `x` as it was before.
#[jvp(mul_)]
fn mul_inplace_jvp(
    x_t: Option<&Tensor>,
    other_t: Option<&Tensor>,
    other: &Tensor,
    #[original] x: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let x_term = x_t.map(|t| t.mul(other)).transpose()?;
    let other_term = other_t.map(|t| t.mul(x)).transpose()?;
    let new = match (x_term, other_term) {
        (Some(a), Some(b)) => a.add(&b)?,
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => result.zeros_like()?,
    };
    crate::forward_ad::in_place_tangent(result, x_t, new)
}

#[differentiable(builtin, crate = "crate", dirty(x), name = "DivBackward0")]
fn div_(x: &Tensor, other: &Tensor) -> Result<Tensor> {
    x.inplace_kernel(BinaryOp::Div, other)?;
    Ok(x.clone())
}

#[backward(div_)]
fn div_inplace_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    other: &Tensor,
    #[original]
    #[needed_for(other)]
    x: Option<&Tensor>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let ga = if needs_input_grad[0] {
        Some(grad.div(other)?)
    } else {
        None
    };
    // d(a/b)/db = -a / b²
    let gb = match x {
        Some(a) => Some(grad.mul(a)?.div(&other.mul(other)?)?.neg()?),
        None => None,
    };
    Ok((ga, gb))
}

// PyTorch's `(self_t - other_t * result) / other_p`, `other` as it is after the op. The
// backward's `#[original]` copy keeps `x`'s tangent from before the write
// (`forward_ad::original`), so that forward over reverse through it is exact.
#[jvp(div_)]
fn div_inplace_jvp(
    x_t: Option<&Tensor>,
    other_t: Option<&Tensor>,
    other: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let new = match (x_t, other_t) {
        (Some(a), Some(b)) => a.sub(&b.mul(result)?)?.div(other)?,
        (Some(a), None) => a.div(other)?,
        (None, Some(b)) => b.mul(result)?.neg()?.div(other)?,
        (None, None) => result.zeros_like()?,
    };
    crate::forward_ad::in_place_tangent(result, x_t, new)
}

/// Named as PyTorch names `fill_.Scalar`'s node (`fill_` has entries of its own in
/// `derivatives.yaml`).
#[differentiable(builtin, crate = "crate", dirty(x), name = "FillBackward2")]
fn fill_(x: &Tensor, value: Scalar) -> Result<Tensor> {
    x.fill_kernel(value)?;
    Ok(x.clone())
}

#[backward(fill_)]
fn fill_inplace_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

#[jvp(fill_)]
fn fill_inplace_jvp(x_t: &Tensor) -> Result<Tensor> {
    zeroed_tangent(x_t)
}

#[differentiable(builtin, crate = "crate", dirty(x), name = "ZeroBackward0")]
fn zero_(x: &Tensor) -> Result<Tensor> {
    x.fill_kernel(Scalar::Int(0))?;
    Ok(x.clone())
}

#[backward(zero_)]
fn zero_inplace_backward(grad: &Tensor) -> Result<Tensor> {
    grad.zeros_like()
}

#[jvp(zero_)]
fn zero_inplace_jvp(x_t: &Tensor) -> Result<Tensor> {
    zeroed_tangent(x_t)
}

/// `fill_`'s and `zero_`'s tangent: PyTorch's `self_t.zero_()`, in place (as `fill_` itself, it
/// may write an expanded view's tangent, where a copy into it is refused).
fn zeroed_tangent(x_t: &Tensor) -> Result<Tensor> {
    x_t.zero_()?;
    Ok(x_t.clone())
}

/// `x`'s old values are overwritten, so its gradient is zero; `src`'s is the gradient itself,
/// converted back to `src`'s dtype and device (PyTorch's `CopyBackwards`: `grad.to(src_options)`,
/// differentiable) and summed over the dimensions `src` was broadcast along. `src` of another
/// dtype or device is converted first (the forward runs with recording off).
#[differentiable(builtin, crate = "crate", dirty(x), name = "CopyBackwards")]
fn copy_(x: &Tensor, src: &Tensor) -> Result<Tensor> {
    if src.dtype() == x.dtype() && src.device() == x.device() {
        x.copy_kernel(src)?;
    } else {
        // Cast where the data is, then move: a narrower dtype crosses devices in fewer bytes
        // when it is `x`'s, the same number otherwise.
        x.copy_kernel(&src.to_dtype(x.dtype())?.to(x.device())?)?;
    }
    Ok(x.clone())
}

#[backward(copy_)]
fn copy_inplace_backward(
    grad: &Tensor,
    needs_input_grad: [bool; 2],
    src: &InputMetadata,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let gx = if needs_input_grad[0] {
        Some(grad.zeros_like()?)
    } else {
        None
    };
    let gsrc = if needs_input_grad[1] {
        Some(grad.to_dtype(src.dtype())?.to(src.device())?)
    } else {
        None
    };
    Ok((gx, gsrc))
}

/// `src`'s tangent, broadcast to `x` (zeros without one).
#[jvp(copy_)]
fn copy_inplace_jvp(x_t: Option<&Tensor>, src_t: Option<&Tensor>, x: &Tensor) -> Result<Tensor> {
    let new = match src_t {
        Some(s_t) => s_t.expand_to(x.shape())?.copy()?,
        None => x.zeros_like()?,
    };
    crate::forward_ad::in_place_tangent(x, x_t, new)
}

/// Refuses in-place ops PyTorch refuses, before anything is modified (PyTorch's
/// `check_inplace`): see `Tensor::check_inplace`. Called by the code `#[differentiable(builtin,
/// dirty(x))]` generates, whenever grad mode is on; `others_require_grad` says whether another
/// input of the op requires grad.
///
/// # Errors
///
/// [`Error::ViewRebase`], [`Error::LeafInPlace`], [`Error::ViewOfLeafInPlace`].
#[doc(hidden)]
pub fn check_inplace(t: &Tensor, others_require_grad: bool) -> Result<()> {
    t.check_inplace(others_require_grad)
}

impl Tensor {
    /// Refuses in-place ops PyTorch refuses when the op is recorded (grad mode on outside
    /// inference mode, an input requires grad): on a view that may not be rebased (multi-output, made under `no_grad`),
    /// on a view of a leaf that requires grad, on such a leaf itself (B35).
    fn check_inplace(&self, other_requires_grad: bool) -> Result<()> {
        if !is_recording() {
            return Ok(());
        }
        let self_rg = self.requires_grad();
        if !(self_rg || other_requires_grad) {
            return Ok(());
        }
        if let Some(base) = self.view_base() {
            self.check_view_rebase()?;
            if self_rg && base.is_leaf() {
                return Err(Error::ViewOfLeafInPlace);
            }
        }
        // PyTorch's C++ `is_leaf()` reads the grad_fn field as it is, without regenerating a
        // view's: a view that started to require grad through its base, and whose grad_fn was
        // not read since, counts as a leaf here.
        if self_rg && self.0.autograd.lock().grad_fn.is_none() {
            return Err(Error::LeafInPlace);
        }
        Ok(())
    }

    /// Refuses to write through a layout where several elements share one memory location (an
    /// `expand`ed view), as PyTorch does (`assert_no_internal_overlap`).
    fn check_writable(&self) -> Result<()> {
        let l = self.layout();
        let overlapping = l
            .shape
            .iter()
            .zip(&l.strides)
            .any(|(&n, &s)| n > 1 && s == 0);
        if overlapping {
            return Err(Error::InternalOverlap);
        }
        Ok(())
    }

    /// Refuses an operand that covers some but not all of the written-to elements' memory, or
    /// the same memory in another order (PyTorch's `assert_no_partial_overlap`; like PyTorch, it
    /// only judges tensors whose elements are dense, and lets the kernel copy the others).
    fn check_no_partial_overlap(&self, other: &Tensor) -> Result<()> {
        if self.is_same(other) || !self.shares_storage(other) {
            return Ok(());
        }
        let (a, b) = (self.layout(), other.layout());
        let (na, nb) = (a.numel(), b.numel());
        if na == 0
            || nb == 0
            || !a.is_non_overlapping_and_dense()
            || !b.is_non_overlapping_and_dense()
        {
            return Ok(());
        }
        let (a_begin, b_begin) = (a.offset, b.offset);
        let (a_end, b_end) = (a_begin + na, b_begin + nb);
        let partial = if a_begin == b_begin && a_end == b_end {
            a.strides != b.strides
        } else {
            a_begin < b_end && b_begin < a_end
        };
        if partial {
            return Err(Error::PartialOverlap);
        }
        Ok(())
    }

    /// `self (op)= other` and a version bump: the kernel of the binary in-place ops.
    fn inplace_kernel(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        self.check_writable()?;
        self.check_no_partial_overlap(other)?;
        self.apply_inplace(op, other)
    }

    /// Copies `src` (broadcast to this shape) into this tensor and bumps the version: the kernel
    /// of `copy_`.
    fn copy_kernel(&self, src: &Tensor) -> Result<()> {
        self.0.storage.check_writable()?;
        self.check_writable()?;
        self.check_no_partial_overlap(src)?;
        let expanded = src.reinterpret(src.layout().expand(self.shape())?);
        let result = kernels::copy_into(self, &expanded);
        self.0.storage.bump_version();
        result
    }

    /// Fills with `value` and bumps the version: the kernel of `fill_` and `zero_`.
    /// Repeated elements (an `expand`ed view) are allowed, as in PyTorch: filling is idempotent,
    /// so each is written once.
    /// An `int64` value beyond 2^53 is copied from a tensor holding it exactly (the backends'
    /// `fill` takes an `f64`).
    fn fill_kernel(&self, value: Scalar) -> Result<()> {
        self.0.storage.check_writable()?;
        let l = self.layout();
        let mut unique = l.clone();
        for (n, &s) in unique.shape.iter_mut().zip(&l.strides) {
            if s == 0 {
                *n = (*n).min(1);
            }
        }
        let target = self.reinterpret(unique);
        match value {
            Scalar::Int(i) if self.dtype() == DType::I64 && i.unsigned_abs() > 1 << 53 => {
                let one = Tensor::filled_scalar(&[], value, DType::I64, self.device())?;
                let expanded = one.reinterpret(one.layout().expand(target.shape())?);
                kernels::copy_into(&target, &expanded)?;
            }
            _ => kernels::of_tensor(&target)?.fill(&target, value.to_f64())?,
        }
        self.0.storage.bump_version();
        Ok(())
    }

    /// Runs the kernel and bumps the version; no checks, no recording. Dtypes are equal. The
    /// backend copies `other` first when it shares this tensor's storage.
    fn apply_inplace(&self, op: BinaryOp, other: &Tensor) -> Result<()> {
        self.0.storage.check_writable()?;
        let result = kernels::of_pair("in-place op", self, other)
            .and_then(|b| b.binary_inplace(op, self, other));
        self.0.storage.bump_version();
        result
    }

    /// `self += other` for the engine's gradient accumulation: not recorded. Refuses a target
    /// with repeated elements, as PyTorch's `variable_grad += new_grad` does: a `.grad` the user
    /// set to an `expand`ed tensor.
    pub(crate) fn accumulate_in_place(&self, other: &Tensor) -> Result<()> {
        self.check_writable()?;
        self.apply_inplace(BinaryOp::Add, other)
    }

    /// Whether this handle is the only way to reach its data (so the engine may write into it).
    pub(crate) fn is_uniquely_owned(&self) -> bool {
        crate::sync::Arc::strong_count(&self.0) == 1
            && crate::sync::Arc::strong_count(&self.0.storage) == 1
            && !self.is_view()
            && self.is_contiguous()
    }

    /// In-place `self += other` (`other` broadcasts to `self`). Returns `self`.
    ///
    /// # Errors
    ///
    /// [`Error::LeafInPlace`] on a leaf that requires grad (outside `no_grad`),
    /// [`Error::ViewOfLeafInPlace`] on its views, [`Error::ViewRebase`] on a view of `split`/
    /// `chunk` or one made under `no_grad`, [`Error::InternalOverlap`] /
    /// [`Error::PartialOverlap`] for memory the op cannot write safely, broadcast, dtype and
    /// device errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.add_(&Tensor::scalar(1.0f32))?;
    /// assert_eq!((t.to_vec::<f32>()?, t.version()), (vec![2.0, 3.0], 1));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn add_(&self, other: &Tensor) -> Result<&Tensor> {
        self.check_same_dtype_device("add_", other)?;
        add_(self, other)?;
        Ok(self)
    }

    /// In-place `self -= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.sub_(&Tensor::scalar(1.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 1.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn sub_(&self, other: &Tensor) -> Result<&Tensor> {
        self.check_same_dtype_device("sub_", other)?;
        sub_(self, other)?;
        Ok(self)
    }

    /// In-place `self *= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.mul_(&Tensor::scalar(3.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![3.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn mul_(&self, other: &Tensor) -> Result<&Tensor> {
        self.check_same_dtype_device("mul_", other)?;
        mul_(self, other)?;
        Ok(self)
    }

    /// In-place `self /= other`. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![3.0f32, 6.0], &[2])?;
    /// t.div_(&Tensor::scalar(3.0f32))?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 2.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn div_(&self, other: &Tensor) -> Result<&Tensor> {
        self.check_same_dtype_device("div_", other)?;
        div_(self, other)?;
        Ok(self)
    }

    /// Fills with `value` in place. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`] for leaves and views; [`Error::InvalidArgument`] in PyTorch's words
    /// for a value an integer tensor cannot hold (`"value cannot be converted to type int
    /// without overflow"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2], DType::F64)?;
    /// t.fill_(4.0)?;
    /// assert_eq!(t.to_vec::<f64>()?, vec![4.0, 4.0]);
    /// // Any Rust number; an integer stays exact in an integer tensor.
    /// let ids = Tensor::zeros(&[1], DType::I64)?;
    /// ids.fill_(i64::MAX)?;
    /// assert_eq!(ids.to_vec::<i64>()?, vec![i64::MAX]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<&Tensor> {
        let value = value.into();
        value.check_fits(self.dtype(), true)?;
        fill_(self, value)?;
        Ok(self)
    }

    /// Fills with zeros in place. Returns `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::fill_`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.zero_()?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zero_(&self) -> Result<&Tensor> {
        zero_(self)?;
        Ok(self)
    }

    /// Copies `src`'s values into this tensor, in place (PyTorch's `copy_`): `src` broadcasts to
    /// this tensor's shape, and is converted to this tensor's dtype and device (`f64` to `f32`
    /// rounds to nearest). Recorded like the other in-place ops: `src` receives the gradient,
    /// converted back to its own dtype and device, and this tensor's old values none. Returns
    /// `self`.
    ///
    /// # Errors
    ///
    /// As [`Tensor::add_`] (but no dtype or device mismatch);
    /// [`Error::DeviceUnavailable`] for a device without kernels in this build.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor, no_grad};
    /// let w = Tensor::zeros(&[2], DType::F32)?.requires_grad_(true)?;
    /// {
    ///     let _g = no_grad();                           // as load_state_dict does
    ///     w.copy_(&Tensor::from_vec(vec![1.5f32, -2.0], &[2])?)?;
    /// }
    /// assert_eq!(w.to_vec::<f32>()?, vec![1.5, -2.0]);
    /// assert!(w.is_leaf() && w.requires_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// Across dtypes and devices, the gradient goes back converted:
    ///
    /// ```
    /// use autograd_runtime::{DType, Device, Tensor};
    /// let src = Tensor::from_vec(vec![1.5f32, -2.0], &[2])?.requires_grad_(true)?;
    /// let dst = Tensor::zeros(&[2], DType::F64)?.to(Device::Virtual(1))?;
    /// dst.copy_(&src)?;
    /// assert_eq!(dst.grad_fn().unwrap().name(), "CopyBackwards");
    /// dst.mul_scalar(3.0)?.sum()?.backward()?;
    /// let g = src.grad().unwrap();
    /// assert_eq!((g.dtype(), g.device()), (DType::F32, Device::Cpu));
    /// assert_eq!(g.to_vec::<f32>()?, [3.0, 3.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn copy_(&self, src: &Tensor) -> Result<&Tensor> {
        copy_(self, src)?;
        Ok(self)
    }
}
