//! # autograd
//!
//! PyTorch's autograd engine, rebuilt in Rust, with a proc-macro DSL for declaring differentiable
//! functions.
//!
//! * [`Tensor`]: an n-dimensional `f32`/`f64` array that records the ops applied to it.
//! * [`Tensor::backward`], [`backward()`] and [`grad`]: run the backward engine — `GraphTask`,
//!   `NodeTask`, a priority `ReadyQueue`, dependency counting, `InputBuffer` summation — with
//!   PyTorch's semantics: hooks, `retain_graph`, `create_graph` (double backward), selective
//!   execution for `grad()`, anomaly mode, final callbacks.
//! * [`gradcheck()`] / [`gradgradcheck()`]: check gradients against finite differences.
//! * [`viz::to_dot`]: the backward graph as Graphviz DOT (torchviz's picture);
//!   [`profiler::profile`]: the autograd profiler, with a `key_averages()` table and a Chrome
//!   trace; with the cargo feature `tracing`, `tracing` spans per backward pass and per node.
//! * CPU kernels split over [`num_threads`] threads ([`set_num_threads`], PyTorch's
//!   `torch.set_num_threads`) with transcendental functions on SIMD lanes; large buffers are
//!   reused between steps ([`empty_cache`], [`set_cache_limit`]).
//!
//! ```
//! use autograd::{Tensor, DType};
//! let w = Tensor::randn_seeded(&[3, 2], DType::F64, 0)?.requires_grad_(true)?;
//! let x = Tensor::ones(&[4, 3], DType::F64)?;
//! let loss = x.matmul(&w)?.tanh()?.pow(2.0)?.mean()?;
//! loss.backward()?;
//! assert_eq!(w.grad().unwrap().shape(), &[3, 2]);
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! # Custom differentiable functions
//!
//! [`macro@differentiable`] turns a plain Rust function into a differentiable op, and
//! [`macro@backward`] gives it its gradient (PyTorch's `torch.autograd.Function`). `&Tensor`
//! parameters are the differentiable inputs, other parameters are attributes. The backward takes
//! the incoming gradient(s) first, then names whatever it needs from the forward (its parameters,
//! or its output as `result`): exactly that is saved, tensors with version tracking. It returns one
//! gradient per `&Tensor` input. The compiler checks the pair against each other.
//!
//! ```
//! use autograd::{backward, differentiable, gradcheck, Tensor};
//!
//! #[differentiable]
//! fn scaled_square(x: &Tensor, scale: f64) -> Tensor {
//!     x * x * scale // runs with graph recording off
//! }
//!
//! #[backward(scaled_square)]
//! fn scaled_square_backward(grad: &Tensor, x: &Tensor, scale: f64) -> Tensor {
//!     grad * x * (2.0 * scale) // names `x` and `scale`: both are saved
//! }
//!
//! let x = Tensor::from_vec(vec![1.0f64, -2.0], &[2])?.requires_grad_(true)?;
//! let y = scaled_square(&x, 3.0);
//! assert_eq!(y.grad_fn().unwrap().name(), "ScaledSquareBackward0");
//! y.sum()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [6.0, -12.0]);
//! gradcheck(|i| Ok(scaled_square(&i[0], 3.0)), &[x])?;
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! Several outputs are a tuple, with gradients `grad_0`, `grad_1`, .. and saved outputs
//! `result_0`, `result_1`, ..; a forward or backward may return a `Result`, and a gradient may be
//! `None`. The backward runs with grad mode = `create_graph`, so one written with tensor ops is
//! itself differentiable:
//!
//! ```
//! use autograd::{backward, differentiable, BackwardOptions, Result, Tensor};
//!
//! #[differentiable]
//! fn exp_and_square(x: &Tensor, y: &Tensor) -> Result<(Tensor, Tensor)> {
//!     Ok((x.exp()?, y.mul(y)?))
//! }
//!
//! #[backward(exp_and_square)]
//! fn exp_and_square_backward(
//!     grad_0: &Tensor,
//!     grad_1: &Tensor,
//!     y: &Tensor,
//!     result_0: &Tensor,
//! ) -> Result<(Tensor, Option<Tensor>)> {
//!     Ok((grad_0.mul(result_0)?, Some(grad_1.mul(y)?.mul_scalar(2.0)?)))
//! }
//!
//! let x = Tensor::scalar(0.0f64).requires_grad_(true)?;
//! let y = Tensor::scalar(3.0f64).requires_grad_(true)?;
//! let (e, s) = exp_and_square(&x, &y)?;
//! e.add(&s)?.backward_with(BackwardOptions::new().create_graph(true))?;
//! let gy = y.grad().unwrap();
//! assert_eq!(gy.item::<f64>()?, 6.0);
//! y.set_grad(None)?;
//! gy.backward()?; // d(2y)/dy
//! assert_eq!(y.grad().unwrap().item::<f64>()?, 2.0);
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! Options cover PyTorch's custom-function features: `name = ".."` (node name),
//! `once_differentiable`, `materialize_grads = false`, `non_differentiable(result_1)`, `dirty(x)`
//! (in-place inputs), `builtin` (built-in node semantics) and `crate = ".."`; see
//! [`macro@differentiable`].
//!
//! ```
//! use autograd::{backward, differentiable, Error, GradOptions, Result, Tensor};
//!
//! /// Adds one to `x` in place and returns it (PyTorch's `ctx.mark_dirty`).
//! #[differentiable(dirty(x), name = "AddOneInPlace")]
//! fn add_one_(x: &Tensor) -> Result<Tensor> {
//!     x.add_(&Tensor::scalar(1.0f64))?;
//!     Ok(x.clone())
//! }
//!
//! #[backward(add_one_)]
//! fn add_one_backward(grad: &Tensor) -> Tensor {
//!     grad.clone()
//! }
//!
//! let leaf = Tensor::scalar(1.0f64).requires_grad_(true)?;
//! let h = leaf.mul_scalar(2.0)?;
//! let out = add_one_(&h)?;
//! assert!(out.is_same(&h) && h.version() == 2); // the `add_`, then `mark_dirty`'s bump
//! assert_eq!(h.grad_fn().unwrap().name(), "AddOneInPlace");
//! out.backward()?;
//! assert_eq!(leaf.grad().unwrap().item::<f64>()?, 2.0);
//! // A leaf that requires grad cannot be modified in place.
//! assert!(add_one_(&leaf).is_err());
//!
//! /// Its gradient cannot be differentiated again (PyTorch's `@once_differentiable`).
//! #[differentiable(once_differentiable)]
//! fn cube(x: &Tensor) -> Tensor {
//!     x * x * x
//! }
//!
//! #[backward(cube)]
//! fn cube_backward(grad: &Tensor, x: &Tensor) -> Tensor {
//!     grad * x * x * 3.0
//! }
//!
//! let y = cube(&leaf);
//! let g = autograd::grad(&[y.mul(&y)?], &[leaf], GradOptions::new().create_graph(true))?;
//! let err = g[0].as_ref().unwrap().backward().unwrap_err();
//! assert!(matches!(err, Error::OnceDifferentiable));
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! A backward can also take what PyTorch's `derivatives.yaml` formulas use: `needs_input_grad`
//! (which input gradients are wanted), an input's [`InputMetadata`](graph::InputMetadata) (shape,
//! dtype, device) instead of its data, and a tensor saved only when another input needs its
//! gradient (`#[needed_for(..)]`, an `Option<&Tensor>`). A forward may take a slice of tensors
//! (`&[Tensor]`, one gradient each, returned as a `Vec`) or return a `Vec<Tensor>` (its backward
//! takes `grad: &[Tensor]`). The op library itself is declared this way, with the `builtin`
//! option for PyTorch's built-in node semantics.
//!
//! ```
//! use autograd::graph::InputMetadata;
//! use autograd::{backward, differentiable, Result, Tensor};
//!
//! /// `a * b`, saving each operand only if the other one needs its gradient.
//! #[differentiable]
//! fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
//!     a.mul(b)
//! }
//!
//! #[backward(product)]
//! fn product_backward(
//!     grad: &Tensor,
//!     #[needed_for(b)] a: Option<&Tensor>,
//!     #[needed_for(a)] b: Option<&Tensor>,
//! ) -> Result<(Option<Tensor>, Option<Tensor>)> {
//!     Ok((b.map(|b| grad.mul(b)).transpose()?, a.map(|a| grad.mul(a)).transpose()?))
//! }
//!
//! let w = Tensor::scalar(3.0f64).requires_grad_(true)?;
//! let h = w.mul_scalar(1.0)?;
//! let y = product(&h, &Tensor::scalar(2.0f64))?;
//! h.add_(&Tensor::scalar(1.0f64))?; // `h` was not saved: only its own gradient is needed
//! y.backward()?;
//! assert_eq!(w.grad().unwrap().item::<f64>()?, 2.0);
//!
//! /// Concatenates 1-d tensors; the backward keeps only their lengths.
//! #[differentiable]
//! fn concat(parts: &[Tensor]) -> Result<Tensor> {
//!     Tensor::cat(parts, 0)
//! }
//!
//! #[backward(concat)]
//! fn concat_backward(
//!     grad: &Tensor,
//!     needs_input_grad: &[bool],
//!     parts: &[InputMetadata],
//! ) -> Result<Vec<Option<Tensor>>> {
//!     let mut start = 0;
//!     let mut grads = Vec::new();
//!     for (part, &needed) in parts.iter().zip(needs_input_grad) {
//!         let len = part.shape()[0];
//!         grads.push(if needed { Some(grad.narrow(0, start, len)?) } else { None });
//!         start += len;
//!     }
//!     Ok(grads)
//! }
//!
//! /// Splits a 1-d tensor in two: any number of outputs, as a `Vec`.
//! #[differentiable]
//! fn halves(x: &Tensor) -> Result<Vec<Tensor>> {
//!     x.chunk(2, 0)
//! }
//!
//! #[backward(halves)]
//! fn halves_backward(grad: &[Tensor]) -> Result<Tensor> {
//!     Tensor::cat(grad, 0)
//! }
//!
//! let a = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
//! let b = Tensor::from_vec(vec![3.0f64], &[1])?;
//! let c = concat(&[a.clone(), b])?;
//! let parts = halves(&c)?;
//! assert_eq!(parts[1].grad_fn().unwrap().name(), "HalvesBackward0");
//! parts[0].mul_scalar(10.0)?.sum()?.add(&parts[1].sum()?)?.backward()?;
//! assert_eq!(a.grad().unwrap().to_vec::<f64>()?, [10.0, 10.0]);
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! An `Option<&Tensor>` parameter is an optional input (PyTorch's `bias=None`): one next edge,
//! `None` when the input is absent. The backward receives it as `Option<&Tensor>` and returns
//! its gradient as `Option<Tensor>`. Borrowed attributes (`&[usize]`, `&str`) are copied only
//! when a node is recorded:
//!
//! ```
//! use autograd::{backward, differentiable, Result, Tensor};
//!
//! #[differentiable]
//! fn shift(x: &Tensor, bias: Option<&Tensor>, dims: &[usize]) -> Result<Tensor> {
//!     let y = x.sum_dims(dims, false)?;
//!     match bias {
//!         Some(b) => y.add(b),
//!         None => Ok(y),
//!     }
//! }
//!
//! #[backward(shift)]
//! fn shift_backward(
//!     grad: &Tensor,
//!     x: &Tensor,
//!     bias: Option<&Tensor>,
//!     dims: &[usize],
//! ) -> Result<(Tensor, Option<Tensor>)> {
//!     let gx = grad.reshape(&[grad.numel(), 1])?.expand(x.shape())?;
//!     assert_eq!(dims, [1]);
//!     Ok((gx, bias.map(|_| grad.clone())))
//! }
//!
//! let x = Tensor::ones(&[2, 3], autograd::DType::F64)?.requires_grad_(true)?;
//! let b = Tensor::from_vec(vec![10.0f64, 20.0], &[2])?.requires_grad_(true)?;
//! let with_bias = shift(&x, Some(&b), &[1])?;
//! assert_eq!(with_bias.to_vec::<f64>()?, [13.0, 23.0]);
//! with_bias.sum()?.backward()?;
//! assert_eq!(b.grad().unwrap().to_vec::<f64>()?, [1.0, 1.0]);
//! let without = shift(&x, None, &[1])?;
//! assert!(without.grad_fn().unwrap().next_functions()[1].is_none());
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! State computed in the forward for the backward (PyTorch's `ctx.save_for_backward` of an
//! intermediate, or `ctx.attr = ..`) is named in `save(..)`: the body returns its output(s)
//! followed by those residuals, the function returns the output only, and the backward names
//! them like saved parameters:
//!
//! ```
//! use autograd::{backward, differentiable, Result, Tensor};
//!
//! /// The largest element, remembering where it was.
//! #[differentiable(save(argmax))]
//! fn max_of(x: &Tensor) -> Result<(Tensor, usize)> {
//!     let v = x.to_vec::<f64>()?;
//!     let argmax = (0..v.len()).fold(0, |best, i| if v[i] > v[best] { i } else { best });
//!     Ok((Tensor::scalar(v[argmax]), argmax))
//! }
//!
//! #[backward(max_of)]
//! fn max_of_backward(grad: &Tensor, x: &Tensor, argmax: usize) -> Result<Tensor> {
//!     let mut g = vec![0.0; x.numel()];
//!     g[argmax] = grad.item::<f64>()?;
//!     Tensor::from_vec(g, x.shape())
//! }
//!
//! let x = Tensor::from_vec(vec![1.0f64, 4.0, 2.0], &[3])?.requires_grad_(true)?;
//! let m: Tensor = max_of(&x)?;
//! m.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [0.0, 1.0, 0.0]);
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! ## Derived backward: `#[differentiable(derive)]`
//!
//! For a straight-line body (`let`s, tensor methods, operators, scalar arithmetic, `?`, calls of
//! other `#[differentiable]` functions), the
//! macro derives the backward itself: each op's rule (`DerivativeRules`, declared beside the op)
//! applied in reverse order. A call records one node, `<CamelName>Backward0`, instead of one per
//! op; each rule declares what it reads, and the node keeps exactly that (no more than the
//! op-by-op graph would save), version-checked. A loop, a branch, a closure, a mutation or an
//! in-place method is a compile error pointing at it.
//!
//! ```
//! use autograd::{differentiable, Result, Tensor};
//!
//! /// `tanh(x @ w + b)`: one `DenseBackward0` node per call.
//! #[differentiable(derive)]
//! fn dense(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
//!     let h = x.matmul(w)? + b;
//!     h.tanh()
//! }
//!
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
//! let w = Tensor::from_vec(vec![0.5f64, -0.5], &[2, 1])?;
//! let b = Tensor::from_vec(vec![0.1f64], &[1])?;
//! w.set_requires_grad(true)?;
//! let y = dense(&x, &w, &b)?;
//! assert_eq!(y.grad_fn().unwrap().name(), "DenseBackward0");
//! y.sum()?.backward()?;
//! let t = (0.5f64 - 1.0 + 0.1).tanh();
//! let g = w.grad().unwrap().to_vec::<f64>()?;
//! assert!((g[0] - (1.0 - t * t)).abs() < 1e-12 && (g[1] - 2.0 * (1.0 - t * t)).abs() < 1e-12);
//! # Ok::<(), autograd::Error>(())
//! ```
//!
//! `examples/derive_side_by_side.rs` writes GELU derived, with a hand-written `#[backward]`, and
//! op by op, and compares their gradients, nodes, saved tensors and speed.

pub use autograd_runtime::*;

pub use autograd_macros::{backward, differentiable, jvp};

/// Reached by the code `#[differentiable]` generates, to check a `#[backward]` against its
/// forward. Not a public API.
#[doc(hidden)]
pub use autograd_macros::{__check_backward, __check_jvp};

/// The README's examples, compiled and run as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
