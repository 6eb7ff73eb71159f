//! The DSL: `#[differentiable]` / `#[backward]` functions, the `impl` form and derived backwards.
//! Its compile-time checks (trybuild) are the macro crate's: `autograd-macros/tests/ui.rs`.

mod custom_function;
mod derive;
mod impl_form;
