//! `autograd::functional` (issue 37): `vjp`, `jvp`, `jacobian`, `hessian`, `hvp` and `vhp`
//! against PyTorch 2.15's `torch.autograd.functional`. `functional_values.py` (beside this file)
//! recorded `data/functional.json`: the values of the six functions on four f64 functions (exp,
//! a small tanh MLP, two inputs and two outputs, an unused input), the gradients through their
//! results with `create_graph=True`, and PyTorch's error messages; `values.rs` and `errors.rs`
//! replay them, `semantics.rs` checks what PyTorch's implementation does to its arguments.

mod errors;
mod recorded;
mod semantics;
mod values;
