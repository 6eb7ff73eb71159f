//! The type shapes the DSL recognizes (`&Tensor`, `Option<&Tensor>`, `&[Tensor]`,
//! `&InputMetadata`, `[bool; N]`, ..), the generic arguments they are read from, and types
//! printed as written.

use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type};

use crate::symbol::{self, Symbol};

/// `Tensor` (any path ending in `Tensor`, without generics).
pub(crate) fn is_tensor(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == symbol::TENSOR && s.arguments.is_none()),
        Type::Group(g) => is_tensor(&g.elem),
        Type::Paren(p) => is_tensor(&p.elem),
        _ => false,
    }
}

/// `&Tensor`.
pub(crate) fn is_tensor_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_tensor(&r.elem))
}

/// `Option<&Tensor>`.
pub(crate) fn is_option_tensor_ref(ty: &Type) -> bool {
    option_inner(ty).is_some_and(is_tensor_ref)
}

/// `&[T]` (shared) with `elem(T)`.
pub(crate) fn is_slice_ref_of(ty: &Type, elem: impl Fn(&Type) -> bool) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && slice_elem(&r.elem).is_some_and(elem))
}

/// `&[Tensor]`.
pub(crate) fn is_tensor_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(ty, is_tensor)
}

/// `InputMetadata` (any path ending in `InputMetadata`, without generics).
pub(crate) fn is_input_metadata(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == symbol::INPUT_METADATA && s.arguments.is_none()),
        Type::Group(g) => is_input_metadata(&g.elem),
        Type::Paren(p) => is_input_metadata(&p.elem),
        _ => false,
    }
}

/// `&InputMetadata`.
pub(crate) fn is_input_metadata_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_input_metadata(&r.elem))
}

/// `[bool; N]`: `Some(N)` for a literal `N`.
pub(crate) fn bool_array_len(ty: &Type) -> Option<usize> {
    let Type::Array(a) = ty else { return None };
    let is_bool = matches!(&*a.elem, Type::Path(p) if p.qself.is_none() && p.path.is_ident(symbol::BOOL.as_str()));
    match &a.len {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) if is_bool => n.base10_parse().ok(),
        _ => None,
    }
}

/// `&[bool]`.
pub(crate) fn is_bool_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(
        ty,
        |t| matches!(t, Type::Path(p) if p.qself.is_none() && p.path.is_ident(symbol::BOOL.as_str())),
    )
}

/// `T` in `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::OPTION_TYPE)
}

/// `T` in `Vec<T>`.
pub(crate) fn vec_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::VEC_TYPE)
}

/// `T` in `[T]`.
pub(super) fn slice_elem(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Slice(s) => Some(&s.elem),
        Type::Group(g) => slice_elem(&g.elem),
        Type::Paren(p) => slice_elem(&p.elem),
        _ => None,
    }
}

/// `T` in `Result<T>` or `Result<T, E>` (any path ending in `Result`).
pub(crate) fn result_ok_type(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::RESULT_TYPE)
}

pub(super) fn generic_arg(ty: &Type, name: Symbol) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() || !name.ends(&p.path) {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &p.path.segments.last()?.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// A type as users write it, for messages: `&Tensor`, `Option<&Tensor>`, `Vec<usize>`.
pub(crate) fn type_string(ty: &Type) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut s = raw;
    for (from, to) in [
        ("& ", "&"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" :: ", "::"),
        (":: ", "::"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        s = s.replace(from, to);
    }
    s
}
