//! What the node keeps: the fields `record_node`'s `make` fills (saved tensors through the
//! `SaveContext`, attributes, residuals), the attributes cloned for it and the checks on their
//! types, and the versions inputs are saved at.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::ext::IdentExt;

use super::super::aliases::{param_type, residual_type};
use super::super::slots::{SlotKind, borrowed_target};
use super::LinkPlan;

impl LinkPlan<'_> {
    /// `let x_attr = x.clone();`: each saved attribute, copied before the forward consumes it.
    pub(super) fn attr_clones(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Attr { ident, ty, .. } => {
                    let local = format_ident!("{}_attr", s.field);
                    Some(match borrowed_target(ty) {
                        Some(_) => {
                            quote_spanned!(loc=> let #local = ::std::borrow::ToOwned::to_owned(#ident);)
                        }
                        None => {
                            quote_spanned!(loc=> let #local = ::core::clone::Clone::clone(&#ident);)
                        }
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// `field: value` of each of the node's fields. Tensors are saved through the
    /// `SaveContext` `record_node` passes (`__save`), which notes a pack hook that modifies its
    /// input.
    pub(super) fn inits(&self) -> Vec<TokenStream> {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        let save = quote_spanned!(loc=> __save);
        self.slots.iter().filter(|s| s.has_field()).map(|s| {
            let field = &s.field;
            let init = match s.kind {
                SlotKind::Input { ident, slice: true, .. } => {
                    quote_spanned!(loc=> #ident.iter().map(|__t| #save.input(__t)).collect())
                }
                SlotKind::Input { original: true, .. } => {
                    let local = format_ident!("{}_original", s.field);
                    if s.needed_local().is_some() {
                        quote_spanned!(loc=> #local.as_ref().map(|__t| #save.input(__t)))
                    } else {
                        quote_spanned!(loc=> #save.input(&#local))
                    }
                }
                SlotKind::Input { ident, optional: true, .. } => {
                    quote_spanned!(loc=> ::core::option::Option::map(#ident, |__t| #save.input(__t)))
                }
                SlotKind::Input { ident, dirty: false, .. } if !self.dirty.is_empty() => {
                    let local = format_ident!("{}_version", s.field);
                    quote_spanned!(loc=> #save.input_at(#ident, #local))
                }
                SlotKind::Input { ident, dirty: false, .. } => quote_spanned!(loc=> #save.input(#ident)),
                SlotKind::Input { ident, dirty: true, .. } => {
                    let pos = format_ident!("__dirty_{}", ident.unraw(), span = loc);
                    let nr = self.output_nr(quote_spanned!(loc=> #ident), quote_spanned!(loc=> #pos));
                    quote_spanned!(loc=> #save.output(#ident, #nr))
                }
                SlotKind::Metadata { ident, slice: false } => {
                    quote_spanned!(loc=> #krate::__private::InputMetadata::of(#ident))
                }
                SlotKind::Metadata { ident, slice: true } => {
                    quote_spanned!(loc=> #ident.iter().map(#krate::__private::InputMetadata::of).collect())
                }
                SlotKind::Attr { .. } => {
                    let local = format_ident!("{}_attr", s.field);
                    quote_spanned!(loc=> #local)
                }
                SlotKind::Residual { index, tensor: true, .. } => {
                    let r = format_ident!("__res{}", index, span = loc);
                    let outputs = if self.fwd.output.vec {
                        let out = &outs[0];
                        quote_spanned!(loc=> &#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>())
                    } else {
                        quote_spanned!(loc=> &[#(&#outs),*])
                    };
                    quote_spanned!(loc=> #save.residual(&#r, #outputs))
                }
                SlotKind::Residual { index, .. } => {
                    let r = format_ident!("__res{}", index, span = loc);
                    quote_spanned!(loc=> #r)
                }
                SlotKind::Output { vec: true, .. } => {
                    let out = &outs[0];
                    let nr = if self.builtin {
                        quote_spanned!(loc=> __i)
                    } else {
                        quote_spanned!(loc=> #out.iter().rposition(|__e| __e.is_same(__o)).unwrap_or(__i))
                    };
                    quote_spanned!(loc=> #out.iter().enumerate()
                        .map(|(__i, __o)| #save.output(__o, #nr))
                        .collect())
                }
                SlotKind::Output { index, differentiable: true, .. } => {
                    let out = &outs[index];
                    let nr = self.output_nr(quote_spanned!(loc=> &#out), quote_spanned!(loc=> #index));
                    quote_spanned!(loc=> #save.output(&#out, #nr))
                }
                SlotKind::Output { index, differentiable: false, .. } => {
                    let out = &outs[index];
                    quote_spanned!(loc=> #save.input(&#out))
                }
                SlotKind::NeedsInputGrad { .. } => unreachable!("invariant: filtered by has_field"),
            };
            // `#[needed_for]`: saved only when needed (the originals and optional inputs are
            // already `Option`s).
            let init = match (s.needed_local(), &s.kind) {
                (Some(needed), SlotKind::Input { optional: true, .. }) => {
                    quote_spanned! {loc=>
                        if #needed { #init } else { ::core::option::Option::None }
                    }
                }
                (Some(needed), kind) if !matches!(kind, SlotKind::Input { original: true, .. }) => {
                    quote_spanned! {loc=>
                        if #needed { ::core::option::Option::Some(#init) } else { ::core::option::Option::None }
                    }
                }
                _ => init,
            };
            quote_spanned!(loc=> #field: #init)
        }).collect()
    }

    /// An op that modifies an input in place saves its other inputs at the version they have
    /// before it runs, as PyTorch saves inputs before calling the kernel: an operand that
    /// aliases the modified tensor (`y.mul_(&y.detach())`) then fails the version check in
    /// backward.
    pub(super) fn saved_versions(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Input {
                    ident,
                    dirty: false,
                    original: false,
                    optional: false,
                    slice: false,
                    ..
                } if !self.dirty.is_empty() && s.has_field() => {
                    let local = format_ident!("{}_version", s.field);
                    Some(quote_spanned!(loc=> let #local: u64 = #ident.version();))
                }
                _ => None,
            })
            .collect()
    }

    /// Each saved attribute is owned by the node, which the engine may run on another thread:
    /// rustc checks that on the attribute's type as the forward writes it.
    pub(super) fn attr_asserts(&self) -> TokenStream {
        let (krate, fwd_path, fwd) = (&self.krate, self.fwd_path, self.fwd);
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Attr { ty, index, .. } => {
                    let at = Span::mixed_site().located_at(syn::spanned::Spanned::span(ty));
                    Some(match borrowed_target(ty) {
                        Some(_) => {
                            let x = param_type(fwd_path, fwd, index, true);
                            quote_spanned!(at=>
                                #krate::__private::assert_attribute::<<#x as ::std::borrow::ToOwned>::Owned>();
                            )
                        }
                        None => {
                            let ty = param_type(fwd_path, fwd, index, false);
                            quote_spanned!(at=> #krate::__private::assert_attribute::<#ty>();)
                        }
                    })
                }
                SlotKind::Residual { tensor: true, .. } => None,
                SlotKind::Residual { index, .. } => {
                    let ty = fwd.residuals[index].ty;
                    let at = Span::mixed_site().located_at(syn::spanned::Spanned::span(ty));
                    let ty = residual_type(fwd_path, fwd, index);
                    Some(quote_spanned!(at=> #krate::__private::assert_attribute::<#ty>();))
                }
                _ => None,
            })
            .collect()
    }
}
