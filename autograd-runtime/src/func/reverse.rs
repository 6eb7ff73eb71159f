//! The reverse-mode transforms: [`grad`], [`grad_and_value`], [`vjp`], [`jacrev`] and
//! [`hessian`] (`jacfwd(jacrev(f))`).

use std::collections::HashSet;

use super::{
    Argnums, Body, GradAndValue, Grads, Hessian, Jacobian, Returns, Tree, call_split, group,
    resolve_argnums, short_spec, take_aux,
};
use crate::functional::{autograd_grad, preprocess, vectorized};
use crate::graph::{NodeRef, get_gradient_edge};
use crate::{Error, Result, Tensor, enable_grad, is_grad_enabled};

/// The gradient of the scalar `f` with respect to its arguments `argnums`
/// (`torch.func.grad(f, argnums, has_aux)`): a function of the same arguments.
///
/// `f` must return a 0-dimensional tensor (or `(tensor, Aux(aux))`, then the result is
/// `(gradient, aux)`). One index in `argnums` gives one gradient, of that argument's shape;
/// several an array or `Vec` of them. An argument `f` does not use gets zeros.
///
/// The backward pass runs with `create_graph` when grad mode is on, so `grad(grad(f, 0), 0)` is
/// a second derivative (see [the module's composition rules](super#composition)).
///
/// # Errors
///
/// PyTorch's, at each call: "grad_and_value(f)(*args): Expected f(*args) to return a scalar
/// Tensor, got tensor with N dims. Maybe you wanted to use the vjp or jacrev APIs instead?",
/// "argnums must be non-empty", "argnums elements must be unique, got (0, 0)", "Got argnum=2,
/// but only 1 positional inputs", "only Tensors of floating point dtype can require
/// gradients"; and any error of `f` or of the backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let g = func::grad(|x: &[Tensor]| x[0].sin()?.sum(), 0)(&[x])?; // cos x
/// assert_eq!(g.to_vec::<f64>()?, [1.0, 1f64.cos()]);
/// assert!(!g.requires_grad());
///
/// let t = Tensor::scalar(0.5f64);
/// let d3 = func::grad(func::grad(func::grad(|x: &[Tensor]| x[0].sin(), 0), 0), 0)(&[t])?;
/// assert_eq!(d3.item::<f64>()?, -(0.5f64.cos()));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn grad<F, R, A>(mut f: F, argnums: A) -> impl FnMut(&[Tensor]) -> Result<R::With<Grads<A>>>
where
    F: FnMut(&[Tensor]) -> Result<R>,
    R: Returns<Out = Tensor>,
    A: Argnums,
{
    let argnums = argnums.indices();
    move |args| {
        let mut aux = None;
        let (grads, _) =
            grad_and_value_core(&mut |a| call_split(&mut f, &mut aux, a), args, &argnums)?;
        Ok(R::with(A::rebuild(grads), take_aux(&mut aux)))
    }
}

/// [`grad`] that also returns `f`'s value (`torch.func.grad_and_value`): `(gradient, value)`,
/// or `(gradient, (value, aux))` for a function returning `(value, Aux(aux))`, as PyTorch's.
///
/// # Errors
///
/// As [`grad`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let (g, value) = func::grad_and_value(|x: &[Tensor]| x[0].mul(&x[0])?.sum(), 0)(&[x])?;
/// assert_eq!((g.to_vec::<f64>()?, value.item::<f64>()?), (vec![2.0, 4.0], 5.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn grad_and_value<F, R, A>(
    mut f: F,
    argnums: A,
) -> impl FnMut(&[Tensor]) -> Result<GradAndValue<R, A>>
where
    F: FnMut(&[Tensor]) -> Result<R>,
    R: Returns<Out = Tensor>,
    A: Argnums,
{
    let argnums = argnums.indices();
    move |args| {
        let mut aux = None;
        let (grads, value) =
            grad_and_value_core(&mut |a| call_split(&mut f, &mut aux, a), args, &argnums)?;
        Ok((A::rebuild(grads), R::with(value, take_aux(&mut aux))))
    }
}

/// `f`'s outputs at `primals` and the function that maps cotangents `v` (one per output, of its
/// shape) to `vᵀ·J`, one tensor per primal (`torch.func.vjp`).
///
/// `vjp_fn` may be called any number of times (the graph is kept while it lives); with grad mode
/// on, its results are recorded, so that they can be differentiated again.
///
/// # Errors
///
/// From `vjp`: "only Tensors of floating point dtype can require gradients", and any error of
/// `f`. From `vjp_fn`: PyTorch's "Expected pytree structure of cotangents to be the same as
/// pytree structure of outputs to the function. cotangents: (*, *), primal output: *" for a
/// count that does not match, the engine's `Mismatch in shape: grad_output[0] has a shape of
/// ...` for a shape, and any error of the backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let (y, vjp_fn) = func::vjp(|x: &[Tensor]| x[0].mul(&x[0]), &[x])?; // J = diag(2x)
/// assert_eq!(y.to_vec::<f64>()?, [1.0, 4.0]);
/// let v = Tensor::from_vec(vec![1.0f64, 10.0], &[2])?;
/// assert_eq!(vjp_fn(&[v])?[0].to_vec::<f64>()?, [2.0, 40.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
// The closure's type cannot be named (it is `vjp_fn`): no alias shortens the tuple.
#[allow(clippy::type_complexity)]
pub fn vjp<F, O>(
    mut f: F,
    primals: &[Tensor],
) -> Result<(
    O::Map<Tensor>,
    impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + use<F, O>,
)>
where
    F: FnMut(&[Tensor]) -> Result<O>,
    O: Tree,
{
    let (outputs, state) = vjp_core(&mut |a| Ok(f(a)?.into_tensors()), primals)?;
    Ok((O::rebuild(outputs), move |v: &[Tensor]| state.call(v)))
}

/// The Jacobian of `f` with respect to its arguments `argnums` by reverse mode
/// (`torch.func.jacrev`): per output, the derivative with respect to each argument in
/// `argnums`, of shape `output.shape + argument.shape` (one tensor for one index, an array or
/// `Vec` for several; zeros where the output does not depend on the argument).
///
/// The rows of the identity go to [`grad`](crate::grad) at once, with `is_grads_batched`. A
/// function returning `(outputs, Aux(aux))` gives `(jacobian, aux)`.
///
/// # Errors
///
/// PyTorch's argnums errors (as [`grad`]), "only Tensors of floating point dtype can require
/// gradients", and any error of `f` or of a backward pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let w = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
/// let f = |a: &[Tensor]| a[1].matmul(&a[0]); // W·x
/// let [jx, jw] = func::jacrev(f, [0, 1])(&[x, w.clone()])?;
/// assert_eq!(jx.to_vec::<f64>()?, w.to_vec::<f64>()?); // ∂(Wx)/∂x = W
/// assert_eq!(jw.shape(), &[3, 3, 2]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn jacrev<F, R, A>(f: F, argnums: A) -> impl FnMut(&[Tensor]) -> Result<Jacobian<R, A>>
where
    F: FnMut(&[Tensor]) -> Result<R>,
    R: Returns,
    A: Argnums,
{
    super::jacobian_transform(f, argnums, jacrev_core)
}

/// The Hessian of `f` with respect to its arguments `argnums` (`torch.func.hessian`):
/// [`jacfwd`](super::jacfwd) of [`jacrev`], forward over reverse, as PyTorch computes it.
///
/// Per output, per pair of arguments `(i, j)` in `argnums`, a tensor of shape
/// `output.shape + args[i].shape + args[j].shape`: one tensor for one index, nested arrays or
/// `Vec`s for several (`[[h00, h01], [h10, h11]]`).
///
/// # Errors
///
/// As [`jacrev`] and [`jacfwd`](super::jacfwd).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let (x, y) = (Tensor::scalar(2.0f64), Tensor::scalar(3.0f64));
/// let f = |a: &[Tensor]| a[0].mul(&a[0])?.mul(&a[1]); // x²y
/// let [[hxx, hxy], [hyx, hyy]] = func::hessian(f, [0, 1])(&[x, y])?;
/// let values: Vec<f64> = [hxx, hxy, hyx, hyy].iter().map(|h| h.item::<f64>()).collect::<Result<_, _>>()?;
/// assert_eq!(values, [6.0, 4.0, 4.0, 0.0]); // 2y, 2x, 2x, 0
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn hessian<F, O, A>(mut f: F, argnums: A) -> impl FnMut(&[Tensor]) -> Result<Hessian<O, A>>
where
    F: FnMut(&[Tensor]) -> Result<O>,
    O: Tree,
    A: Argnums,
{
    let argnums = argnums.indices();
    move |args| {
        let mut inner = |a: &[Tensor]| {
            let jac = jacrev_core(&mut |b| Ok(f(b)?.into_tensors()), a, &argnums)?;
            Ok((jac, true))
        };
        let hess = super::forward::jacfwd_core(&mut inner, args, &argnums)?;
        let n = argnums.len();
        let rows = group::<A, _>(hess, n);
        Ok(O::rebuild(group::<A, _>(rows, n)))
    }
}

/// The arguments with those at `argnums` replaced by tensors that require grad
/// (`functional`'s `_grad_preprocess`), and those replacements.
fn prepare(args: &[Tensor], argnums: &[usize], create_graph: bool) -> Result<PreparedArgs> {
    let picked: Vec<Tensor> = argnums.iter().map(|&i| args[i].clone()).collect();
    let own = preprocess(&picked, create_graph, true)?;
    let mut all = args.to_vec();
    for (&i, t) in argnums.iter().zip(&own) {
        all[i] = t.clone();
    }
    Ok(PreparedArgs { all, own })
}

/// What [`prepare`] returns.
struct PreparedArgs {
    /// Every argument, as `f` receives them.
    all: Vec<Tensor>,
    /// The ones differentiated, in `argnums`' order.
    own: Vec<Tensor>,
}

/// A gradient per tensor of `own`, zeros where `grads` has none.
fn zeros_for_none(grads: Vec<Option<Tensor>>, own: &[Tensor]) -> Result<Vec<Tensor>> {
    grads
        .into_iter()
        .zip(own)
        .map(|(g, x)| g.map_or_else(|| x.zeros_like(), Ok))
        .collect()
}

/// `grad_and_value`'s work: the gradients (in `argnums`' order) and the value.
fn grad_and_value_core(
    f: Body<'_>,
    args: &[Tensor],
    argnums: &[isize],
) -> Result<(Vec<Tensor>, Tensor)> {
    let argnums = resolve_argnums(argnums, args.len())?;
    let create_graph = is_grad_enabled();
    let _grad = enable_grad();
    let PreparedArgs { all, own } = prepare(args, &argnums, create_graph)?;
    let (outputs, _) = f(&all)?;
    let out = match <[Tensor; 1]>::try_from(outputs) {
        Ok([out]) if out.ndim() == 0 => out,
        Ok([out]) => {
            return Err(Error::msg(format!(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got \
                 tensor with {} dims. Maybe you wanted to use the vjp or jacrev APIs instead?",
                out.ndim()
            )));
        }
        Err(_) => unreachable!("invariant: `grad`'s function returns one tensor"),
    };
    let grads = autograd_grad(&[Some(out.clone())], &own, None, create_graph, None, false)?;
    let mut results = zeros_for_none(grads, &own)?;
    results.push(out);
    let mut results = finish(results, &own, create_graph)?;
    let value = results
        .pop()
        .unwrap_or_else(|| unreachable!("invariant: the value was pushed last"));
    Ok((results, value))
}

/// `jacrev`'s work: the Jacobians, per output then per argnum.
pub(super) fn jacrev_core(f: Body<'_>, args: &[Tensor], argnums: &[isize]) -> Result<Vec<Tensor>> {
    let argnums = resolve_argnums(argnums, args.len())?;
    let create_graph = is_grad_enabled();
    let _grad = enable_grad();
    let PreparedArgs { all, own } = prepare(args, &argnums, create_graph)?;
    let (outputs, _) = f(&all)?;
    let jac = vectorized(&outputs, &own, create_graph)?;
    finish(jac.into_iter().flatten().collect(), &own, create_graph)
}

/// What `vjp_fn` needs: the recorded outputs and the tensors they were computed from.
struct VjpState {
    outputs: Vec<Tensor>,
    own: Vec<Tensor>,
    is_tuple: bool,
}

impl VjpState {
    /// `vᵀ·J`, one tensor per primal (zeros where the outputs do not depend on it).
    fn call(&self, v: &[Tensor]) -> Result<Vec<Tensor>> {
        if v.len() != self.outputs.len() {
            return Err(Error::msg(format!(
                "Expected pytree structure of cotangents to be the same as pytree structure of \
                 outputs to the function. cotangents: {}, primal output: {}",
                short_spec(v.len(), v.len() != 1),
                short_spec(self.outputs.len(), self.is_tuple)
            )));
        }
        let create_graph = is_grad_enabled();
        let outputs: Vec<Option<Tensor>> = self.outputs.iter().cloned().map(Some).collect();
        let v: Vec<Option<Tensor>> = v.iter().cloned().map(Some).collect();
        let grads = autograd_grad(
            &outputs,
            &self.own,
            Some(&v),
            create_graph,
            Some(true),
            false,
        )?;
        finish(zeros_for_none(grads, &self.own)?, &self.own, create_graph)
    }
}

/// `vjp`'s work: `f`'s outputs, and what `vjp_fn` needs.
fn vjp_core(f: Body<'_>, primals: &[Tensor]) -> Result<(Vec<Tensor>, VjpState)> {
    let create_graph = is_grad_enabled();
    let _grad = enable_grad();
    let own = preprocess(primals, create_graph, true)?;
    let (outputs, is_tuple) = f(&own)?;
    let shown = finish(outputs.clone(), &own, create_graph)?;
    let state = VjpState {
        outputs,
        own,
        is_tuple,
    };
    Ok((shown, state))
}

/// The results of a reverse-mode transform, as PyTorch's leave its level: detached unless
/// `create_graph`, and with it, detached too where they depend on no tensor that requires grad
/// other than `own` (the transform's own leaves), so that nothing outside can differentiate
/// them. A result's tangent at the open dual level is kept.
pub(super) fn finish(
    results: Vec<Tensor>,
    own: &[Tensor],
    create_graph: bool,
) -> Result<Vec<Tensor>> {
    let own_nodes: Vec<NodeRef> = own
        .iter()
        .filter(|t| create_graph && t.is_leaf() && t.requires_grad())
        .map(|t| get_gradient_edge(t).map(|e| e.node))
        .collect::<Result<_>>()?;
    results
        .into_iter()
        .map(|t| {
            if !t.requires_grad() || (create_graph && reaches_outside(&t, &own_nodes)?) {
                return Ok(t);
            }
            let detached = t.detach();
            crate::forward_ad::carry(&t, &detached);
            Ok(detached)
        })
        .collect()
}

/// Whether `t`'s graph reaches a leaf's `AccumulateGrad` other than `own`'s (a walk with an
/// explicit stack, each node once).
fn reaches_outside(t: &Tensor, own: &[NodeRef]) -> Result<bool> {
    let mut stack = vec![get_gradient_edge(t)?.node];
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if !seen.insert(node.addr()) {
            continue;
        }
        if node.name() == "AccumulateGrad" && !own.iter().any(|o| o.ptr_eq(&node)) {
            return Ok(true);
        }
        stack.extend(node.next_functions().into_iter().flatten().map(|e| e.node));
    }
    Ok(false)
}
