//! The type aliases `#[differentiable]` declares beside the forward (its parameters' types,
//! their borrowed targets, its return type, its residuals), and how the backward's expansion
//! names them, so that the types resolve where the forward is.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Attribute, Ident, Path};

use super::names::sibling;
use super::slots::borrowed_target;
use crate::ir::{DiffFn, ParamKind};

/// `__autograd_f_param{i}`: the type of the forward's parameter `i`, declared where the forward
/// is, so that the backward's expansion names it without resolving it again.
pub(crate) fn param_alias(fwd: &Ident, i: usize) -> Ident {
    format_ident!("__autograd_{}_param{}", fwd.unraw(), i)
}

/// `__autograd_f_param{i}_target`: `X` for a borrowed attribute `&X` (saved as `X::Owned`).
pub(crate) fn target_alias(fwd: &Ident, i: usize) -> Ident {
    format_ident!("__autograd_{}_param{}_target", fwd.unraw(), i)
}

/// `__autograd_f_output`: the forward's return type, declared where the forward is.
pub(crate) fn output_alias(fwd: &Ident) -> Ident {
    format_ident!("__autograd_{}_output", fwd.unraw())
}

/// The lifetime a type alias declares for the elided lifetimes of a parameter type.
const ALIAS_LIFETIME: &str = "'__autograd";

/// `ty` with each elided lifetime (`&T`, `'_`) named [`ALIAS_LIFETIME`], and whether there was
/// one. Elided lifetimes inside function pointers and `Fn(..)` sugar are their own (higher-ranked)
/// and stay as written.
fn name_elided_lifetimes(ty: &syn::Type) -> (syn::Type, bool) {
    fn lifetime(l: &mut Option<syn::Lifetime>, span: proc_macro2::Span, found: &mut bool) {
        match l {
            Some(l) if l.ident != "_" => {}
            _ => {
                *l = Some(syn::Lifetime::new(ALIAS_LIFETIME, span));
                *found = true;
            }
        }
    }
    fn walk(ty: &mut syn::Type, found: &mut bool) {
        match ty {
            syn::Type::Reference(r) => {
                lifetime(&mut r.lifetime, r.and_token.span, found);
                walk(&mut r.elem, found);
            }
            syn::Type::Slice(s) => walk(&mut s.elem, found),
            syn::Type::Array(a) => walk(&mut a.elem, found),
            syn::Type::Paren(p) => walk(&mut p.elem, found),
            syn::Type::Group(g) => walk(&mut g.elem, found),
            syn::Type::Ptr(p) => walk(&mut p.elem, found),
            syn::Type::Tuple(t) => t.elems.iter_mut().for_each(|e| walk(e, found)),
            syn::Type::Path(p) => {
                if let Some(q) = &mut p.qself {
                    walk(&mut q.ty, found);
                }
                for seg in &mut p.path.segments {
                    let syn::PathArguments::AngleBracketed(args) = &mut seg.arguments else {
                        continue;
                    };
                    for arg in &mut args.args {
                        match arg {
                            syn::GenericArgument::Type(t) => walk(t, found),
                            syn::GenericArgument::Lifetime(l) if l.ident == "_" => {
                                *l = syn::Lifetime::new(ALIAS_LIFETIME, l.apostrophe);
                                *found = true;
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut ty = ty.clone();
    let mut found = false;
    walk(&mut ty, &mut found);
    (ty, found)
}

/// The type of forward parameter `i` (or of its borrowed target, `target`) as the backward's
/// expansion names it: the alias beside the forward, spanned on the type the user wrote.
pub(crate) fn param_type(fwd_path: &Path, fwd: &DiffFn<'_>, i: usize, target: bool) -> TokenStream {
    let ty = fwd.params[i].ty;
    let (ident, ty) = if target {
        let Some(x) = borrowed_target(ty) else {
            return TokenStream::new();
        };
        (target_alias(fwd.ident, i), x)
    } else {
        (param_alias(fwd.ident, i), ty)
    };
    let span = syn::spanned::Spanned::span(ty);
    let path = sibling(fwd_path, &Ident::new(&ident.to_string(), span));
    if name_elided_lifetimes(ty).1 {
        quote_spanned!(span=> #path<'_>)
    } else {
        quote!(#path)
    }
}

/// The forward's return type as the backward's expansion names it.
pub(crate) fn output_type(fwd_path: &Path, fwd: &DiffFn<'_>) -> TokenStream {
    match (fwd.output.original, output_path(fwd_path, fwd)) {
        (syn::ReturnType::Type(arrow, _), Some(path)) => quote!(#arrow #path),
        _ => TokenStream::new(),
    }
}

/// The forward's return type, through the alias beside it (`None`: it returns `()`).
pub(crate) fn output_path(fwd_path: &Path, fwd: &DiffFn<'_>) -> Option<Path> {
    match fwd.output.original {
        syn::ReturnType::Type(_, ty) => {
            let span = syn::spanned::Spanned::span(ty);
            let ident = output_alias(fwd.ident);
            Some(sibling(fwd_path, &Ident::new(&ident.to_string(), span)))
        }
        syn::ReturnType::Default => None,
    }
}

/// The aliases [`param_type`] and [`output_type`] name.
pub(super) fn type_aliases(fwd: &DiffFn<'_>, cfg: &[&Attribute]) -> TokenStream {
    let alias = |ident: Ident, ty: &syn::Type| {
        let (ty, lifetime) = name_elided_lifetimes(ty);
        let generics = lifetime.then(|| {
            let l = syn::Lifetime::new(ALIAS_LIFETIME, proc_macro2::Span::call_site());
            quote!(<#l>)
        });
        quote! {
            #(#cfg)*
            #[doc(hidden)]
            #[allow(non_camel_case_types, dead_code, private_interfaces)]
            pub(crate) type #ident #generics = #ty;
        }
    };
    let mut out = TokenStream::new();
    for (i, p) in fwd.params.iter().enumerate() {
        out.extend(alias(param_alias(fwd.ident, i), p.ty));
        if let (ParamKind::Attr, Some(x)) = (p.kind, borrowed_target(p.ty)) {
            out.extend(alias(target_alias(fwd.ident, i), x));
        }
    }
    if let syn::ReturnType::Type(_, ty) = fwd.output.original {
        out.extend(alias(
            output_alias(fwd.ident),
            fwd.output.public.as_ref().unwrap_or(ty),
        ));
    }
    for (k, r) in fwd.residuals.iter().enumerate() {
        out.extend(alias(residual_alias(fwd.ident, k), r.ty));
    }
    out
}

/// `__autograd_f_residual{k}`: the type of residual `k` of `save(..)`, declared beside the
/// forward.
pub(crate) fn residual_alias(fwd: &Ident, k: usize) -> Ident {
    format_ident!("__autograd_{}_residual{}", fwd.unraw(), k)
}

/// The type of residual `k` as the backward's expansion names it.
pub(crate) fn residual_type(fwd_path: &Path, fwd: &DiffFn<'_>, k: usize) -> TokenStream {
    let span = syn::spanned::Spanned::span(fwd.residuals[k].ty);
    let ident = residual_alias(fwd.ident, k);
    let path = sibling(fwd_path, &Ident::new(&ident.to_string(), span));
    quote!(#path)
}
