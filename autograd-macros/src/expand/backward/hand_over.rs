//! What `#[backward(f)]` emits itself: the user's function, re-emitted without the parameter
//! attributes the macros consume, with its `# Autograd` doc section and (`formula = kernel`) its
//! grad formula body, and the hand-over of its signature to `f`'s signature macro.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Path};

use super::super::forward::Attrs;
use super::super::names::{Names, aliasable, sibling};
use crate::attr::BackwardArgs;
use crate::ir::{
    is_input_metadata, is_input_metadata_ref, is_option_tensor_ref, is_param_attr, is_slice_ref_of,
    is_tensor_ref, is_tensor_slice_ref, option_inner,
};
use crate::symbol;

/// The user's backward, and the hand-over of its signature to the forward's signature macro.
/// The parameter attributes the macros consume (`#[needed_for]`, `#[original]`) go to the check
/// only; the function is re-emitted without them.
pub(crate) fn backward_attr(args: &BackwardArgs, func: &ItemFn) -> TokenStream {
    let path = &args.forward;
    let Some(last) = path.segments.last() else {
        return quote!(#func);
    };
    // `f!` (the alias `#[differentiable]` declares) through the user's own path, so that a
    // misspelt forward is an error about that path.
    let signature = if aliasable(&last.ident) {
        path.clone()
    } else {
        sibling(path, &Names::of(&last.ident).signature)
    };
    let cfg = Attrs::split(&func.attrs).cfg;
    let ident = &func.sig.ident;
    let sig = &func.sig;
    let mut stripped = func.clone();
    let doc = saved_doc(path, func);
    stripped.attrs.extend(
        doc.iter()
            .map(|line| -> syn::Attribute { syn::parse_quote!(#[doc = #line]) }),
    );
    for arg in &mut stripped.sig.inputs {
        if let FnArg::Typed(p) = arg {
            p.attrs.retain(|a| !is_param_attr(a));
        }
    }
    let formula = match &args.formula {
        Some(kernel) => match formula_block(kernel, &stripped) {
            Ok(block) => {
                stripped.block = block;
                None
            }
            Err(e) => Some(e.into_compile_error()),
        },
        None => None,
    };
    let func = stripped;
    quote! {
        #func
        #formula

        #(#cfg)*
        #signature! { { #path } { #ident } { #sig } }
    }
}

/// `formula = kernel`: the backward's body, the formula as differentiable ops, runs only when it
/// is recorded (or the kernel does not cover the call); otherwise the grad formula kernel computes it in
/// one pass from the gradient and the one tensor the backward names
/// (`Tensor::grad_formula_or` in the runtime).
pub(super) fn formula_block(kernel: &syn::Expr, func: &ItemFn) -> syn::Result<Box<syn::Block>> {
    let (mut grads, mut saved) = (Vec::new(), Vec::new());
    for arg in &func.sig.inputs {
        let FnArg::Typed(p) = arg else { continue };
        let (syn::Pat::Ident(pat), true) = (&*p.pat, is_tensor_ref(&p.ty)) else {
            continue;
        };
        if symbol::GRAD.is_prefix_of(&pat.ident) {
            grads.push(&pat.ident);
        } else {
            saved.push(&pat.ident);
        }
    }
    let ([grad], [saved], syn::ReturnType::Type(_, ret)) =
        (&grads[..], &saved[..], &func.sig.output)
    else {
        return Err(syn::Error::new_spanned(
            kernel,
            format!(
                "`{}` needs a backward that takes one gradient and one saved tensor (each a `&Tensor`) and returns the gradient",
                symbol::FORMULA
            ),
        ));
    };
    let block = &func.block;
    Ok(Box::new(syn::parse_quote!({
        #grad.grad_formula_or(#kernel, #saved, || -> #ret #block)
    })))
}

/// The `# Autograd` section of a backward's rustdoc: exactly what the node saves for it, read
/// off its parameters (the forward's section can only say "what the backward names", since the
/// forward's expansion cannot see the backward).
pub(super) fn saved_doc(path: &Path, func: &ItemFn) -> Vec<String> {
    let path = quote!(#path).to_string().replace(' ', "");
    let mut items = Vec::new();
    for arg in &func.sig.inputs {
        let FnArg::Typed(p) = arg else { continue };
        let syn::Pat::Ident(pat) = &*p.pat else {
            continue;
        };
        let ident = &pat.ident;
        if symbol::GRAD.is_prefix_of(ident) || *ident == symbol::NEEDS_INPUT_GRAD {
            continue;
        }
        let name = ident.unraw();
        let ty = &*p.ty;
        let has = |s: symbol::Symbol| p.attrs.iter().any(|a| a.path().is_ident(s.as_str()));
        let needed_for = p
            .attrs
            .iter()
            .find(|a| a.path().is_ident(symbol::NEEDED_FOR.as_str()));
        let what = if has(symbol::ORIGINAL) {
            "the input's value before the in-place op (`#[original]`), a saved tensor".to_string()
        } else if is_tensor_ref(ty) && symbol::RESULT.is_prefix_of(ident) {
            "the output, a saved tensor (version-checked)".to_string()
        } else if is_tensor_ref(ty) {
            "a saved tensor (version-checked)".to_string()
        } else if let (true, Some(attr)) = (is_option_tensor_ref(ty), needed_for) {
            // `#[needed_for(a, b)]`: the inputs whose gradients need it.
            let inputs = attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<Ident, syn::Token![,]>::parse_terminated,
                )
                .map(|names| {
                    names
                        .iter()
                        .map(|n| format!("`{}`'s", n.unraw()))
                        .collect::<Vec<_>>()
                        .join(" or ")
                })
                .unwrap_or_else(|_| "a".to_string());
            format!("a saved tensor, kept only when {inputs} gradient is wanted (`#[needed_for]`)")
        } else if is_option_tensor_ref(ty) {
            "a saved tensor when the optional input is given".to_string()
        } else if is_tensor_slice_ref(ty) {
            "saved tensors, one per element (version-checked)".to_string()
        } else if is_input_metadata_ref(ty)
            || is_slice_ref_of(ty, is_input_metadata)
            || option_inner(ty).is_some_and(is_input_metadata_ref)
        {
            "shape, dtype and device only (no data)".to_string()
        } else {
            "by value (an attribute, or a residual kept by `save(..)`)".to_string()
        };
        items.push(format!(" * `{name}`: {what}."));
    }
    let mut lines = vec![String::new(), " # Autograd".to_string(), String::new()];
    if items.is_empty() {
        lines.push(format!(
            " The backward of `{path}`. Its node saves nothing: this function names only the incoming gradients."
        ));
    } else {
        lines.push(format!(
            " The backward of `{path}`. What its node saves at each call that records one, and nothing else:"
        ));
        lines.push(String::new());
        lines.extend(items);
    }
    lines
}
