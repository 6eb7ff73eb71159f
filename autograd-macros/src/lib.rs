//! Procedural macros of the `autograd` crate: [`macro@differentiable`] and [`macro@backward`].
//!
//! Use them through the facade (`use autograd::{backward, differentiable};`). Runnable examples
//! live in the `autograd` crate docs, section "Custom differentiable functions", because doctests
//! of a proc-macro crate cannot use the runtime.
//!
//! Layout: `differentiable.rs` and `backward.rs` orchestrate; `attr.rs` parses the options; `ir.rs`
//! lowers `syn` to a typed IR; `valid.rs` checks a backward against its forward; `expand/` emits
//! code (infallible); `fallback.rs` keeps the user's item when there are errors.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod attr;
mod backward;
mod ctxt;
mod differentiable;
mod expand;
mod fallback;
mod ir;
mod symbol;
mod valid;

use proc_macro::TokenStream;

/// Declares a differentiable function: its body is the forward pass, and a function annotated
/// [`#[backward(name)]`](macro@backward) gives its gradient.
///
/// # Usage
///
/// ```text
/// use autograd::{backward, differentiable, Tensor};
///
/// #[differentiable]
/// fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
///     x * x * scale
/// }
///
/// #[backward(scaled_square)]
/// fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
///     grad * x * (2.0 * scale)
/// }
/// ```
///
/// Calling `scaled_square(&x, 2.0)` runs the body with graph recording off; if grad mode is on
/// and an input requires grad, it then records one node, `ScaledSquareBackward0`, whose backward
/// calls `scaled_square_backward`. The runnable version of this example, and more, are in the
/// `autograd` crate docs.
///
/// # Rules
///
/// * The function is a free function: not a method, not generic, not `async`, `const`,
///   `unsafe`, `extern` or variadic. Parameters are plain identifiers.
/// * `&Tensor` parameters are the differentiable inputs (at least one). Every other parameter is
///   an *attribute*: saved by value (cloned before the forward runs, so it must be
///   `Clone + Send + Sync + 'static`) if the backward names it. `Tensor`, `&mut Tensor` and
///   `Option<&Tensor>` parameters are rejected.
/// * Parameter names `grad`, `grad_*`, `result` and `result_*` are reserved for the backward.
/// * It returns `Tensor`, a tuple of tensors (several outputs), or a `Result` of either (any
///   `Result<T>` or `Result<T, E>`; an `Err` reaches the caller and nothing is recorded).
/// * It has exactly one `#[backward]`; a missing or second one is a compile error.
/// * An output that is one of the inputs (returned as is), a tensor that already requires grad, or
///   the same tensor as an earlier output is replaced by a detached alias (same storage and
///   version counter), so that the node never takes over a tensor it did not create. Only `dirty`
///   inputs keep their handle.
///
/// # Options
///
/// `#[differentiable(option, ..)]`, each at most once:
///
/// | option | meaning |
/// |---|---|
/// | `name = "MyBackward"` | the node name (default: the function name in CamelCase + `Backward0`) |
/// | `once_differentiable` | the backward runs under `no_grad`. With `create_graph`, if an incoming gradient requires grad, the results come out of an `Error` node, and differentiating them again fails with `Error::OnceDifferentiable` (PyTorch's `@once_differentiable`) |
/// | `materialize_grads = false` | undefined incoming gradients reach the backward as `None` instead of zeros; its gradient parameters are then `Option<&Tensor>` |
/// | `non_differentiable(result_1, ..)` | those outputs never require grad; their gradient slot is zeros (or `None`) |
/// | `dirty(x, ..)` | the forward modifies these `&Tensor` inputs in place and returns them (`x.clone()`, the same handle); they become outputs of the node. Requires a `Result` return type: a dirty leaf that requires grad is `a leaf Variable that requires grad has been used in an in-place operation.`, a dirty input not returned is `Some elements marked as dirty during the forward method were not returned as output.`, and a dirty view is `Error::ViewInPlace` |
/// | `crate = "path"` | where the generated code finds the runtime (default `::autograd`; `"crate"` inside the runtime itself) |
///
/// # Equivalent code without `#[differentiable]`
///
/// For the example above (names shortened; the hidden items are `#[doc(hidden)]`):
///
/// ```text
/// pub fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
///     <__autograd_scaled_square_marker as __autograd_scaled_square_backward>::call(x, scale)
/// }
/// fn __autograd_scaled_square_forward(x: &Tensor, scale: f64) -> Tensor { x * x * scale }
/// struct __autograd_scaled_square_marker;
/// #[diagnostic::on_unimplemented(message = "`#[differentiable]` function `scaled_square` has no `#[backward]`")]
/// trait __autograd_scaled_square_backward { fn call(x: &Tensor, scale: f64) -> Tensor; }
/// macro_rules! __autograd_scaled_square_signature { /* hands both signatures to the check */ }
///
/// // from #[backward(scaled_square)], after checking it against the forward:
/// const _: () = {
///     struct Node { x: SavedTensor, scale: f64 }
///     impl Backward for Node {
///         const NAME: &'static str = "ScaledSquareBackward0";
///         fn backward(&self, _: &NodeMeta, grads: GradVec) -> Result<GradVec> {
///             let grad = /* grads[0], zeros if undefined */;
///             let x = self.x.get()?;                      // version-checked
///             let g = scaled_square_backward(&grad, &x, self.scale.clone());
///             Ok([Some(g)].into_iter().collect())
///         }
///         fn release(&self) { self.x.release(); }
///     }
///     impl __autograd_scaled_square_backward for __autograd_scaled_square_marker {
///         fn call(x: &Tensor, scale: f64) -> Tensor {
///             let Some(edges) = next_edges(&[x]) else {
///                 let _g = no_grad();
///                 return __autograd_scaled_square_forward(x, scale);
///             };
///             let saved_scale = scale.clone();
///             let out = { let _g = no_grad(); __autograd_scaled_square_forward(x, scale) };
///             record_node(edges, &[&out], |_node| Node { x: SavedTensor::input(x), scale: saved_scale });
///             out
///         }
///     }
/// };
/// ```
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    differentiable::expand(args.into(), item.into()).into()
}

/// Gives a [`#[differentiable]`](macro@differentiable) function its backward pass:
/// `#[backward(forward_fn)]`, or `#[backward(path::to::forward_fn)]` from another module of the
/// same crate.
///
/// # Usage
///
/// ```text
/// #[backward(scaled_square)]
/// fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
///     grad * x * (2.0 * scale)
/// }
/// ```
///
/// The function is checked against its forward at compile time; every mismatch is an error
/// pointing at the offending token and saying what would fit. Runnable examples are in the
/// `autograd` crate docs.
///
/// # Rules
///
/// * It is a plain free function, like the forward.
/// * **Incoming gradients first**: one parameter per forward output, named `grad` (one output) or
///   `grad_0`, `grad_1`, .. (any `grad_*`; a leading `_` is allowed), of type `&Tensor`, or
///   `Option<&Tensor>` when the forward has `materialize_grads = false`.
/// * **Then anything it needs, by name**: a forward parameter (same type as in the forward; an
///   attribute may also be taken as `&T`), or a forward output: `result` (one output) or
///   `result_0`, `result_1`, .. Only what is named is saved: tensor inputs with
///   `SavedTensor::input` (version-checked when unpacked, so an in-place change after the
///   forward is reported), outputs with `SavedTensor::output` (no reference cycle), attributes
///   by value. An attribute whose type borrows cannot be saved.
/// * **It returns one gradient per `&Tensor` input**, in order: `Tensor` or `Option<Tensor>`
///   (`None`: no gradient, which stays undefined), a tuple for several, optionally in a
///   `Result` whose error converts into `autograd::Error` (an `Err` stops the backward pass and
///   reaches the caller of `backward()` unchanged; a panic becomes `Error::Panic`).
/// * It runs with grad mode = `create_graph`, so a backward written with tensor ops is itself
///   differentiable (double backward), unless the forward is `once_differentiable`.
/// * The types of the forward's parameters must resolve where the backward is (put it in the
///   same module, or import them).
///
/// # Equivalent code without `#[backward]`
///
/// See [`macro@differentiable`]: the backward contributes the node struct, its `Backward` impl and
/// the recording function.
#[proc_macro_attribute]
pub fn backward(args: TokenStream, item: TokenStream) -> TokenStream {
    backward::expand(args.into(), item.into()).into()
}

/// Receives a forward's options and signature (from its signature macro) together with a
/// backward's path and signature, checks them against each other and emits the node. Not a
/// public API.
#[doc(hidden)]
#[proc_macro]
pub fn __check_backward(input: TokenStream) -> TokenStream {
    backward::check(input.into()).into()
}
