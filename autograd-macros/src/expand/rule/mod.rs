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
//!
//! This file holds the rule's shape (which functions get one, the conventions, what the forward
//! declares); `overrides.rs` what the backward's impl of the link trait overrides.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, Path, Visibility};

use super::names::Names;
use crate::attr::DiffArgs;
use crate::ir::{DiffFn, ParamKind};

mod overrides;

pub(super) use overrides::impl_items;

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
