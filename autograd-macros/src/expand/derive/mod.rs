//! What `#[differentiable(derive)]` writes in place of a hand-written pair: a hidden forward that
//! runs the lowered body and returns the result followed by what the backward keeps of every
//! value (see `keep`), and a hidden backward that applies each op's `DerivativeRules` entry in
//! reverse order. The two are then expanded exactly as a `#[differentiable]` / `#[backward]`
//! pair (see the crate's `derive.rs`).
//!
//! What is kept of a value is decided by the rules that read it, at compile time: each rule
//! declares what it reads (`Reads`), and the forward keeps the value itself, a one-element
//! stand-in of its shape, or an empty tensor. The kept values are outputs of the node, so they
//! are saved and version-checked like any saved output, and a gradient that reaches one in a
//! double backward (through a rule that read it) flows back into the node, seeded at that value.
//!
//! The pair is planned once (`plan.rs`), then written by concern: the hidden forward
//! (`forward.rs`), the hidden backward (`backward.rs`), the wrapper under the user's name and
//! the rule other derived bodies call it through (`wrapper.rs`), the doc section (`doc.rs`),
//! from the small pieces of `values.rs`.

use proc_macro2::TokenStream;
use quote::format_ident;
use syn::{Ident, ItemFn, Path};

use crate::ir::DiffFn;
use crate::ir::body::Body;

mod backward;
mod doc;
mod forward;
mod plan;
mod values;
mod wrapper;

pub(crate) use values::mentions;

use plan::DerivedPlan;

/// The code of the hidden pair, before it is parsed and expanded.
pub(crate) struct Derived {
    /// `__autograd_f_derived`: returns `(result, kept values..)`.
    pub(crate) forward: TokenStream,
    /// `__autograd_f_derived_backward`.
    pub(crate) backward: TokenStream,
    /// `f` itself: calls the hidden forward and returns its first output.
    pub(crate) wrapper: TokenStream,
    /// `__autograd_f_rule`: how a derived body that calls `f` differentiates the call; then the
    /// checks of the rules the body itself uses (`values::rule_checks`).
    pub(crate) rule: TokenStream,
}

/// The names of the hidden pair.
pub(crate) fn hidden_names(ident: &Ident) -> (Ident, Ident) {
    let base = syn::ext::IdentExt::unraw(ident);
    (
        format_ident!("__autograd_{}_derived", base, span = ident.span()),
        format_ident!("__autograd_{}_derived_backward", base, span = ident.span()),
    )
}

pub(crate) fn derived(
    krate: &Path,
    node: &str,
    fwd: &DiffFn<'_>,
    func: &ItemFn,
    body: &Body,
) -> Derived {
    let plan = DerivedPlan::new(krate, fwd, func, body);
    Derived {
        forward: plan.forward(),
        backward: plan.backward(),
        wrapper: plan.wrapper(node),
        rule: {
            let mut rule = plan.rule();
            rule.extend(values::rule_checks(krate, fwd.ident, body));
            rule
        },
    }
}

#[cfg(test)]
mod tests;
