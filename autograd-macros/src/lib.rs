//! Procedural macros of the `autograd` crate (`#[differentiable]`, `#[backward]`).
