//! The syntactic rules both functions' signatures follow: a plain free function with simple
//! parameter patterns, and the class of each parameter type.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{FnArg, Ident, Pat, PatType, Signature, Type};

use super::types::{is_tensor, is_tensor_ref, option_inner, slice_elem, vec_inner};
use crate::ctxt::Ctxt;

/// Rejects what a macro-generated free function cannot be: methods, generics, async, ...
pub(super) fn check_plain_fn(cx: &Ctxt, sig: &Signature, attr: &str) {
    let not_supported = |what: &dyn ToTokens, kind: &str| {
        cx.error_spanned_by(
            what,
            format!("{kind} are not supported by `{attr}`; write a plain free function"),
        );
    };
    if let Some(t) = &sig.constness {
        not_supported(t, "`const fn`s");
    }
    if let Some(t) = &sig.asyncness {
        not_supported(t, "`async fn`s");
    }
    if let Some(t) = &sig.unsafety {
        not_supported(t, "`unsafe fn`s");
    }
    if let Some(t) = &sig.abi {
        not_supported(t, "`extern` functions");
    }
    if let Some(t) = &sig.variadic {
        not_supported(t, "variadic functions");
    }
    if !sig.generics.params.is_empty() {
        not_supported(&sig.generics, "generic functions");
    } else if let Some(w) = &sig.generics.where_clause {
        not_supported(w, "`where` clauses");
    }
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        if attr == "#[differentiable]" {
            cx.error_spanned_by(
                r,
                "methods are not supported by `#[differentiable]`; write a plain free function, or put `#[differentiable]` on the `impl` block, with `fn forward(&self, ..)` and `fn backward(&self, ..)` in it",
            );
            return;
        }
        not_supported(r, "methods");
    }
}

/// `ident: Type` with a plain (possibly `mut`) identifier pattern.
pub(super) fn plain_param<'a>(
    cx: &Ctxt,
    arg: &'a FnArg,
    attr: &str,
) -> Option<(&'a PatType, &'a Ident)> {
    let FnArg::Typed(pat_type) = arg else {
        return None; // receivers are reported by `check_plain_fn`
    };
    match &*pat_type.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some((pat_type, &p.ident)),
        pat => {
            cx.error_spanned_by(
                pat,
                format!(
                    "parameters of a `{attr}` function must be plain identifiers (`x: &Tensor`)"
                ),
            );
            None
        }
    }
}

/// What a forward parameter is, by its type.
pub(super) enum Class {
    /// `&Tensor`.
    Tensor,
    /// `&[Tensor]`.
    Tensors,
    /// `Option<&Tensor>`.
    OptionalTensor,
    /// Anything else.
    Attr,
}

/// The class of a forward parameter, or `Err` for tensor-like types the DSL does not take.
pub(super) fn classify_param(ty: &Type) -> Result<Class, String> {
    match ty {
        Type::Reference(r) if is_tensor(&r.elem) => match r.mutability {
            None => Ok(Class::Tensor),
            Some(_) => Err("`&mut Tensor` parameters are not supported; take `&Tensor`, and list it in `dirty(..)` if the function modifies it in place".into()),
        },
        Type::Reference(r) if slice_elem(&r.elem).is_some_and(is_tensor) => match r.mutability {
            None => Ok(Class::Tensors),
            Some(_) => Err("`&mut [Tensor]` parameters are not supported; take `&[Tensor]`".into()),
        },
        ty if vec_inner(ty).is_some_and(is_tensor) => Err("a list of tensor inputs is taken as a slice: write `&[Tensor]`".into()),
        ty if is_tensor(ty) => Err("tensor inputs are taken by reference: write `&Tensor`".into()),
        Type::ImplTrait(_) => Err("`impl Trait` parameters are not supported by `#[differentiable]`; name a concrete type".into()),
        ty if option_inner(ty).is_some_and(is_tensor_ref) => Ok(Class::OptionalTensor),
        ty if option_inner(ty).is_some_and(|inner| matches!(inner, Type::Reference(r) if is_tensor(&r.elem))) => {
            Err("`Option<&mut Tensor>` parameters are not supported; an optional input is `Option<&Tensor>`".into())
        }
        _ => Ok(Class::Attr),
    }
}

/// Where to point when a list is empty: the closing parenthesis of the signature.
pub(crate) fn params_end(sig: &Signature) -> Span {
    sig.paren_token.span.close()
}
