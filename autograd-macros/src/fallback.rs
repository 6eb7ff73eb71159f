//! What a macro emits when the user's code has errors: the user's item unchanged (so that its
//! callers still type-check), the errors, and stubs that keep the other macro from cascading.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{FnArg, ItemFn};

use crate::expand::Names;

/// The item as written, plus the error.
pub(crate) fn item_with_error(item: TokenStream, err: syn::Error) -> TokenStream {
    let err = err.into_compile_error();
    quote!(#item #err)
}

/// A forward with errors: the function as written, the errors, and a signature macro that
/// accepts any backward (marking it used) without checking it.
pub(crate) fn forward_with_error(func: &ItemFn, err: syn::Error) -> TokenStream {
    let Names { signature, .. } = Names::of(&func.sig.ident);
    let err = err.into_compile_error();
    let alias = crate::expand::signature_alias(&func.sig.ident, &signature, &[]);
    // Already reported: keep rustc from repeating it about the re-emitted function.
    let mut func = func.clone();
    func.sig.constness = None;
    func.sig.variadic = None;
    if let Some(FnArg::Receiver(_)) = func.sig.inputs.first() {
        // A method sits in an `impl`, where the stubs below are not allowed.
        return quote!(#err #func);
    }
    quote! {
        #err
        #func

        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #signature {
            (@jvp { $($path:tt)* } { $jvp:ident } $($rest:tt)*) => {
                const _: () = { let _ = $jvp; };
            };
            ({ $($path:tt)* } { $backward:ident } $($rest:tt)*) => {
                const _: () = { let _ = $backward; };
            };
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature;

        #alias
    }
}

/// A second `#[backward]` of one forward (`first` is the name of the first): the function, the
/// error on the forward's path in the attribute, and nothing that links it to the forward (a
/// second link impl would add rustc's conflicting-impls error).
pub(crate) fn second_backward(func: &ItemFn, forward: &syn::Path, first: &str) -> TokenStream {
    let name = forward
        .segments
        .last()
        .map_or_else(String::new, |s| s.ident.unraw().to_string());
    let err = syn::Error::new_spanned(
        forward,
        format!(
            "`{name}` already has a `#[backward]`, `{first}`: a `#[differentiable]` function has exactly one"
        ),
    )
    .into_compile_error();
    let mut func = func.clone();
    for arg in &mut func.sig.inputs {
        if let FnArg::Typed(p) = arg {
            p.attrs.retain(|a| !crate::ir::is_param_attr(a));
        }
    }
    // Marks the function used, as its link impl would have (a generic one cannot be named).
    let ident = &func.sig.ident;
    let used = func
        .sig
        .generics
        .params
        .is_empty()
        .then(|| quote!(const _: () = { let _ = #ident; };));
    quote!(#func #err #used)
}
