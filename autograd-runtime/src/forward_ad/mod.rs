//! Forward-mode AD with dual tensors, as PyTorch's `torch.autograd.forward_ad`.
//!
//! Inside a [`dual_level`], [`make_dual`] pairs a tensor (the *primal*) with a *tangent* of the
//! same shape, and every op applied to dual tensors computes the tangent of its result: the
//! Jacobian-vector product `J·t`, one op at a time, alongside the forward. [`unpack_dual`] reads
//! the result's tangent back. Exiting the level frees every tangent set under it.
//!
//! ```
//! use autograd_runtime::{forward_ad, Tensor};
//! let x = Tensor::from_vec(vec![0.0f64, 1.0, 2.0], &[3])?;
//! let v = Tensor::from_vec(vec![1.0f64, 1.0, 0.5], &[3])?;
//! let level = forward_ad::dual_level()?;
//! let dual = forward_ad::make_dual(&x, &v)?;
//! let y = dual.exp()?.mul_scalar(2.0)?;
//! let out = forward_ad::unpack_dual(&y)?;
//! // d/dx 2eˣ · v = 2eˣ · v
//! let expected: Vec<f64> = [0.0f64, 1.0, 2.0].iter().zip([1.0, 1.0, 0.5]).map(|(x, v)| 2.0 * x.exp() * v).collect();
//! assert_eq!(out.tangent.unwrap().to_vec::<f64>()?, expected);
//! drop(level); // exits the level: the tangents are gone
//! assert!(forward_ad::unpack_dual(&y)?.tangent.is_none());
//! # Ok::<(), autograd_runtime::Error>(())
//! ```
//!
//! # How an op computes its tangent
//!
//! The code `#[differentiable]` generates asks, at every call, whether a level is open and an
//! input carries a tangent (one relaxed load when no level is open). When one does:
//!
//! - an op whose `#[jvp]` rule is declared (beside its `#[backward]`) runs the rule: the
//!   tangent from the input tangents and the values the rule names, as PyTorch's
//!   `derivatives.yaml` `result:` formulas;
//!   every built-in op has one (`cat`'s takes its list's tangents, `split`'s returns one per
//!   part, `max_dim`'s reads the positions its forward saved); an in-place op's rule names the
//!   written input from before the write with `#[original]`, and the copy its backward saves
//!   keeps that input's tangent from before the write (`original`), so that forward over
//!   reverse through it is exact;
//! - a built-in op without a rule (none today) would compute it through its backward, which is
//!   linear in the incoming gradient: with `g` a zero gradient that requires grad,
//!   `v = backward(g)` is recorded, and the gradient of `Σ ⟨v_i, t_i⟩` with respect to `g` is
//!   `J·t` (the "double-vjp trick"), so every op with a twice-differentiable backward has a
//!   forward derivative; one whose
//!   backward cannot be differentiated (`once_differentiable`, or computed outside autograd)
//!   fails with PyTorch's error ([`Error::ForwardAdNotImplemented`]) rather than give a wrong
//!   tangent;
//! - a `#[differentiable(derive)]` function's body runs its ops on the dual inputs, each
//!   propagating its own tangent, so a derived function has both modes from the same rules;
//! - a custom function with a hand-written `#[backward]` needs a `#[jvp]`, as PyTorch's
//!   `autograd.Function` needs `jvp`: without one its outputs carry PyTorch's error instead of a
//!   tangent.
//!
//! An op's output that is a view of a dual input gets a view of that input's tangent as its
//! tangent (when the tangent has the input's layout, which [`make_dual`] arranges), and an
//! in-place op on a dual tensor writes the new tangent into the old one, so views of the tangent
//! see it, as in PyTorch. Tangent computations are ops themselves: they are recorded when a
//! tangent or a primal requires grad, so a tangent can be differentiated backward (reverse over
//! forward); and a backward pass run with `create_graph` on dual tensors propagates tangents
//! through its ops, so the tangent of a gradient is a Hessian-vector product (forward over
//! reverse).
//!
//! Integer and bool results carry no tangent. Grad mode does not affect forward mode (a dual
//! op under [`no_grad`](crate::no_grad) still computes its tangent).

mod custom;
mod dual;
mod level;

pub(crate) use custom::carry;
#[doc(hidden)]
pub use custom::{
    NoJvp, fail_outputs, has_tangent, jvp_missing, original, set_tangents, set_vec_tangents,
    tangents_of,
};
#[doc(hidden)]
pub use dual::{DualCall, InputRef, dual_edges, record_dual};
pub(crate) use dual::{ForwardGrad, in_place_tangent};

use crate::grad_mode::{self, ForwardAdSuspension};
use crate::{Error, Result, Tensor};

/// An open dual level: exits it when dropped (PyTorch's `with fwAD.dual_level():`).
#[must_use = "the level is exited as soon as the guard is dropped"]
#[derive(Debug)]
pub struct DualLevel {
    level: usize,
}

impl DualLevel {
    /// The level's number (always 0: PyTorch opens one level at a time).
    pub fn level(&self) -> usize {
        self.level
    }
}

impl Drop for DualLevel {
    fn drop(&mut self) {
        // Only `dual_level` makes a guard, for the level it opened: exiting it cannot fail
        // unless the user exited it by hand, which leaves nothing to do.
        let _ = level::exit(self.level);
    }
}

/// Opens a dual level until the returned guard drops (`torch.autograd.forward_ad.dual_level`).
///
/// # Errors
///
/// [`Error::NestedDualLevel`] when a level is open already: as PyTorch, one level at a time.
///
/// # Examples
///
/// ```
/// use autograd_runtime::forward_ad;
/// let level = forward_ad::dual_level()?;
/// assert_eq!(level.level(), 0);
/// assert!(forward_ad::dual_level().is_err()); // no nesting
/// drop(level);
/// let _again = forward_ad::dual_level()?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn dual_level() -> Result<DualLevel> {
    Ok(DualLevel {
        level: level::enter()?,
    })
}

/// Opens a dual level and returns its number (`enter_dual_level`); [`exit_dual_level`] closes
/// it. Prefer [`dual_level`], whose guard cannot be forgotten.
///
/// # Errors
///
/// As [`dual_level`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::forward_ad;
/// let level = forward_ad::enter_dual_level()?;
/// forward_ad::exit_dual_level(level)?;
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn enter_dual_level() -> Result<usize> {
    level::enter()
}

/// Closes the open level `level` and frees the tangents set under it (`exit_dual_level`).
///
/// # Errors
///
/// [`Error::ExitDualLevel`] when no level is open or `level` is not the open one.
///
/// # Examples
///
/// ```
/// use autograd_runtime::forward_ad;
/// assert_eq!(
///     forward_ad::exit_dual_level(0).unwrap_err().to_string(),
///     "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
/// );
/// ```
pub fn exit_dual_level(level: usize) -> Result<()> {
    level::exit(level)
}

/// A dual tensor: `tensor` with `tangent` as its tangent at the open level
/// (`torch.autograd.forward_ad.make_dual`).
///
/// The result is a view of `tensor` (same data; gradients flow back to `tensor` when it requires
/// grad). The tangent is kept as given when it has `tensor`'s layout, and copied into that
/// layout otherwise (a contiguous `tensor` gets a contiguous tangent), so that views of the dual
/// tensor can take views of the tangent. The tangent may have another floating dtype than the
/// primal; ops then promote, as in PyTorch.
///
/// # Errors
///
/// PyTorch's: [`Error::NoDualLevel`] outside a level; [`Error::DualNotFloat`] for an integer or
/// bool primal or tangent; [`Error::TangentSize`] for a tangent of another shape;
/// [`Error::AlreadyDual`] when `tensor` has a tangent at this level already.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{forward_ad, DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// assert!(forward_ad::make_dual(&x, &x).is_err()); // no level
/// let _level = forward_ad::dual_level()?;
/// let d = forward_ad::make_dual(&x, &Tensor::ones(&[2], DType::F32)?)?;
/// assert!(d.shares_storage(&x));
/// let y = d.mul(&d)?; // d(x²)·t = 2x·t
/// assert_eq!(forward_ad::unpack_dual(&y)?.tangent.unwrap().to_vec::<f32>()?, [2.0, 4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn make_dual(tensor: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    let generation = level::current().ok_or(Error::NoDualLevel)?;
    for (what, t) in [("primal", tensor), ("tangent", tangent)] {
        if !t.dtype().is_floating_point() {
            return Err(Error::DualNotFloat {
                what,
                dtype: t.dtype(),
            });
        }
    }
    if tensor.shape() != tangent.shape() {
        return Err(Error::TangentSize {
            primal: tensor.shape().to_vec(),
            tangent: tangent.shape().to_vec(),
        });
    }
    if dual::tangent_at(tensor, generation)?.is_some() {
        return Err(Error::AlreadyDual);
    }
    let dense = |t: &Tensor| t.is_contiguous() && t.layout().offset == 0;
    let tangent = if tangent.layout() == tensor.layout() || (dense(tensor) && dense(tangent)) {
        tangent.clone()
    } else if dense(tensor) {
        tangent.copy()?
    } else {
        // A primal with an unusual layout: the tangent stays as given, and views of the dual
        // tensor get computed tangents rather than views of it.
        tangent.clone()
    };
    let dual = alias(tensor)?;
    dual::set_tangent(&dual, tangent, generation);
    Ok(dual)
}

/// A tensor's primal and tangent at the open level (`unpack_dual`'s named tuple).
#[derive(Debug, Clone)]
pub struct UnpackedDual {
    /// A view of the tensor without its tangent.
    pub primal: Tensor,
    /// Its tangent; `None` when it has none (or no level is open).
    pub tangent: Option<Tensor>,
}

/// The primal and the tangent of `tensor` at the open level
/// (`torch.autograd.forward_ad.unpack_dual`).
///
/// # Errors
///
/// The error an op could not compute this tensor's tangent with (a custom function without a
/// `#[jvp]`, an op whose backward cannot be differentiated), as PyTorch raises it at that op.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{forward_ad, Tensor};
/// let x = Tensor::from_vec(vec![3.0f64], &[1])?;
/// let _level = forward_ad::dual_level()?;
/// assert!(forward_ad::unpack_dual(&x)?.tangent.is_none());
/// let d = forward_ad::make_dual(&x, &Tensor::from_vec(vec![2.0f64], &[1])?)?;
/// let u = forward_ad::unpack_dual(&d.sin()?)?;
/// assert_eq!(u.tangent.unwrap().to_vec::<f64>()?, [3.0f64.cos() * 2.0]);
/// assert_eq!(u.primal.to_vec::<f64>()?, [3.0f64.sin()]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn unpack_dual(tensor: &Tensor) -> Result<UnpackedDual> {
    let tangent = match level::current() {
        Some(generation) => dual::tangent_at(tensor, generation)?,
        None => None,
    };
    let primal = {
        let _suspended = suspend();
        alias(tensor)?
    };
    if let Some(generation) = level::current() {
        // Not a forward view: it does not see the tensor's tangent (PyTorch's `_fw_primal`).
        dual::set_absent(&primal, generation);
    }
    Ok(UnpackedDual { primal, tangent })
}

/// A view of `t` with its shape (PyTorch's `_make_dual` and `_unpack_dual` return a view whose
/// grad_fn is `ViewBackward0`), so that gradients flow back to `t`.
fn alias(t: &Tensor) -> Result<Tensor> {
    let shape: Vec<isize> = t.shape().iter().map(|&n| n as isize).collect();
    t.view(&shape)
}

/// Suspends tangent propagation on this thread (and the threads of backward passes it starts)
/// until the guard drops.
#[doc(hidden)]
pub fn suspend() -> ForwardAdSuspension {
    grad_mode::suspend_forward_ad()
}

/// Suspends tangent propagation while a built-in op called on dual inputs runs its forward
/// (its tangents are computed at its recording, from its inputs'): `None` otherwise.
#[doc(hidden)]
#[inline(always)]
pub fn suspend_for(dual: Option<&DualCall>) -> Option<ForwardAdSuspension> {
    dual.map(|_| suspend())
}

/// Whether a dual level is open (in any thread).
#[inline(always)]
pub(crate) fn level_open() -> bool {
    level::current().is_some()
}

/// Whether ops on this thread compute tangents: a level is open and propagation is not
/// suspended. One relaxed load when no level is open (every op asks).
#[doc(hidden)]
#[inline(always)]
pub fn engaged() -> bool {
    level::current().is_some() && !grad_mode::state().forward_ad_suspended()
}
