//! Higher-level derivatives of whole functions: vector-Jacobian and Jacobian-vector products,
//! Jacobians, Hessians and Hessian-vector products (`torch.autograd.functional`).
//!
//! Each function takes the user's function, its inputs and, where PyTorch has one, a vector
//! `v`, runs the function once on fresh copies of the inputs and differentiates it with
//! [`grad`](crate::grad):
//!
//! | function | returns | PyTorch |
//! |---|---|---|
//! | [`vjp`] | the outputs, and `vᵀ·J` per input | `vjp(func, inputs, v)` |
//! | [`jvp`] | the outputs, and `J·v` per output | `jvp(func, inputs, v)` |
//! | [`jacobian`] | per output, per input, a tensor of shape `out.shape + in.shape` | `jacobian(func, inputs)` |
//! | [`hessian`] | per input pair, a tensor of shape `in_i.shape + in_j.shape` | `hessian(func, inputs)` |
//! | [`vhp`] | the output, and `vᵀ·H` per input | `vhp(func, inputs, v)` |
//! | [`hvp`] | the output, and `H·v` per input | `hvp(func, inputs, v)` |
//!
//! # Inputs, outputs and `v`
//!
//! The function receives the inputs as a slice `&[Tensor]` and returns a single [`Tensor`], or a
//! tuple, array or `Vec` of them (the [`Outputs`] trait). `inputs` is a single `&Tensor` or a
//! slice, array or `Vec` of tensors (the [`Inputs`] trait). As in PyTorch, whether the inputs
//! and outputs are one tensor or a tuple only changes the wording of the errors about `v`;
//! results here are always `Vec`s, one entry per input or output. `v` is `None` or one tensor
//! per output ([`vjp`]) or per input (the others), each of the shape of its output or input.
//!
//! # Semantics
//!
//! As PyTorch's:
//!
//! * the function runs on detached copies of the inputs that require grad (under
//!   [`enable_grad`](crate::enable_grad)); the caller's tensors are neither changed nor read by
//!   the backward passes, and their `.grad` stays as it was;
//! * with [`create_graph`](Options::create_graph) off, outputs and results are detached; with it
//!   on, they are recorded, so that they can be differentiated again, and an input that
//!   requires grad enters the function as a view of itself, so that the results depend on it;
//! * an input that the outputs do not depend on gets zeros, unless [`strict`](Options::strict)
//!   is on, which makes it (and outputs that do not require grad, and, with `create_graph`,
//!   results that cannot be differentiated) an error with PyTorch's message.
//!
//! As PyTorch's, [`jvp`] and [`hvp`] use the "double-vjp" trick (a backward pass through the
//! backward pass), so they cost about twice a [`vjp`] or [`vhp`]; forward mode itself is
//! [`crate::forward_ad`]. [`jacobian`] and [`hessian`] run one backward pass per output element;
//! with [`vectorize`](JacobianOptions::vectorize) they hand the rows of the identity to
//! [`grad`](crate::grad) at once with `is_grads_batched`, which here runs the same passes.
//! [`Strategy::ForwardMode`] runs one forward-mode pass per input element instead (for a
//! [`hessian`], forward over reverse).
//!
//! # Examples
//!
//! ```
//! use autograd_runtime::functional::{hessian, jacobian, JacobianOptions};
//! use autograd_runtime::Tensor;
//!
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
//! let f = |x: &[Tensor]| x[0].pow(3.0)?.sum(); // Σ xᵢ³
//! let jac = jacobian(f, &x, JacobianOptions::new())?;
//! assert_eq!(jac[0][0].to_vec::<f64>()?, [3.0, 12.0]); // 3xᵢ²
//! let h = hessian(f, &x, JacobianOptions::new())?;
//! assert_eq!(h[0][0].to_vec::<f64>()?, [6.0, 0.0, 0.0, 12.0]); // diag(6xᵢ)
//! # Ok::<(), autograd_runtime::Error>(())
//! ```

mod common;
mod jacobian;
mod products;

pub use jacobian::{hessian, jacobian};
pub use products::{hvp, jvp, vhp, vjp};

// `func`'s transforms share these steps.
pub(crate) use common::{autograd_grad, preprocess};
pub(crate) use jacobian::{forward_jacobian, vectorized};

use crate::Tensor;

/// Options of [`vjp`], [`jvp`], [`hvp`] and [`vhp`]: PyTorch's keyword arguments
/// `create_graph=False, strict=False`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{vjp, Options};
/// use autograd_runtime::Tensor;
/// let x = Tensor::scalar(2.0f64);
/// let (_, g) = vjp(|x: &[Tensor]| x[0].pow(3.0), &x, None, Options::new().create_graph(true))?;
/// assert!(g[0].requires_grad()); // 3x², recorded: can be differentiated again
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    create_graph: bool,
    strict: bool,
}

impl Options {
    /// PyTorch's defaults: `create_graph=False`, `strict=False`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record the computation of the results, so that they can be differentiated (default
    /// `false`: outputs and results are detached).
    pub fn create_graph(mut self, create_graph: bool) -> Self {
        self.create_graph = create_graph;
        self
    }

    /// Fail, instead of returning zeros, where an output is independent of an input (default
    /// `false`); the exact conditions and messages are PyTorch's.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// How [`jacobian`] computes the Jacobian (PyTorch's `strategy`, and [`hessian`]'s
/// `outer_jacobian_strategy`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{jacobian, JacobianOptions, Strategy};
/// use autograd_runtime::Tensor;
/// let x = Tensor::scalar(1.0f64);
/// let forward = JacobianOptions::new().strategy(Strategy::ForwardMode).vectorize(true);
/// let jac = jacobian(|x: &[Tensor]| x[0].exp(), &x, forward)?; // one forward-mode pass
/// assert_eq!(jac[0][0].item::<f64>()?, 1.0f64.exp());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// `"reverse-mode"` (the default): one backward pass per output element.
    #[default]
    ReverseMode,
    /// `"forward-mode"`: one forward-mode pass per input element ([`crate::forward_ad`]), with
    /// PyTorch's argument checks (`vectorize` on, `create_graph` and `strict` off).
    ForwardMode,
}

/// Options of [`jacobian`] and [`hessian`]: PyTorch's keyword arguments `create_graph=False,
/// strict=False, vectorize=False, strategy="reverse-mode"`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{jacobian, JacobianOptions};
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?;
/// let jac = jacobian(|x: &[Tensor]| x[0].mul(&x[0]), &x, JacobianOptions::new().vectorize(true))?;
/// assert_eq!(jac[0][0].to_vec::<f64>()?, [2.0, 0.0, 0.0, 4.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct JacobianOptions {
    create_graph: bool,
    strict: bool,
    vectorize: bool,
    strategy: Strategy,
}

impl JacobianOptions {
    /// PyTorch's defaults: `create_graph=False`, `strict=False`, `vectorize=False`,
    /// `strategy="reverse-mode"`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record the computation of the Jacobian, so that it can be differentiated (default
    /// `false`: the result is detached).
    pub fn create_graph(mut self, create_graph: bool) -> Self {
        self.create_graph = create_graph;
        self
    }

    /// Fail, instead of returning zeros, where an output is independent of an input (default
    /// `false`). Not supported together with `vectorize`, as in PyTorch.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Compute all rows in one call to [`grad`](crate::grad) with `is_grads_batched` (default
    /// `false`: one call per output element). The values are the same; here the batched call
    /// runs one backward pass per row as well.
    pub fn vectorize(mut self, vectorize: bool) -> Self {
        self.vectorize = vectorize;
        self
    }

    /// Reverse or forward mode (default [`Strategy::ReverseMode`]); for [`hessian`], the
    /// strategy of the outer Jacobian.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }
}

/// What a function given to this module may return: one [`Tensor`], or a tuple, array or `Vec`
/// of them (PyTorch's "a Tensor or a tuple of Tensors").
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{jacobian, JacobianOptions};
/// use autograd_runtime::{Result, Tensor};
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let two = |x: &[Tensor]| -> Result<(Tensor, Tensor)> { Ok((x[0].sin()?, x[0].sum()?)) };
/// let jac = jacobian(two, &x, JacobianOptions::new())?;
/// assert_eq!(jac.len(), 2);
/// assert_eq!(jac[1][0].to_vec::<f64>()?, [1.0, 1.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Outputs {
    /// The tensors, and whether they form a tuple (PyTorch's `is_outputs_tuple`, which only
    /// changes the wording of errors).
    fn into_tensors(self) -> (Vec<Tensor>, bool);
}

impl Outputs for Tensor {
    fn into_tensors(self) -> (Vec<Tensor>, bool) {
        (vec![self], false)
    }
}

impl Outputs for Vec<Tensor> {
    fn into_tensors(self) -> (Vec<Tensor>, bool) {
        (self, true)
    }
}

impl<const N: usize> Outputs for [Tensor; N] {
    fn into_tensors(self) -> (Vec<Tensor>, bool) {
        (self.into(), true)
    }
}

macro_rules! tuple_outputs {
    ($($t:ident),+) => {
        impl Outputs for ($(tuple_outputs!(@tensor $t),)+) {
            fn into_tensors(self) -> (Vec<Tensor>, bool) {
                let ($($t,)+) = self;
                (vec![$($t),+], true)
            }
        }
    };
    (@tensor $t:ident) => { Tensor };
}

tuple_outputs!(a);
tuple_outputs!(a, b);
tuple_outputs!(a, b, c);
tuple_outputs!(a, b, c, d);

/// What this module's functions take as `inputs`: one [`Tensor`], or a slice, array or `Vec`
/// of them. The function always receives a slice.
///
/// # Examples
///
/// ```
/// use autograd_runtime::functional::{vjp, Options};
/// use autograd_runtime::Tensor;
/// let (a, b) = (Tensor::scalar(2.0f64), Tensor::scalar(5.0f64));
/// let (_, g) = vjp(|x: &[Tensor]| x[0].mul(&x[1]), &[a, b], None, Options::new())?;
/// assert_eq!((g[0].item::<f64>()?, g[1].item::<f64>()?), (5.0, 2.0));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub trait Inputs {
    /// The tensors.
    fn tensors(&self) -> &[Tensor];
    /// Whether they form a tuple (PyTorch's `is_inputs_tuple`, which only changes the wording
    /// of errors).
    fn is_tuple(&self) -> bool;
}

impl Inputs for Tensor {
    fn tensors(&self) -> &[Tensor] {
        std::slice::from_ref(self)
    }
    fn is_tuple(&self) -> bool {
        false
    }
}

impl Inputs for [Tensor] {
    fn tensors(&self) -> &[Tensor] {
        self
    }
    fn is_tuple(&self) -> bool {
        true
    }
}

impl Inputs for Vec<Tensor> {
    fn tensors(&self) -> &[Tensor] {
        self
    }
    fn is_tuple(&self) -> bool {
        true
    }
}

impl<const N: usize> Inputs for [Tensor; N] {
    fn tensors(&self) -> &[Tensor] {
        self
    }
    fn is_tuple(&self) -> bool {
        true
    }
}
