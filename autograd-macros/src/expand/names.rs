//! The hidden items that link a forward to its backward, all named from the forward's name
//! ([`Names`]), the paths to them beside the forward ([`sibling`]), and the signature macro's
//! alias under the forward's own name.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Attribute, Ident, Path};

use crate::symbol;

/// The hidden items that link a forward to its backward, all derived from the forward's name.
pub(crate) struct Names {
    /// `__autograd_f_forward`: the user's function, renamed.
    pub(crate) forward_fn: Ident,
    /// `__autograd_f_marker`: the type the backward implements the link trait for.
    pub(crate) marker: Ident,
    /// `__autograd_f_backward`: the link trait; its one method records the node.
    pub(crate) link: Ident,
    /// `__autograd_f_signature!`: forwards the forward's signature to `__check_backward!`.
    pub(crate) signature: Ident,
}

impl Names {
    pub(crate) fn of(ident: &Ident) -> Names {
        let base = ident.unraw();
        let span = ident.span();
        Names {
            forward_fn: format_ident!("__autograd_{}_forward", base, span = span),
            marker: format_ident!("__autograd_{}_marker", base, span = span),
            link: format_ident!("__autograd_{}_backward", base, span = span),
            signature: format_ident!("__autograd_{}_signature", base, span = span),
        }
    }
}

/// `path` with its last segment replaced by `ident` (`a::f` → `a::__autograd_f_marker`).
pub(crate) fn sibling(path: &Path, ident: &Ident) -> Path {
    let mut path = path.clone();
    if let Some(last) = path.segments.last_mut() {
        last.ident = ident.clone();
    }
    path
}

/// `use __autograd_f_signature as f;`: the signature macro under the forward's own name (in the
/// macro namespace, beside the function), so that `#[backward(f)]` calls `f!` through the path
/// the user wrote and a misspelt path is rustc's "cannot find macro `doubel`", with its
/// suggestion of the forward, rather than a generated name. Skipped for names the alias would
/// shadow or make ambiguous (see [`aliasable`]); those backwards call the signature macro by
/// its generated name.
pub(crate) fn signature_alias(ident: &Ident, signature: &Ident, cfg: &[&Attribute]) -> TokenStream {
    if !aliasable(ident) {
        return TokenStream::new();
    }
    // As written: `r#match` stays raw, and names the same item as `match` would.
    let alias = ident;
    quote! {
        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature as #alias;
    }
}

/// Whether the forward's name may name its signature macro too: not when it is a macro of the
/// standard prelude (`vec`, `format`, ..: the alias would shadow it in the forward's module) or
/// a built-in attribute (`test`, `inline`, ..: the alias would make it ambiguous).
pub(crate) fn aliasable(ident: &Ident) -> bool {
    let name = ident.unraw().to_string();
    !symbol::RESERVED_MACRO_NAMES.contains(&name.as_str())
}
