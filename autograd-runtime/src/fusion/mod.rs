//! Fusion: a derived function as one kernel each way. When every op of a
//! `#[differentiable(derive)]` body is element-wise, the macro also describes the body as a
//! [`Program`]; the derived forward then asks [`forward`] for its result and the values its
//! backward keeps, and the derived backward asks [`backward`] for the inputs' gradients, before
//! running the body op by op. Each builds a straight-line `GeneratedKernel`
//! (`backend/generated.rs`), cached per program and per pattern of what is wanted, and runs it
//! in one pass (one launch on a CUDA device). Anything the kernels do not cover returns
//! `Ok(None)`, and the caller runs the ops one by one as before: tensors of different shapes
//! (broadcasting), mixed dtypes or devices, a backward that records a graph (`create_graph`), a
//! gradient arriving at a kept value (double backward), or a value the backward would need that
//! the forward did not keep.
//!
//! The node is the same either way: the forward keeps the same values (as themselves, stand-ins
//! or empties, decided by the derivative rules' `reads`), so saving, version checks and double
//! backward do not depend on which path ran.
//!
//! Both devices run the kernels by default: a CUDA device as CUDA C++ compiled by NVRTC (one
//! launch each way), the CPU in cache-sized blocks with the element functions of its op-by-op
//! kernels, which gives the op-by-op path's bits (`backend/cpu/generated.rs`).
//! [`set_enabled`] and [`run_on_host`] turn fusion off, everywhere or on the host, for
//! benchmarks and tests that compare the two paths.
//!
//! # Names
//!
//! "Fusion" here is only this: derived bodies compiled into generated kernels (the macro reaches
//! it as `__private::fusion`). Two other things are not it: a built-in op's backward formula in
//! one pass is a `GradFormula` kernel (`backend/op.rs`, `#[backward(f, formula = ..)]`), and
//! PyTorch's `fused=True` optimizer steps are `Backend::fused_step` (`optim/fused_step.rs`, `StepTensors`).
//! `backend/README.md` lists all three.
//!
//! # Layout
//!
//! * `program.rs`: the IR the macro writes: [`Program`], one [`Var`] per body value,
//!   [`Elementwise`] ops.
//! * `switches.rs`: [`set_enabled`], [`run_on_host`], [`runs`], [`fuses_on`].
//! * `emitter.rs`: straight-line code, one register per instruction, and each op's forward
//!   formula.
//! * `plan.rs`: a kernel with what its arguments are, cached per program and pattern of what a
//!   call wants.
//! * `forward_plan.rs`: the forward's plan, the wanted values in one pass.
//! * `backward_plan.rs`: the backward's plan, reverse mode in registers, values loaded or
//!   recomputed; `gradients.rs`: its gradient rules, one function per rule.
//! * `runner.rs`: the entry points [`forward`] and [`backward`] (check, plan, run).
//! * `tests.rs`: the plans' kernels against the formulas, and their printed CUDA C++ run on the
//!   host (with the backend's sample runners, `backend/generated/samples.rs`).

mod backward_plan;
mod emitter;
mod forward_plan;
mod gradients;
mod plan;
mod program;
mod runner;
mod switches;
#[cfg(test)]
mod tests;

use program::reduction_used;
pub use program::{Elementwise, Program, Var};

pub use runner::{backward, forward, keep_value, take_value};
pub use switches::{fuses_on, run_on_host, runs, set_enabled};
