//! B35, the dirty inputs of an in-place forward: the checks before the forward (built-in ops)
//! or after it (custom functions), the version bump, the `#[original]` copies, which outputs are
//! dirty inputs, and the rebase of a dirty view onto its base's history.

use proc_macro2::TokenStream;
use quote::{format_ident, quote_spanned};

use super::super::slots::SlotKind;
use super::LinkPlan;
use crate::ir::ParamKind;

impl LinkPlan<'_> {
    /// B35: a dirty input must come back as an output (the same handle), may not be a leaf that
    /// requires grad, and may not be a view (its base's history cannot be rewritten). Built-in
    /// ops check first, whenever grad mode is on, with the built-in errors, so that a refused op
    /// changes nothing (PyTorch's `check_inplace`); custom functions check after the forward
    /// ([`Self::dirty_checks`]), as PyTorch's `mark_dirty` does.
    pub(super) fn dirty_prechecks(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| self.builtin)
            .map(|(input, _)| {
                let ident = input.ident;
                let others = self.fwd.tensor_inputs().filter(|p| p.ident != ident).map(|p| {
                    let other = p.ident;
                    if p.optional {
                        quote_spanned!(loc=> || #other.is_some_and(#krate::Tensor::requires_grad))
                    } else if matches!(p.kind, ParamKind::Tensors(_)) {
                        quote_spanned!(loc=> || #other.iter().any(#krate::Tensor::requires_grad))
                    } else {
                        quote_spanned!(loc=> || #other.requires_grad())
                    }
                });
                let check = self.try_(quote_spanned!(loc=>
                    #krate::__private::check_inplace(#ident, false #(#others)*)
                ));
                quote_spanned!(loc=> #check;)
            })
            .collect()
    }

    /// After the forward: where each dirty input is among the outputs, and (custom functions)
    /// the rest of B35's checks.
    pub(super) fn dirty_checks(&self) -> TokenStream {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        self.dirty
            .iter()
            .map(|(input, pos)| {
                let input = input.ident;
                let not_returned = self.err(quote_spanned!(loc=> #krate::Error::msg(
                    "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function."
                )));
                let find = quote_spanned! {loc=>
                    let #pos: usize = match [#(&#outs),*].iter().position(|__o| __o.is_same(#input)) {
                        ::core::option::Option::Some(__i) => __i,
                        ::core::option::Option::None => { #not_returned }
                    };
                };
                if self.builtin {
                    return find;
                }
                let check = self.try_(quote_spanned!(loc=> #krate::__private::check_dirty(#input)));
                quote_spanned! {loc=>
                    #find
                    #check;
                }
            })
            .collect()
    }

    /// PyTorch's `mark_dirty` bumps each dirty input's version once more after a custom
    /// function's forward, recorded or not.
    pub(super) fn mark_dirty(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| !self.builtin)
            .map(|(input, _)| {
                let input = input.ident;
                quote_spanned!(loc=> #krate::__private::mark_dirty(#input);)
            })
            .collect()
    }

    /// A dirty view moves the node into its base's history (CopySlices) right after it is
    /// recorded, before anything (a forward derivative rule) reads the view's grad_fn.
    pub(super) fn rebases(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        let rebase = if self.builtin {
            quote_spanned!(loc=> rebase_inplace_view)
        } else {
            quote_spanned!(loc=> rebase_dirty_view)
        };
        self.dirty
            .iter()
            .map(|(input, _)| {
                let input = input.ident;
                let r =
                    self.try_(quote_spanned!(loc=> #krate::__private::#rebase(#input, &__node)));
                quote_spanned!(loc=> #r;)
            })
            .collect()
    }

    /// `#[original]`: a copy of a dirty input taken before the forward modifies it (PyTorch's
    /// `original_self`), differentiable so that a `create_graph` pass reaches the old history,
    /// with the input's tangent from before the write (`forward_ad::original`).
    pub(super) fn originals(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.slots
            .iter()
            .filter_map(|s| {
                let SlotKind::Input {
                    ident,
                    original: true,
                    ..
                } = s.kind
                else {
                    return None;
                };
                let local = format_ident!("{}_original", s.field);
                let copy =
                    self.try_(quote_spanned!(loc=> #krate::__private::forward_ad::original(#ident)));
                Some(match s.needed_local() {
                    Some(needed) => quote_spanned! {loc=>
                        let #local: ::core::option::Option<#krate::Tensor> =
                            if #needed { ::core::option::Option::Some(#copy) } else { ::core::option::Option::None };
                    },
                    None => quote_spanned!(loc=> let #local: #krate::Tensor = #copy;),
                })
            })
            .collect()
    }

    /// `let __is_dirty{j}: bool = ..;`: whether output `j` is a dirty input (custom functions;
    /// nothing for built-in ops and `Vec<Tensor>` forwards). Recorded, from the positions the
    /// dirty checks found; unrecorded (nothing was checked), by comparing handles.
    pub(super) fn dirty_flags(&self, recorded: bool) -> Option<TokenStream> {
        let (loc, outs) = (self.linked.loc, &self.outs);
        if self.builtin || self.fwd.output.vec {
            return None;
        }
        let flags = outs.iter().enumerate().map(|(j, out)| {
            let is_dirty = format_ident!("__is_dirty{}", j, span = loc);
            let value = if recorded {
                let positions = self.dirty.iter().map(|(_, pos)| pos);
                quote_spanned!(loc=> false #(|| #positions == #j)*)
            } else {
                let inputs = self.dirty.iter().map(|(input, _)| input.ident);
                quote_spanned!(loc=> false #(|| #inputs.is_same(&#out))*)
            };
            quote_spanned!(loc=> let #is_dirty: bool = #value;)
        });
        Some(flags.collect())
    }
}
