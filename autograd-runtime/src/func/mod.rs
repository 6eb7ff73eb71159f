//! Function transforms, as PyTorch's `torch.func`: [`grad`], [`grad_and_value`], [`vjp`],
//! [`jvp`], [`jacrev`], [`jacfwd`], [`hessian`], [`vmap`] and [`functional_call`].
//!
//! A transform takes a function of tensors, `FnMut(&[Tensor]) -> Result<O>`, and returns a new
//! function of the same arguments (or, for [`vjp`] and [`jvp`], evaluates it at once), built on
//! [`crate::functional`], [`crate::forward_ad`] and [`grad`](crate::grad):
//!
//! | transform | computes | by |
//! |---|---|---|
//! | [`grad`]`(f, argnums)` | `∂f/∂args[argnums]` of a scalar `f` | one backward pass |
//! | [`grad_and_value`] | the gradient and `f`'s value | one backward pass |
//! | [`vjp`]`(f, primals)` | `f(primals)` and `vjp_fn(v) = vᵀ·J` | one backward pass per call |
//! | [`jvp`]`(f, primals, tangents)` | `f(primals)` and `J·tangents` | forward mode, one pass |
//! | [`jacrev`] | the Jacobian | backward passes, batched (`is_grads_batched`) |
//! | [`jacfwd`] | the Jacobian | forward mode, one pass per input element |
//! | [`hessian`] | `jacfwd(jacrev(f))` | forward over reverse |
//! | [`vmap`]`(f, in_dims, out_dims)` | `f` over a batch dimension | one call per sample |
//!
//! # Composition
//!
//! The transforms nest: `grad(grad(f, 0), 0)` is a second derivative, `jacfwd(jacrev(f, 0), 0)`
//! a Hessian, `vmap(grad(f, 0), 0, 0)` per-sample gradients. A reverse-mode transform
//! differentiates its function with `create_graph` whenever grad mode is on, so its results can
//! be differentiated by a transform around it, or by a plain `backward()` where they depend on
//! tensors from outside that require grad (model parameters): as in PyTorch, `grad(f, 0)(&[x])`
//! requires grad exactly when `x`, or a tensor `f` captured, does, and is otherwise detached.
//! Forward mode has one dual level at a time ([`crate::forward_ad`]): a [`jacfwd`] or [`jvp`]
//! inside another forward-mode transform computes the same values by reverse mode (the
//! "double-vjp trick" for [`jvp`]), which the outer level's tangents flow through.
//!
//! # Arguments, outputs, `argnums` and `has_aux`
//!
//! A function takes its positional arguments as `&[Tensor]` (other arguments are captured by the
//! closure) and returns a [`Tensor`], a tuple, array or `Vec` of them (a [`Tree`]); a transform's
//! result has the same structure, with a tensor per output. `argnums` is one index ([`isize`],
//! negative from the end) or several (`[0, 1]`, `vec![..]`); one index gives one tensor per
//! output, several an array or `Vec` of them ([`Argnums`]). `has_aux`: a function returning
//! `(output, Aux(aux))` has its `aux` passed through untouched, the transform returning
//! `(result, aux)` ([`Aux`], [`Returns`]).
//!
//! # Differences from PyTorch
//!
//! * [`vmap`] calls `f` once per sample along the mapped dimensions and stacks the results,
//!   where PyTorch calls `f` once with batched tensors: values and gradients agree for
//!   functions without side effects or randomness, at the cost of one call per sample.
//!   `chunk_size` and `randomness` are not offered.
//! * [`jacrev`] and [`jacfwd`] run one backward pass per output element and one forward pass per
//!   input element (PyTorch vmaps them into one).
//! * Errors name the function `f` where PyTorch names it after its `__name__`.
//!
//! # Examples
//!
//! ```
//! use autograd_runtime::{func, Tensor};
//! let x = Tensor::scalar(2.0f64);
//! let f = |x: &[Tensor]| x[0].pow(3.0);                  // x³
//! let d2 = func::grad(func::grad(f, 0), 0)(&[x.clone()])?; // 6x
//! assert_eq!(d2.item::<f64>()?, 12.0);
//!
//! let v = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
//! let h = func::hessian(|x: &[Tensor]| x[0].pow(3.0)?.sum(), 0)(&[v])?; // diag(6v)
//! assert_eq!(h.to_vec::<f64>()?, [6.0, 0.0, 0.0, 0.0, 12.0, 0.0, 0.0, 0.0, 18.0]);
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

mod call;
mod forward;
mod reverse;
mod vmap;

pub use call::{FunctionalCallOptions, functional_call, functional_call_with};
pub use forward::{jacfwd, jvp};
pub use reverse::{grad, grad_and_value, hessian, jacrev, vjp};
pub use vmap::{Dims, vmap};

use crate::functional::Outputs;
use crate::{Error, Result, Tensor};

/// What [`grad`] returns for `argnums` of type `A`: one gradient, or an array or `Vec` of them.
pub type Grads<A> = <A as Argnums>::Map<Tensor>;

/// What [`grad_and_value`] returns for a function returning `R`: the gradients, and the value
/// (with the auxiliary values where `R` has them: `(value, aux)`).
pub type GradAndValue<R, A> = (Grads<A>, <R as Returns>::With<Tensor>);

/// What [`jacrev`] and [`jacfwd`] return for a function returning `R`: per output, [`Grads`]
/// (with the auxiliary values where `R` has them).
pub type Jacobian<R, A> =
    <R as Returns>::With<<<R as Returns>::Out as Tree>::Map<<A as Argnums>::Map<Tensor>>>;

/// What [`hessian`] returns for a function returning `O`: per output, per pair of `argnums`, a
/// tensor.
pub type Hessian<O, A> = <O as Tree>::Map<<A as Argnums>::Map<<A as Argnums>::Map<Tensor>>>;

/// The function a transform's core calls: the tensors it returns, and whether they form a tuple.
type Body<'a> = &'a mut dyn FnMut(&[Tensor]) -> Result<(Vec<Tensor>, bool)>;

/// What a function given to a transform returns, and the shape of what the transform returns:
/// one [`Tensor`], or a tuple (up to four), array or `Vec` of them; `Map<G>` is the same
/// structure holding a `G` per tensor (`(Tensor, Tensor)` maps to `(G, G)`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Result, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let two = |x: &[Tensor]| -> Result<(Tensor, Tensor)> { Ok((x[0].sum()?, x[0].mul(&x[0])?)) };
/// let (j_sum, j_sq) = func::jacrev(two, 0)(&[x])?; // one Jacobian per output
/// assert_eq!(j_sum.to_vec::<f64>()?, [1.0, 1.0]);
/// assert_eq!(j_sq.to_vec::<f64>()?, [2.0, 0.0, 0.0, 4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Tree: Outputs {
    /// The same structure with a `G` in place of each tensor.
    type Map<G>;

    /// Builds the structure from its items, in order (as many as
    /// [`into_tensors`](Outputs::into_tensors) gave).
    #[doc(hidden)]
    fn rebuild<G>(items: Vec<G>) -> Self::Map<G>;
}

/// The next of `items`, which the transforms make as many as a structure needs.
fn next<G>(items: &mut impl Iterator<Item = G>) -> G {
    items
        .next()
        .unwrap_or_else(|| unreachable!("invariant: a structure is rebuilt from its own items"))
}

impl Tree for Tensor {
    type Map<G> = G;
    fn rebuild<G>(items: Vec<G>) -> G {
        next(&mut items.into_iter())
    }
}

impl Tree for Vec<Tensor> {
    type Map<G> = Vec<G>;
    fn rebuild<G>(items: Vec<G>) -> Vec<G> {
        items
    }
}

impl<const N: usize> Tree for [Tensor; N] {
    type Map<G> = [G; N];
    fn rebuild<G>(items: Vec<G>) -> [G; N] {
        let mut items = items.into_iter();
        std::array::from_fn(|_| next(&mut items))
    }
}

macro_rules! tuple_tree {
    ($($t:ident),+) => {
        impl Tree for ($(tuple_tree!(@tensor $t),)+) {
            type Map<G> = ($(tuple_tree!(@g $t),)+);
            fn rebuild<G>(items: Vec<G>) -> Self::Map<G> {
                let mut items = items.into_iter();
                ($(tuple_tree!(@next items $t),)+)
            }
        }
    };
    (@tensor $t:ident) => { Tensor };
    (@g $t:ident) => { G };
    (@next $items:ident $t:ident) => { next(&mut $items) };
}

tuple_tree!(a);
tuple_tree!(a, b);
tuple_tree!(a, b, c);
tuple_tree!(a, b, c, d);

/// Which arguments a transform differentiates (PyTorch's `argnums`): one index (an [`isize`],
/// negative counting from the end), whose result is one tensor, or several (an array or `Vec`,
/// non-empty and without repeats), whose result is an array or `Vec` of them in that order.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{func, Tensor};
/// let (x, y) = (Tensor::scalar(3.0f64), Tensor::scalar(5.0f64));
/// let f = |a: &[Tensor]| a[0].mul(&a[1]);
/// let dy = func::grad(f, -1)(&[x.clone(), y.clone()])?;
/// assert_eq!(dy.item::<f64>()?, 3.0);
/// let [dx, dy] = func::grad(f, [0, 1])(&[x, y])?;
/// assert_eq!((dx.item::<f64>()?, dy.item::<f64>()?), (5.0, 3.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Argnums {
    /// A `G` per index: `G` for one index, `[G; N]` or `Vec<G>` for several.
    type Map<G>;

    /// The indices, as given.
    fn indices(&self) -> Vec<isize>;

    /// Builds the result from one item per index.
    #[doc(hidden)]
    fn rebuild<G>(items: Vec<G>) -> Self::Map<G>;
}

impl Argnums for isize {
    type Map<G> = G;
    fn indices(&self) -> Vec<isize> {
        vec![*self]
    }
    fn rebuild<G>(items: Vec<G>) -> G {
        next(&mut items.into_iter())
    }
}

impl<const N: usize> Argnums for [isize; N] {
    type Map<G> = [G; N];
    fn indices(&self) -> Vec<isize> {
        self.to_vec()
    }
    fn rebuild<G>(items: Vec<G>) -> [G; N] {
        let mut items = items.into_iter();
        std::array::from_fn(|_| next(&mut items))
    }
}

impl Argnums for Vec<isize> {
    type Map<G> = Vec<G>;
    fn indices(&self) -> Vec<isize> {
        self.clone()
    }
    fn rebuild<G>(items: Vec<G>) -> Vec<G> {
        items
    }
}

/// Auxiliary values a function returns beside its output (PyTorch's `has_aux=True`): a function
/// returning `(output, Aux(aux))` is differentiated through `output` only, and the transform
/// returns `aux` as it came, beside its own result.
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::{self, Aux};
/// use autograd_runtime::{Result, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let f = |x: &[Tensor]| -> Result<_> {
///     let y = x[0].mul(&x[0])?;
///     Ok((y.sum()?, Aux(y.detach()))) // differentiate Σ x², keep x² aside
/// };
/// let (g, squares) = func::grad(f, 0)(&[x])?;
/// assert_eq!(g.to_vec::<f64>()?, [2.0, 4.0]);
/// assert_eq!(squares.to_vec::<f64>()?, [1.0, 4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Aux<A>(pub A);

/// What a function given to [`grad`], [`grad_and_value`], [`jacrev`] or [`jacfwd`] returns: a
/// [`Tree`] of outputs, or `(outputs, Aux(aux))`. `With<R>` is what the transform then returns
/// for its result `R`: `R`, or `(R, aux)`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::func::{self, Aux};
/// use autograd_runtime::{Result, Tensor};
/// let x = Tensor::scalar(2.0f64);
/// let with_count = |x: &[Tensor]| -> Result<_> { Ok((x[0].exp()?, Aux(1usize))) };
/// let (jac, count) = func::jacfwd(with_count, 0)(&[x])?;
/// assert_eq!((jac.item::<f64>()?, count), (2f64.exp(), 1));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Returns {
    /// The outputs.
    type Out: Tree;
    /// The auxiliary values (`()` without).
    type Aux;
    /// A transform's result `R`, with the auxiliary values where there are.
    type With<R>;

    /// The outputs and the auxiliary values.
    #[doc(hidden)]
    fn split(self) -> (Self::Out, Self::Aux);

    /// `result`, with `aux` where there are auxiliary values.
    #[doc(hidden)]
    fn with<R>(result: R, aux: Self::Aux) -> Self::With<R>;
}

impl<T: Tree> Returns for T {
    type Out = T;
    type Aux = ();
    type With<R> = R;
    fn split(self) -> (T, ()) {
        (self, ())
    }
    fn with<R>(result: R, _aux: ()) -> R {
        result
    }
}

impl<T: Tree, A> Returns for (T, Aux<A>) {
    type Out = T;
    type Aux = A;
    type With<R> = (R, A);
    fn split(self) -> (T, A) {
        (self.0, self.1.0)
    }
    fn with<R>(result: R, aux: A) -> (R, A) {
        (result, aux)
    }
}

/// Calls `f`, keeping its auxiliary values in `aux` and returning its outputs as a [`Body`]
/// does.
fn call_split<R: Returns>(
    f: &mut impl FnMut(&[Tensor]) -> Result<R>,
    aux: &mut Option<R::Aux>,
    args: &[Tensor],
) -> Result<(Vec<Tensor>, bool)> {
    let (out, a) = f(args)?.split();
    *aux = Some(a);
    Ok(out.into_tensors())
}

/// The auxiliary values of the call that just succeeded.
/// The work of [`jacrev`] or [`jacfwd`]: the Jacobians, per output then per argnum.
type JacobianCore = fn(Body<'_>, &[Tensor], &[isize]) -> Result<Vec<Tensor>>;

/// [`jacrev`] and [`jacfwd`]'s closure around their non-generic `core`: the Jacobians per
/// output then per argnum, regrouped into `f`'s output structure, with `f`'s aux.
fn jacobian_transform<F, R, A>(
    mut f: F,
    argnums: A,
    core: JacobianCore,
) -> impl FnMut(&[Tensor]) -> Result<Jacobian<R, A>>
where
    F: FnMut(&[Tensor]) -> Result<R>,
    R: Returns,
    A: Argnums,
{
    let argnums = argnums.indices();
    move |args| {
        let mut aux = None;
        let jac = core(&mut |a| call_split(&mut f, &mut aux, a), args, &argnums)?;
        let per_output = group::<A, _>(jac, argnums.len());
        Ok(R::with(R::Out::rebuild(per_output), take_aux(&mut aux)))
    }
}

fn take_aux<A>(aux: &mut Option<A>) -> A {
    aux.take()
        .unwrap_or_else(|| unreachable!("invariant: the function ran before its result is built"))
}

/// PyTorch's `TreeSpec` text for a tuple of `n` leaves (`TreeSpec(tuple, None, [*,\n  *])`).
fn tree_spec(n: usize) -> String {
    format!("TreeSpec(tuple, None, [{}])", vec!["*"; n].join(",\n  "))
}

/// PyTorch's short spec text: `*` for one tensor, `(*, *)` for a tuple (`(*,)` for one).
fn short_spec(n: usize, is_tuple: bool) -> String {
    match (n, is_tuple) {
        (_, false) => "*".to_string(),
        (1, true) => "(*,)".to_string(),
        (n, true) => format!("({})", vec!["*"; n].join(", ")),
    }
}

/// `argnums` checked against `n` arguments and made non-negative (`_argnums_partial`'s
/// checks, with PyTorch's messages).
fn resolve_argnums(argnums: &[isize], n: usize) -> Result<Vec<usize>> {
    if argnums.is_empty() {
        return Err(Error::msg("argnums must be non-empty"));
    }
    let distinct: std::collections::HashSet<&isize> = argnums.iter().collect();
    if distinct.len() != argnums.len() {
        let items: Vec<String> = argnums.iter().map(isize::to_string).collect();
        return Err(Error::msg(format!(
            "argnums elements must be unique, got ({})",
            items.join(", ")
        )));
    }
    argnums
        .iter()
        .map(|&a| {
            let i = if a < 0 { a + n as isize } else { a };
            if i < 0 || i >= n as isize {
                return Err(Error::msg(format!(
                    "Got argnum={a}, but only {n} positional inputs"
                )));
            }
            Ok(i as usize)
        })
        .collect()
}

/// `flat`, `per` items at a time, each group rebuilt by `A` (a Jacobian's items per output, one
/// per argnum).
fn group<A: Argnums, G>(flat: Vec<G>, per: usize) -> Vec<A::Map<G>> {
    let mut flat = flat.into_iter();
    let mut out = Vec::new();
    loop {
        let chunk: Vec<G> = flat.by_ref().take(per).collect();
        if chunk.is_empty() {
            return out;
        }
        out.push(A::rebuild(chunk));
    }
}
