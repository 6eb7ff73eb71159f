//! The forward-mode transforms: [`jvp`] and [`jacfwd`], on [`crate::forward_ad`].

use super::reverse::finish;
use super::{Argnums, Body, Jacobian, Returns, Tree, resolve_argnums, tree_spec};
use crate::forward_ad;
use crate::functional::{autograd_grad, forward_jacobian, preprocess};
use crate::{Error, Result, Tensor, enable_grad};

/// `f`'s outputs at `primals` and the Jacobian-vector product `J·tangents`, one tensor per
/// output (`torch.func.jvp`), by forward mode: one pass with each primal carrying its tangent.
///
/// `tangents` holds one tensor per primal, of its shape (a floating dtype, possibly another
/// than the primal's). Where a dual level is open already (inside another forward-mode
/// transform: one level at a time), the product is computed by the double-vjp trick instead,
/// with the same values.
///
/// # Errors
///
/// PyTorch's: "jvp(f, primals, tangents): Expected primals to contain at least one Tensor.",
/// "jvp(f, primals, tangents): Expected primals and tangents to have the same python
/// structure. ...", [`make_dual`](forward_ad::make_dual)'s for a tangent of another shape or an
/// integer primal or tangent; and any error of `f` (an op without a forward derivative).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let t = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let (y, jv) = func::jvp(|x: &[Tensor]| x[0].exp(), &[x], &[t])?; // eˣ · t
/// assert_eq!(y.to_vec::<f64>()?, [1.0, 1f64.exp()]);
/// assert_eq!(jv.to_vec::<f64>()?, [1.0, 2.0 * 1f64.exp()]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn jvp<F, O>(
    mut f: F,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(O::Map<Tensor>, O::Map<Tensor>)>
where
    F: FnMut(&[Tensor]) -> Result<O>,
    O: Tree,
{
    let (outputs, jv) = jvp_core(&mut |a| Ok(f(a)?.into_tensors()), primals, tangents)?;
    Ok((O::rebuild(outputs), O::rebuild(jv)))
}

/// The Jacobian of `f` with respect to its arguments `argnums` by forward mode
/// (`torch.func.jacfwd`): [`jacrev`](super::jacrev)'s result, computed with one forward-mode
/// pass per element of each argument in `argnums` (a one-hot tangent on it). Where a dual level
/// is open already (inside another forward-mode transform), it is computed by reverse mode, with
/// the same values. A function
/// returning `(outputs, Aux(aux))` gives `(jacobian, aux)`.
///
/// # Errors
///
/// PyTorch's argnums errors (as [`grad`](super::grad)), "Expected primal to be floating point
/// or complex, but got: torch.int64" for an integer argument, and any error of `f`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let jac = func::jacfwd(|x: &[Tensor]| x[0].pow(2.0), 0)(&[x])?; // diag(2x)
/// assert_eq!(jac.to_vec::<f64>()?, [2.0, 0.0, 0.0, 4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn jacfwd<F, R, A>(f: F, argnums: A) -> impl FnMut(&[Tensor]) -> Result<Jacobian<R, A>>
where
    F: FnMut(&[Tensor]) -> Result<R>,
    R: Returns,
    A: Argnums,
{
    super::jacobian_transform(f, argnums, jacfwd_core)
}

/// `jacfwd`'s work: the Jacobians, per output then per argnum.
pub(super) fn jacfwd_core(f: Body<'_>, args: &[Tensor], argnums: &[isize]) -> Result<Vec<Tensor>> {
    let resolved = resolve_argnums(argnums, args.len())?;
    for &i in &resolved {
        check_float("primal", &args[i])?;
    }
    match forward_ad::dual_level() {
        Ok(_level) => {
            let jac = forward_jacobian(&mut |a| Ok(f(a)?.0), args, &resolved)?;
            Ok(jac.into_iter().flatten().collect())
        }
        // One dual level at a time (another transform's, maybe on another thread): reverse
        // mode, through which that level's tangents flow.
        Err(Error::NestedDualLevel) => super::reverse::jacrev_core(f, args, argnums),
        Err(e) => Err(e),
    }
}

/// [`make_dual`](forward_ad::make_dual)'s dtype check, made whichever way the tangents go.
fn check_float(what: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        return Ok(());
    }
    Err(Error::DualNotFloat {
        what,
        dtype: t.dtype(),
    })
}

/// `jvp`'s work: the outputs and their tangents.
fn jvp_core(
    f: Body<'_>,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    if primals.len() != tangents.len() {
        return Err(Error::msg(format!(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python \
             structure. For example, if primals is a tuple of 3 tensors, tangents also must be. \
             Got primals with structure {} and tangents with structure {}",
            tree_spec(primals.len()),
            tree_spec(tangents.len())
        )));
    }
    if primals.is_empty() {
        return Err(Error::msg(
            "jvp(f, primals, tangents): Expected primals to contain at least one Tensor.",
        ));
    }
    for (p, t) in primals.iter().zip(tangents) {
        check_float("primal", p)?;
        check_float("tangent", t)?;
        if p.shape() != t.shape() {
            return Err(Error::TangentSize {
                primal: p.shape().to_vec(),
                tangent: t.shape().to_vec(),
            });
        }
    }
    let _level = match forward_ad::dual_level() {
        Ok(level) => level,
        Err(Error::NestedDualLevel) => return double_vjp(f, primals, tangents),
        Err(e) => return Err(e),
    };
    let duals = primals
        .iter()
        .zip(tangents)
        .map(|(p, t)| forward_ad::make_dual(p, t))
        .collect::<Result<Vec<_>>>()?;
    let (outputs, _) = f(&duals)?;
    let mut primal_outs = Vec::with_capacity(outputs.len());
    let mut tangent_outs = Vec::with_capacity(outputs.len());
    for o in &outputs {
        let unpacked = forward_ad::unpack_dual(o)?;
        tangent_outs.push(match unpacked.tangent {
            Some(t) => t,
            None => o.zeros_like()?,
        });
        primal_outs.push(unpacked.primal);
    }
    Ok((primal_outs, tangent_outs))
}

/// `J·t` by the double-vjp trick (a dual level is open already): `uᵀ·J` is recorded for `u`
/// zeros that require grad, and differentiated with respect to `u` along `t`. Recorded
/// throughout, so the open level's tangents flow through both passes.
fn double_vjp(
    f: Body<'_>,
    primals: &[Tensor],
    tangents: &[Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let _grad = enable_grad();
    let own = preprocess(primals, true, true)?;
    let (outputs, _) = f(&own)?;
    let us = outputs
        .iter()
        .map(|o| o.zeros_like()?.requires_grad_(true))
        .collect::<Result<Vec<_>>>()?;
    let outs: Vec<Option<Tensor>> = outputs.iter().cloned().map(Some).collect();
    let u_opts: Vec<Option<Tensor>> = us.iter().cloned().map(Some).collect();
    let vjps = autograd_grad(&outs, &own, Some(&u_opts), true, Some(true), false)?;
    let t_opts: Vec<Option<Tensor>> = tangents.iter().cloned().map(Some).collect();
    let jv = autograd_grad(&vjps, &us, Some(&t_opts), true, None, false)?;
    let jv = jv
        .into_iter()
        .zip(&outputs)
        .map(|(g, o)| g.map_or_else(|| o.zeros_like(), Ok))
        .collect::<Result<Vec<_>>>()?;
    let n = outputs.len();
    let mut results = finish([outputs, jv].concat(), &[own, us].concat(), true)?;
    let jv = results.split_off(n);
    Ok((results, jv))
}
