//! The derivative rule of a `#[differentiable]` function, so that a `#[differentiable(derive)]`
//! body can call it like a builtin op: `f` gets a sibling constant `__autograd_f_rule`, a
//! `Rule` whose `reads` says what its backward names (an input, its metadata only, the result)
//! and whose `apply` calls the backward with those values.
//!
//! The forward cannot see its backward, so the rule goes through the link trait: the forward
//! declares `READS` and `derivative` on it (with defaults, so that a stub impl need not), and the
//! constant reads them off the marker; the backward's impl of the trait overrides both.
//!
//! Calling convention of `apply` for `N` tensor inputs: `fn(grad: &Tensor, needs: [bool; N],
//! inputs: &Tensor.., result: &Tensor, attributes..) -> Result<(Option<Tensor>, ..)>`, one
//! gradient per tensor input, `None` where `needs` is false or the backward gives none.
//!
//! A `builtin` op of the runtime that asks for one (`rule`) gets its rule the same way, as
//! `DerivativeRules::<name>` (an inherent constant beside the op) in the runtime's conventions
//! ([`Convention`]): its hand-written rules are then only those of methods that are not one op.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Path, Visibility};

use super::names::Names;
use super::slots::{Slot, SlotKind};
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn, GradType, ParamKind};

/// Whether `fwd` gets a rule: a user function that [`fits`], or a `builtin` op that fits and
/// asks for one (`rule`: its rule is `DerivativeRules::<name>`, under the tensor method's name).
pub(crate) fn eligible(args: &DiffArgs, fwd: &DiffFn<'_>) -> bool {
    (!args.builtin() || args.rule.is_some()) && fits(args, fwd)
}

/// Whether `fwd` can have a rule: one differentiable `Tensor` output (no `save(..)` residuals),
/// inputs that are `&Tensor`s (not optional) or attributes, no generics, and none of the options
/// that change what a call means (`once_differentiable`, `dirty`, `non_differentiable`).
pub(crate) fn fits(args: &DiffArgs, fwd: &DiffFn<'_>) -> bool {
    !fwd.output.tuple
        && fwd.output.public.is_none()
        && fwd.residuals.is_empty()
        && fwd.params.iter().all(|p| !p.optional)
        && !fwd.output.vec
        && fwd.original.generics.params.is_empty()
        && fwd
            .params
            .iter()
            .all(|p| matches!(p.kind, ParamKind::Tensor(_) | ParamKind::Attr))
        && args.once_differentiable.is_none()
        && args.dirty().is_empty()
        && args.non_differentiable().is_empty()
}

/// The calling convention of a rule's `apply` (see `DerivativeRules` in the runtime).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Convention {
    /// A user function's: `needs` in, one `Option` per tensor input out.
    User,
    /// A one-operand built-in's: `fn(grad, x, result, attributes..) -> Result<Tensor>`, called
    /// only when `x` needs a gradient.
    Unary,
    /// A built-in of several operands, which broadcast: as `User`, each gradient then summed down
    /// to its operand's shape (what the engine does for a recorded node, B07), so the rule reads
    /// at least each operand's shape.
    Broadcast,
}

impl Convention {
    pub(super) fn of(args: &DiffArgs, fwd: &DiffFn<'_>) -> Convention {
        match (args.builtin(), fwd.tensor_inputs().count()) {
            (false, _) => Convention::User,
            (true, 1) => Convention::Unary,
            (true, _) => Convention::Broadcast,
        }
    }
}

/// The type of the rule's `apply`.
fn apply_type(loc: Span, krate: &Path, fwd: &DiffFn<'_>, conv: Convention) -> TokenStream {
    let tensor = quote_spanned!(loc=> #krate::Tensor);
    let n = fwd.tensor_inputs().count();
    let inputs = (0..n).map(|_| quote_spanned!(loc=> &#tensor));
    let grads = (0..n).map(|_| quote_spanned!(loc=> ::core::option::Option<#tensor>));
    let attrs = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| p.ty);
    if conv == Convention::Unary {
        return quote_spanned! {loc=>
            fn(&#tensor, #(#inputs,)* &#tensor, #(#attrs),*) -> #krate::Result<#tensor>
        };
    }
    quote_spanned! {loc=>
        fn(&#tensor, [bool; #n], #(#inputs,)* &#tensor, #(#attrs),*)
            -> #krate::Result<(#(#grads,)*)>
    }
}

/// The parameters of `derivative`: `(__grad, __needs, inputs.., __result, attributes..)`. At the
/// backward (`fwd_path` given), the attributes' types are named through the forward's aliases,
/// so that they resolve where the forward is.
fn apply_params(
    loc: Span,
    krate: &Path,
    fwd: &DiffFn<'_>,
    fwd_path: Option<&Path>,
    conv: Convention,
) -> TokenStream {
    let tensor = quote_spanned!(loc=> #krate::Tensor);
    let n = fwd.tensor_inputs().count();
    let inputs = fwd.tensor_inputs().map(|p| {
        let ident = p.ident;
        quote_spanned!(loc=> #ident: &#tensor)
    });
    let attrs = fwd
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind == ParamKind::Attr)
        .map(|(i, p)| {
            let ident = p.ident;
            let ty = match fwd_path {
                Some(path) => super::aliases::param_type(path, fwd, i, false),
                None => {
                    let ty = p.ty;
                    quote_spanned!(loc=> #ty)
                }
            };
            quote_spanned!(loc=> #ident: #ty)
        });
    if conv == Convention::Unary {
        return quote_spanned! {loc=>
            __grad: &#tensor, #(#inputs,)* __result: &#tensor, #(#attrs),*
        };
    }
    quote_spanned! {loc=>
        __grad: &#tensor, __needs: [bool; #n], #(#inputs,)* __result: &#tensor, #(#attrs),*
    }
}

/// The return type of `derivative`.
fn apply_return(loc: Span, krate: &Path, fwd: &DiffFn<'_>, conv: Convention) -> TokenStream {
    if conv == Convention::Unary {
        return quote_spanned!(loc=> #krate::Result<#krate::Tensor>);
    }
    let grads = fwd
        .tensor_inputs()
        .map(|_| quote_spanned!(loc=> ::core::option::Option<#krate::Tensor>));
    quote_spanned!(loc=> #krate::Result<(#(#grads,)*)>)
}

/// The link trait's rule items, with defaults (the backward's impl overrides them).
pub(super) fn trait_items(
    loc: Span,
    krate: &Path,
    fwd: &DiffFn<'_>,
    conv: Convention,
) -> TokenStream {
    let params = apply_params(loc, krate, fwd, None, conv);
    let ret = apply_return(loc, krate, fwd, conv);
    let n = fwd.tensor_inputs().count();
    let reads = (0..n).map(|_| quote_spanned!(loc=> #krate::__private::Read::Value));
    quote_spanned! {loc=>
        const READS: #krate::__private::Reads = #krate::__private::Reads {
            operands: &[#(#reads),*],
            result: true,
            value_for: &[],
        };
        #[allow(unused_variables, private_interfaces)]
        fn derivative(#params) -> #ret {
            ::core::result::Result::Err(#krate::Error::msg("no backward is linked"))
        }
    }
}

/// `const __autograd_f_rule`, beside the forward, with its visibility; for a `builtin` op,
/// `DerivativeRules::<name>` (its `rule = name`, or its own name).
pub(super) fn public_const(
    loc: Span,
    krate: &Path,
    vis: &Visibility,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
) -> TokenStream {
    let Names { marker, link, .. } = Names::of(fwd.ident);
    let ty = apply_type(loc, krate, fwd, Convention::of(args, fwd));
    if let Some(name) = args.rule_name(fwd.ident) {
        let doc = format!(
            " The derivative rule of `{}`, generated from its declaration (`#[differentiable(builtin, rule)]` and its `#[backward]`).",
            fwd.ident.unraw()
        );
        return quote_spanned! {loc=>
            impl #krate::__private::DerivativeRules {
                #[doc = #doc]
                #[allow(non_upper_case_globals, clippy::type_complexity)]
                pub const #name: #krate::__private::Rule<#ty> = #krate::__private::Rule {
                    reads: <#marker as #link>::READS,
                    apply: <#marker as #link>::derivative,
                };
            }
        };
    }
    let rule = rule_name(fwd.ident);
    quote_spanned! {loc=>
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        #vis const #rule: #krate::__private::Rule<#ty> = #krate::__private::Rule {
            reads: <#marker as #link>::READS,
            apply: <#marker as #link>::derivative,
        };
    }
}

/// `__autograd_f_rule`.
pub(crate) fn rule_name(ident: &Ident) -> Ident {
    let base = syn::ext::IdentExt::unraw(ident);
    format_ident!("__autograd_{}_rule", base, span = ident.span())
}

/// The backward's overrides: what it names, and the call of the backward with those values.
pub(super) fn impl_items(
    loc: Span,
    krate: &Path,
    fwd_path: &Path,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    slots: &[Slot<'_>],
    conv: Convention,
) -> TokenStream {
    let inputs: Vec<&Ident> = fwd.tensor_inputs().map(|p| p.ident).collect();
    let read = |i: &Ident| {
        let named = slots.iter().find_map(|s| match s.kind {
            SlotKind::Input { ident, .. } if ident == i => Some(quote_spanned!(loc=> Value)),
            SlotKind::Metadata { ident, .. } if ident == i => Some(quote_spanned!(loc=> Shape)),
            _ => None,
        });
        // A broadcasting op's gradients are summed down to its operands' shapes.
        let least = if conv == Convention::Broadcast {
            quote_spanned!(loc=> Shape)
        } else {
            quote_spanned!(loc=> Nothing)
        };
        let named = named.unwrap_or(least);
        quote_spanned!(loc=> #krate::__private::Read::#named)
    };
    let reads = inputs.iter().map(|i| read(i));
    let position = |i: &Ident| inputs.iter().position(|j| *j == i);
    // `#[needed_for(j)]` on input `i`: its value is read only for `j`'s gradient.
    let value_for = inputs.iter().map(|i| {
        let only = slots.iter().find_map(|s| match s.kind {
            SlotKind::Input { ident, .. } if ident == *i && s.needed_for.len() == 1 => {
                position(s.needed_for[0].ident)
            }
            _ => None,
        });
        match only {
            Some(j) => quote_spanned!(loc=> ::core::option::Option::Some(#j)),
            None => quote_spanned!(loc=> ::core::option::Option::None),
        }
    });
    let result = slots
        .iter()
        .any(|s| matches!(s.kind, SlotKind::Output { .. }));

    let grad_args = bwd.grads.iter().map(|g| {
        if crate::ir::is_tensor_ref(g.ty) {
            quote_spanned!(loc=> __grad)
        } else {
            quote_spanned!(loc=> ::core::option::Option::Some(__grad))
        }
    });
    let saved_args = slots.iter().map(|s| match &s.kind {
        SlotKind::Input { ident, .. } => {
            if s.needed_for.is_empty() {
                quote_spanned!(loc=> #ident)
            } else {
                let flags = s
                    .needed_for
                    .iter()
                    .filter_map(|p| position(p.ident))
                    .map(|j| quote_spanned!(loc=> __needs[#j]));
                quote_spanned!(loc=> (false #(|| #flags)*).then_some(#ident))
            }
        }
        SlotKind::Metadata { ident, .. } => {
            quote_spanned!(loc=> &#krate::__private::InputMetadata::of(#ident))
        }
        // As the node passes its saved copy: the backward's own type decides, and a type that
        // does not fit is the same error, at the same place, as the node's (`expand/node.rs`),
        // which rustc reports once.
        SlotKind::Attr {
            ident,
            ty,
            bw_ty,
            by_ref,
            ..
        } => {
            let at = Span::mixed_site().located_at(bw_ty.span());
            let value = format_ident!("__value", span = at);
            let local = format_ident!("__arg", span = at);
            let copy = if super::slots::borrowed_target(ty).is_some() {
                if matches!(bw_ty, syn::Type::Reference(_)) {
                    quote_spanned!(at=> #ident)
                } else {
                    quote_spanned!(at=> ::std::borrow::ToOwned::to_owned(#ident))
                }
            } else if *by_ref {
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
    });
    let bw_ident = bwd.ident;
    let unwrap = if bwd.output.fallible {
        // The conversion of the error, spanned as the node's (one error from rustc).
        let at = match bwd.output.original {
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
    let outs: Vec<Ident> = (0..bwd.output.grads.len())
        .map(|i| format_ident!("__r{}", i))
        .collect();
    let destructure = if bwd.output.tuple {
        quote_spanned!(loc=> let (#(#outs,)*) = #unwrap;)
    } else {
        quote_spanned!(loc=> let #(#outs)* = #unwrap;)
    };
    let params = apply_params(loc, krate, fwd, Some(fwd_path), conv);
    let ret = apply_return(loc, krate, fwd, conv);
    if conv == Convention::Unary {
        // Called only when the operand needs a gradient: the one gradient, as it is.
        return quote_spanned! {loc=>
            const READS: #krate::__private::Reads = #krate::__private::Reads {
                operands: &[#(#reads),*],
                result: #result,
                value_for: &[#(#value_for),*],
            };
            #[allow(unused_variables, clippy::all)]
            fn derivative(#params) -> #ret {
                let __needs: [bool; 1] = [true];
                let __r = #bw_ident(#(#grad_args,)* #(#saved_args),*);
                #destructure
                ::core::result::Result::Ok(#(#outs)*)
            }
        };
    }
    let wrapped = bwd
        .output
        .grads
        .iter()
        .zip(&outs)
        .enumerate()
        .map(|(j, ((_, kind), r))| {
            let value = match kind {
                GradType::OptionTensor => quote_spanned!(loc=> #r),
                _ => quote_spanned!(loc=> ::core::option::Option::Some(#r)),
            };
            let value =
                quote_spanned!(loc=> if __needs[#j] { #value } else { ::core::option::Option::None });
            match (conv, inputs.get(j)) {
                (Convention::Broadcast, Some(input)) => {
                    quote_spanned!(loc=> #krate::__private::reduce_grad(#value, #input)?)
                }
                _ => value,
            }
        });
    quote_spanned! {loc=>
        const READS: #krate::__private::Reads = #krate::__private::Reads {
            operands: &[#(#reads),*],
            result: #result,
            value_for: &[#(#value_for),*],
        };
        #[allow(unused_variables, clippy::all)]
        fn derivative(#params) -> #ret {
            let __r = #bw_ident(#(#grad_args,)* #(#saved_args),*);
            #destructure
            ::core::result::Result::Ok((#(#wrapped,)*))
        }
    }
}
