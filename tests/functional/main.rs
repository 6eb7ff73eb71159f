//! `autograd::functional` (issue 37): `vjp`, `jvp`, `jacobian`, `hessian`, `hvp` and `vhp`
//! against PyTorch 2.15's `torch.autograd.functional`. `functional_values.py` (beside this file)
//! recorded `data/functional.json`: the values of the six functions on four f64 functions (exp,
//! a small tanh MLP, two inputs and two outputs, an unused input), the gradients through their
//! results with `create_graph=True`, and PyTorch's error messages; `values.rs` and `errors.rs`
//! replay them, `semantics.rs` checks what PyTorch's implementation does to its arguments; `func.rs` checks
//! `autograd::func` (`torch.func`'s transforms) against values PyTorch printed.

mod errors;
mod func;
mod recorded;
mod semantics;
mod values;

use std::sync::{Mutex, MutexGuard};

/// Forward mode has one dual level for the whole process: the tests that open one take turns.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
