//! # autograd
//!
//! PyTorch's autograd engine, rebuilt in Rust, with a proc-macro DSL for declaring differentiable
//! functions.
//!
//! * [`Tensor`]: an n-dimensional `f32`/`f64` array that records the ops applied to it.
//! * [`Tensor::backward`], [`backward`] and [`grad`]: run the backward engine — `GraphTask`,
//!   `NodeTask`, a priority `ReadyQueue`, dependency counting, `InputBuffer` summation — with
//!   PyTorch's semantics: hooks, `retain_graph`, `create_graph` (double backward), selective
//!   execution for `grad()`, anomaly mode, final callbacks.
//! * [`gradcheck`] / [`gradgradcheck`]: check gradients against finite differences.
//!
//! ```
//! use autograd::{Tensor, DType};
//! let w = Tensor::randn(&[3, 2], DType::F64, 0)?.requires_grad_(true)?;
//! let x = Tensor::ones(&[4, 3], DType::F64)?;
//! let loss = x.matmul(&w)?.tanh()?.pow(2.0)?.mean()?;
//! loss.backward()?;
//! assert_eq!(w.grad().unwrap().shape(), &[3, 2]);
//! # Ok::<(), autograd::Error>(())
//! ```

pub use autograd_runtime::*;

/// The README's examples, compiled and run as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
