//! The recording: the outputs the node is recorded for, and `record_node` itself, with where
//! rustc reports a forward error type that does not convert from `Error`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};

use super::super::slots::{Slot, SlotKind};
use super::LinkPlan;
use crate::ir::DiffFn;

impl LinkPlan<'_> {
    /// The outputs the node is recorded for, as a `&[&Tensor]` expression, and the statement
    /// that builds it for a `Vec<Tensor>` forward.
    pub(super) fn record_refs(&self) -> (TokenStream, TokenStream) {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        if self.fwd.output.vec {
            let out = &outs[0];
            return (
                quote_spanned!(loc=> &__refs),
                quote_spanned! {loc=>
                    let __refs: ::std::vec::Vec<&#krate::Tensor> = #out.iter().collect();
                },
            );
        }
        let refs = outs.iter().zip(&self.non_diff).map(|(out, nd)| {
            if *nd {
                let alias = format_ident!("{}_alias", out);
                quote_spanned!(loc=> &#alias)
            } else {
                quote_spanned!(loc=> &#out)
            }
        });
        (quote_spanned!(loc=> &[#(#refs),*]), TokenStream::new())
    }

    /// `let __node = record_node(..);`. A pack hook that modifies its input fails the call, as
    /// in PyTorch, when the forward can return the error: its error type then converts from
    /// `Error` (rustc checks that, on the forward's return type). A forward returning a bare
    /// tensor leaves it to the backward.
    pub(super) fn record(&self, record_refs: &TokenStream) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        let inits = self.inits();
        let make = quote_spanned!(loc=> |__save| __AutogradNode { #(#inits,)* });
        // A node that may save an output packs it under saved-tensor hooks once it is the
        // output's grad_fn (`finish_output_packs`).
        let saves_output = self.slots.iter().any(|s| {
            matches!(
                s.kind,
                SlotKind::Output {
                    differentiable: true,
                    ..
                } | SlotKind::Input { dirty: true, .. }
                    | SlotKind::Residual { tensor: true, .. }
            )
        });
        let finish = quote_spanned!(loc=> #krate::__private::finish_output_packs(&__node));
        let convert = if self.fwd.output.fallible {
            let at = Span::mixed_site().located_at(error_type_span(self.fwd, loc));
            Some(quote_spanned!(at=> ::core::convert::Into::into(__e)))
        } else {
            None
        };
        let record = match &convert {
            Some(convert) if self.slots.iter().any(Slot::is_tensor) => quote_spanned! {loc=>
                match #krate::__private::try_record_node(__edges, #record_refs, #make) {
                    ::core::result::Result::Ok(__n) => __n,
                    ::core::result::Result::Err(__e) => return ::core::result::Result::Err(#convert),
                }
            },
            // A failure stays in its slot, reported when the tensor is used.
            _ => quote_spanned!(loc=> #krate::__private::record_node(__edges, #record_refs, #make)),
        };
        // A built-in op called on dual inputs records (or only builds) its node through
        // `forward_ad`, which sets the outputs' tangents.
        let record = if self.builtin {
            let fallible = convert.is_some();
            let dual = quote_spanned! {loc=>
                #krate::__private::forward_ad::record_dual(__edges, #record_refs, #make, __d, #fallible)
            };
            let ret_err = match &convert {
                Some(convert) => quote_spanned!(loc=> return ::core::result::Result::Err(#convert)),
                None => {
                    quote_spanned!(loc=> ::core::unreachable!("invariant: an infallible record_dual returns Ok"))
                }
            };
            quote_spanned! {loc=>
                match __dual {
                    ::core::option::Option::None => #record,
                    ::core::option::Option::Some(__d) => match #dual {
                        ::core::result::Result::Ok(__n) => __n,
                        ::core::result::Result::Err(__e) => { #ret_err }
                    },
                }
            }
        } else {
            record
        };
        let finish =
            saves_output.then(
                || match (&convert, self.slots.iter().any(Slot::is_tensor)) {
                    (Some(convert), true) => quote_spanned! {loc=>
                        if let ::core::result::Result::Err(__e) = #finish {
                            return ::core::result::Result::Err(#convert);
                        }
                    },
                    _ => quote_spanned!(loc=> let _ = #finish;),
                },
            );
        quote_spanned! {loc=>
            let __node = #record;
            #finish
        }
    }
}

/// Where rustc reports that the forward's error type does not convert from `Error`: the `E` of
/// `Result<T, E>`, or the whole return type (`Result<T>`, an alias).
pub(super) fn error_type_span(fwd: &DiffFn<'_>, otherwise: Span) -> Span {
    let syn::ReturnType::Type(_, ty) = fwd.output.original else {
        return otherwise;
    };
    if let syn::Type::Path(p) = &**ty
        && let Some(syn::PathArguments::AngleBracketed(args)) =
            p.path.segments.last().map(|s| &s.arguments)
        && let (2, Some(e)) = (args.args.len(), args.args.last())
    {
        return syn::spanned::Spanned::span(e);
    }
    syn::spanned::Spanned::span(&**ty)
}
