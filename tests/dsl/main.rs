//! The DSL: `#[differentiable]` / `#[backward]` functions, the `impl` form, derived backwards,
//! and the compile-time checks (trybuild cases under `tests/ui/` and `tests/pass/`).

mod custom_function;
mod derive;
mod impl_form;
mod ui;
