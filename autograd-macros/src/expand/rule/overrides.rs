//! What the backward's impl of the link trait overrides for the rule: `READS` (what the rule
//! reads of its operands and result) and `derivative` (the backward called with those values,
//! its gradients put in the convention's shape).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

use super::super::slots::{Slot, SlotKind};
use super::{Convention, apply_params, apply_return};
use crate::ir::{BackwardFn, DiffFn, GradType};

/// The backward's overrides: what it names, and the call of the backward with those values.
pub(in crate::expand) fn impl_items(
    loc: Span,
    krate: &Path,
    fwd_path: &Path,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    slots: &[Slot<'_>],
    conv: Convention,
) -> TokenStream {
    RulePlan {
        loc,
        krate,
        fwd_path,
        fwd,
        bwd,
        slots,
        conv,
        inputs: fwd.tensor_inputs().map(|p| p.ident).collect(),
    }
    .items()
}

/// What [`impl_items`] emits from: the pair, the values the node saves and the convention, with
/// the forward's tensor inputs in order. Each part of the overrides is one method.
struct RulePlan<'a> {
    loc: Span,
    krate: &'a Path,
    fwd_path: &'a Path,
    fwd: &'a DiffFn<'a>,
    bwd: &'a BackwardFn<'a>,
    slots: &'a [Slot<'a>],
    conv: Convention,
    /// The forward's tensor inputs: the rule's operands.
    inputs: Vec<&'a Ident>,
}

impl RulePlan<'_> {
    /// `const READS` and `fn derivative`: for a one-operand built-in, called only when the
    /// operand needs a gradient, the one gradient as it is; otherwise one `Option` per operand.
    fn items(&self) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let reads = self.reads();
        let params = apply_params(loc, krate, self.fwd, Some(self.fwd_path), self.conv);
        let ret = apply_return(loc, krate, self.fwd, self.conv);
        let outs = self.outs();
        let call = self.call(&outs);
        if self.conv == Convention::Unary {
            // Called only when the operand needs a gradient: the one gradient, as it is.
            return quote_spanned! {loc=>
                #reads
                #[allow(unused_variables, clippy::all)]
                fn derivative(#params) -> #ret {
                    let __needs: [bool; 1] = [true];
                    #call
                    ::core::result::Result::Ok(#(#outs)*)
                }
            };
        }
        let wrapped = self.wrapped(&outs);
        quote_spanned! {loc=>
            #reads
            #[allow(unused_variables, clippy::all)]
            fn derivative(#params) -> #ret {
                #call
                ::core::result::Result::Ok((#(#wrapped,)*))
            }
        }
    }

    /// `const READS`: what the rule reads of each operand, whether it reads the result, and
    /// the operands whose value is read for one other operand's gradient only.
    fn reads(&self) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let reads = self.inputs.iter().map(|i| self.read(i));
        let value_for = self.value_for();
        let result = self
            .slots
            .iter()
            .any(|s| matches!(s.kind, SlotKind::Output { .. }));
        quote_spanned! {loc=>
            const READS: #krate::__private::Reads = #krate::__private::Reads {
                operands: &[#(#reads),*],
                result: #result,
                value_for: &[#(#value_for),*],
            };
        }
    }

    /// What the rule reads of input `i`: its value or its metadata where the backward names
    /// it, else the least the convention needs.
    fn read(&self, i: &Ident) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let named = self.slots.iter().find_map(|s| match s.kind {
            SlotKind::Input { ident, .. } if ident == i => Some(quote_spanned!(loc=> Value)),
            SlotKind::Metadata { ident, .. } if ident == i => Some(quote_spanned!(loc=> Shape)),
            _ => None,
        });
        // A broadcasting op's gradients are summed down to its operands' shapes.
        let least = if self.conv == Convention::Broadcast {
            quote_spanned!(loc=> Shape)
        } else {
            quote_spanned!(loc=> Nothing)
        };
        let named = named.unwrap_or(least);
        quote_spanned!(loc=> #krate::__private::Read::#named)
    }

    /// Input `i`'s position among the operands.
    fn position(&self, i: &Ident) -> Option<usize> {
        self.inputs.iter().position(|j| *j == i)
    }

    /// `#[needed_for(j)]` on input `i`: its value is read only for `j`'s gradient.
    fn value_for(&self) -> Vec<TokenStream> {
        let loc = self.loc;
        self.inputs
            .iter()
            .map(|i| {
                let only = self.slots.iter().find_map(|s| match s.kind {
                    SlotKind::Input { ident, .. } if ident == *i && s.needed_for.len() == 1 => {
                        self.position(s.needed_for[0].ident)
                    }
                    _ => None,
                });
                match only {
                    Some(j) => quote_spanned!(loc=> ::core::option::Option::Some(#j)),
                    None => quote_spanned!(loc=> ::core::option::Option::None),
                }
            })
            .collect()
    }

    /// `let __r = backward(..);` and its gradients into `__r{i}`.
    fn call(&self, outs: &[Ident]) -> TokenStream {
        let loc = self.loc;
        let bw_ident = self.bwd.ident;
        let grad_args = self.grad_args();
        let saved_args = self.slots.iter().map(|s| self.saved_arg(s));
        let destructure = self.destructure(outs);
        quote_spanned! {loc=>
            let __r = #bw_ident(#(#grad_args,)* #(#saved_args),*);
            #destructure
        }
    }

    /// The incoming gradient, as each of the backward's gradient parameters takes it.
    fn grad_args(&self) -> Vec<TokenStream> {
        let loc = self.loc;
        self.bwd
            .grads
            .iter()
            .map(|g| {
                if crate::ir::is_tensor_ref(g.ty) {
                    quote_spanned!(loc=> __grad)
                } else {
                    quote_spanned!(loc=> ::core::option::Option::Some(__grad))
                }
            })
            .collect()
    }

    /// The value the backward names in slot `s`, from the rule's arguments.
    fn saved_arg(&self, s: &Slot<'_>) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        match &s.kind {
            SlotKind::Input { ident, .. } => {
                if s.needed_for.is_empty() {
                    quote_spanned!(loc=> #ident)
                } else {
                    let flags = s
                        .needed_for
                        .iter()
                        .filter_map(|p| self.position(p.ident))
                        .map(|j| quote_spanned!(loc=> __needs[#j]));
                    quote_spanned!(loc=> (false #(|| #flags)*).then_some(#ident))
                }
            }
            SlotKind::Metadata { ident, .. } => {
                quote_spanned!(loc=> &#krate::__private::InputMetadata::of(#ident))
            }
            SlotKind::Attr {
                ident,
                ty,
                bw_ty,
                by_ref,
                ..
            } => attr_arg(ident, ty, bw_ty, *by_ref),
            // Not eligible for a rule (`save(..)`).
            SlotKind::Residual { .. } => quote_spanned!(loc=> ::core::unreachable!()),
            SlotKind::Output { .. } => {
                if s.needed_for.is_empty() {
                    quote_spanned!(loc=> __result)
                } else {
                    quote_spanned!(loc=> ::core::option::Option::Some(__result))
                }
            }
            SlotKind::NeedsInputGrad { array: Some(_) } => quote_spanned!(loc=> __needs),
            SlotKind::NeedsInputGrad { array: None } => quote_spanned!(loc=> &__needs[..]),
        }
    }

    /// `__r{i}`: the locals of the backward's gradients.
    fn outs(&self) -> Vec<Ident> {
        (0..self.bwd.output.grads.len())
            .map(|i| format_ident!("__r{}", i))
            .collect()
    }

    /// The backward's value (its error converted) into the locals `outs`.
    fn destructure(&self, outs: &[Ident]) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        let unwrap = if self.bwd.output.fallible {
            // The conversion of the error, spanned as the node's (one error from rustc).
            let at = match self.bwd.output.original {
                syn::ReturnType::Type(_, ty) => Span::mixed_site().located_at(ty.span()),
                syn::ReturnType::Default => loc,
            };
            let convert = quote_spanned!(at=> ::core::convert::Into::<#krate::Error>::into(__e));
            quote_spanned!(loc=> match __r {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(#convert);
                }
            })
        } else {
            quote_spanned!(loc=> __r)
        };
        if self.bwd.output.tuple {
            quote_spanned!(loc=> let (#(#outs,)*) = #unwrap;)
        } else {
            quote_spanned!(loc=> let #(#outs)* = #unwrap;)
        }
    }

    /// Each operand's gradient: `None` where it is not needed, summed down to the operand's
    /// shape for a broadcasting op.
    fn wrapped(&self, outs: &[Ident]) -> Vec<TokenStream> {
        let (loc, krate) = (self.loc, self.krate);
        self.bwd
            .output
            .grads
            .iter()
            .zip(outs)
            .enumerate()
            .map(|(j, ((_, kind), r))| {
                let value = match kind {
                    GradType::OptionTensor => quote_spanned!(loc=> #r),
                    _ => quote_spanned!(loc=> ::core::option::Option::Some(#r)),
                };
                let value = quote_spanned!(loc=> if __needs[#j] { #value } else { ::core::option::Option::None });
                match (self.conv, self.inputs.get(j)) {
                    (Convention::Broadcast, Some(input)) => {
                        quote_spanned!(loc=> #krate::__private::reduce_grad(#value, #input)?)
                    }
                    _ => value,
                }
            })
            .collect()
    }
}

/// A saved attribute as the node passes its saved copy: the backward's own type decides, and a
/// type that does not fit is the same error, at the same place, as the node's
/// (`expand/node.rs`), which rustc reports once.
fn attr_arg(ident: &Ident, ty: &syn::Type, bw_ty: &syn::Type, by_ref: bool) -> TokenStream {
    let at = Span::mixed_site().located_at(bw_ty.span());
    let value = format_ident!("__value", span = at);
    let local = format_ident!("__arg", span = at);
    let copy = if super::super::slots::borrowed_target(ty).is_some() {
        if matches!(bw_ty, syn::Type::Reference(_)) {
            quote_spanned!(at=> #ident)
        } else {
            quote_spanned!(at=> ::std::borrow::ToOwned::to_owned(#ident))
        }
    } else if by_ref {
        quote_spanned!(at=> &#ident)
    } else {
        quote_spanned!(at=> ::core::clone::Clone::clone(&#ident))
    };
    quote_spanned! {at=>
        {
            let #value = #copy;
            let #local: #bw_ty = #value;
            #local
        }
    }
}
