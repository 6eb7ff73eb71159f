//! What the code a `#[jvp]` (a custom function's, or a built-in op's rule) generates calls:
//! [`has_tangent`], [`tangents_of`], [`set_tangents`], [`jvp_missing`], [`original`], and
//! [`NoJvp`] for the `#[jvp]` lookup.

use super::dual::{Failure, InputRef, Tangent, set, set_tangent, share_with_saved, tangent_at};
use super::level;
use crate::{Error, Result, Tensor};

/// Whether forward mode is engaged and an input carries a tangent (or a failure): what a custom
/// function asks before its forward.
#[doc(hidden)]
pub fn has_tangent<T: InputRef>(inputs: &[T]) -> bool {
    let Some(generation) = level::current() else {
        return false;
    };
    inputs.iter().filter_map(InputRef::tensor).any(|t| {
        let meta = t.0.autograd.lock();
        meta.forward_grad
            .as_ref()
            .is_some_and(|g| g.generation == generation)
    })
}

/// The tangents of a custom function's inputs for its `#[jvp]`. An input without a tangent
/// gets zeros of its shape and dtype where `zeros[i]` asks (a `&Tensor` tangent: PyTorch
/// materialises them), `None` otherwise (an `Option<&Tensor>` tangent); an absent optional
/// input, `None`.
///
/// # Errors
///
/// An input's failed tangent.
#[doc(hidden)]
pub fn tangents_of<T: InputRef>(inputs: &[T], zeros: &[bool]) -> Result<Vec<Option<Tensor>>> {
    let generation = level::current().ok_or(Error::NoDualLevel)?;
    let _no_grad = crate::no_grad();
    inputs
        .iter()
        .zip(zeros)
        .map(|(t, &zeros)| match t.tensor() {
            None => Ok(None),
            Some(t) => match tangent_at(t, generation)? {
                Some(tangent) => Ok(Some(tangent)),
                None if zeros => t.zeros_like().map(Some),
                None => Ok(None),
            },
        })
        .collect()
}

/// Sets the tangents a custom function's `#[jvp]` computed on its outputs (`None`: that output
/// has none, as an integer output).
#[doc(hidden)]
pub fn set_tangents(outputs: &[&Tensor], tangents: Vec<Option<Tensor>>) -> Result<()> {
    let generation = level::current().ok_or(Error::NoDualLevel)?;
    for (out, t) in outputs.iter().zip(tangents) {
        if let Some(t) = t {
            if t.shape() != out.shape() {
                return Err(Error::TangentSize {
                    primal: out.shape().to_vec(),
                    tangent: t.shape().to_vec(),
                });
            }
            set_tangent(out, t, generation);
        }
    }
    share_with_saved(outputs, generation);
    Ok(())
}

/// Sets the tangents a `#[jvp]` computed for a `Vec<Tensor>` forward's outputs, one per output.
///
/// # Errors
///
/// PyTorch's when the jvp returned another number of tangents than the forward outputs (its
/// custom function's check); [`set_tangents`]'s.
#[doc(hidden)]
pub fn set_vec_tangents(outputs: &[Tensor], tangents: Vec<Tensor>) -> Result<()> {
    if tangents.len() != outputs.len() {
        return Err(Error::msg(format!(
            "Function's jvp returned an invalid number of forward gradients (expected {} but got {})",
            outputs.len(),
            tangents.len()
        )));
    }
    let outputs: Vec<&Tensor> = outputs.iter().collect();
    set_tangents(&outputs, tangents.into_iter().map(Some).collect())
}

/// Marks the outputs of a custom function called on dual inputs without a `#[jvp]`: their
/// tangent slot holds PyTorch's error, raised when it is read.
#[doc(hidden)]
pub fn jvp_missing(outputs: &[&Tensor]) {
    let Some(generation) = level::current() else {
        return;
    };
    for out in outputs {
        set(out, Tangent::Failed(Failure::CustomJvp), generation);
    }
}

/// Leaves `error` (a custom function's `#[jvp]` failed, where its forward cannot return it) in
/// the outputs' tangent slots, reported when they are read.
#[doc(hidden)]
pub fn fail_outputs(outputs: &[&Tensor], error: Error) {
    let Some(generation) = level::current() else {
        return;
    };
    let failure = Failure::Op(error.to_string().into());
    for out in outputs {
        set(out, Tangent::Failed(failure.clone()), generation);
    }
}

/// A copy of `x` taken before an in-place op writes it: `#[original]`'s value in a backward
/// (PyTorch's `original_self`; a `#[jvp]`'s is a plain copy, its value only), differentiable so that a `create_graph` pass reaches
/// `x`'s old history. With a dual level open it keeps `x`'s tangent from before the write, as
/// a copy (the op's rule then writes the new tangent into `x`'s): forward over reverse through
/// the op's backward reads it there, also where the op ran with propagation suspended to
/// compute its tangent with a rule.
///
/// # Errors
///
/// The copy's.
#[doc(hidden)]
pub fn original(x: &Tensor) -> Result<Tensor> {
    let copy = x.copy()?;
    let Some(generation) = level::current() else {
        return Ok(copy);
    };
    // Engaged, the copy carried the tangent itself (`clone`'s rule).
    if !super::engaged()
        && let Ok(Some(tangent)) = tangent_at(x, generation)
    {
        set_tangent(&copy, tangent.copy()?, generation);
    }
    Ok(copy)
}

/// Carries `from`'s tangent to `to`, an alias of it (a custom function's processed output, a
/// function's detached input, an unpacked saved output).
pub(crate) fn carry(from: &Tensor, to: &Tensor) {
    let Some(generation) = level::current() else {
        return;
    };
    if let Ok(Some(t)) = tangent_at(from, generation) {
        set_tangent(to, t, generation);
    }
}

/// The `#[jvp]` lookup's fallback: a custom function's marker without a `#[jvp]` answers
/// `false`; `#[jvp(f)]` gives `f`'s marker inherent items of the same names, which take
/// precedence.
#[doc(hidden)]
pub trait NoJvp {
    const __AUTOGRAD_HAS_JVP: bool = false;

    /// Never called: the generated code calls it only when `__AUTOGRAD_HAS_JVP` is true.
    fn __autograd_jvp_call<A, R>(_args: A) -> R {
        unreachable!("invariant: a custom function without a `#[jvp]` is not called through it")
    }

    /// Stands in for the forward's own (which `#[backward]` emits for a forward with `save(..)`,
    /// and a `#[jvp]` naming a residual calls) while its backward has errors, so that they come
    /// alone: the program does not compile then.
    fn __autograd_call_keeping<A, K, R>(_args: A, _keep: K) -> R {
        unreachable!("invariant: a forward with `save(..)` and a backward has its own")
    }
}

impl<T> NoJvp for T {}
