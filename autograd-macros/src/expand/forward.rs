//! What `#[differentiable]` adds next to the user's function: the public wrapper, the renamed
//! body, the marker type, the link trait, the type aliases and the signature macro; with the
//! user's attributes sorted by the item they belong on, and the `# Autograd` doc section.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Attribute, Ident, ItemFn};

use super::aliases::type_aliases;
use super::names::{Names, signature_alias};
use super::rule;
use crate::attr::DiffArgs;
use crate::ir::{DiffFn, ParamKind};
use crate::symbol;

/// The user's attributes, sorted by the item they belong on.
pub(super) struct Attrs<'a> {
    /// `#[cfg]`, `#[cfg_attr]`: on every generated item.
    pub(super) cfg: Vec<&'a Attribute>,
    /// Lint levels: on the renamed body, where the user's code is.
    pub(super) lints: Vec<&'a Attribute>,
    /// Docs and the rest: on the public wrapper.
    pub(super) wrapper: Vec<&'a Attribute>,
}

impl<'a> Attrs<'a> {
    pub(super) fn split(attrs: &'a [Attribute]) -> Attrs<'a> {
        let mut out = Attrs {
            cfg: Vec::new(),
            lints: Vec::new(),
            wrapper: Vec::new(),
        };
        for attr in attrs {
            let is = |names: &[symbol::Symbol]| {
                attr.path()
                    .get_ident()
                    .is_some_and(|i| names.iter().any(|n| i == n))
            };
            if is(&symbol::CFG_ATTRS) {
                out.cfg.push(attr);
            } else if is(&symbol::LINT_ATTRS) {
                out.lints.push(attr);
            } else {
                out.wrapper.push(attr);
            }
        }
        out
    }
}

/// Everything `#[differentiable]` emits for a valid forward.
pub(crate) fn forward(
    args: &DiffArgs,
    args_tokens: &TokenStream,
    fwd: &DiffFn<'_>,
    func: &ItemFn,
) -> TokenStream {
    let krate = args.krate();
    let ident = fwd.ident;
    let Names {
        forward_fn,
        marker,
        link,
        signature,
    } = Names::of(ident);
    let attrs = Attrs::split(&func.attrs);
    let cfg = &attrs.cfg;
    let signature_alias = signature_alias(ident, &signature, cfg);
    let lints = &attrs.lints;
    let wrapper_attrs = &attrs.wrapper;
    let doc = doc_section(args, fwd)
        .into_iter()
        .map(|line| quote!(#[doc = #line]));
    let vis = &func.vis;
    let ret = fwd.output.public_return();
    let full_ret = fwd.output.original;
    let param_idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let param_tys = fwd.params.iter().map(|p| p.ty);
    let params = quote!(#(#param_idents: #param_tys),*);
    let inputs = &func.sig.inputs;
    let block = &func.block;
    let sig = fwd.original;
    let call = quote_spanned!(ident.span()=> <#marker as #link>::call);
    let aliases = type_aliases(fwd, cfg);
    let message = format!(
        "`#[differentiable]` function `{}` has no `#[backward]`",
        fwd.name()
    );
    let label = format!("add a function annotated `#[backward({})]`", fwd.name());
    let note = "the backward names the incoming gradients first (`grad`), then any forward parameters or outputs (`result`) it needs, and returns one gradient per `&Tensor` input";
    // The rule a derived body uses to call this function (`rule/`).
    let (rule_items, rule_const) = if rule::eligible(args, fwd) {
        let loc = ident.span();
        let conv = rule::Convention::of(args, fwd);
        (
            rule::trait_items(loc, &krate, fwd, conv),
            rule::public_const(loc, &krate, vis, args, fwd),
        )
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    quote! {
        #(#cfg)*
        #(#wrapper_attrs)*
        #(#doc)*
        #vis fn #ident(#params) #ret {
            #call(#(#param_idents),*)
        }

        #(#cfg)*
        #(#lints)*
        #[doc(hidden)]
        #[allow(non_snake_case)] // `__autograd_double__forward` for `double_`
        pub(crate) fn #forward_fn(#inputs) #full_ret #block

        #(#cfg)*
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        pub(crate) struct #marker;

        #(#cfg)*
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub(crate) trait #link {
            fn call(#params) #ret;
            #rule_items
        }

        #aliases

        #(#cfg)*
        #rule_const

        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #signature {
            (@jvp $($jvp:tt)*) => {
                #krate::__check_jvp! { { #args_tokens } { #sig } $($jvp)* }
            };
            ($($backward:tt)*) => {
                #krate::__check_backward! { { #args_tokens } { #sig } $($backward)* }
            };
        }

        #(#cfg)*
        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature;

        #signature_alias
    }
}

/// The section `#[differentiable]` adds to the function's rustdoc: its node, its inputs, what
/// the node keeps, and whether it is twice differentiable. What the node saves is decided by the
/// backward (which the forward's expansion cannot see), so the section says how each kind of
/// value is kept, and names the residuals the forward itself keeps.
pub(crate) fn doc_section(args: &DiffArgs, fwd: &DiffFn<'_>) -> Vec<String> {
    let name = args
        .name
        .as_ref()
        .map_or_else(|| fwd.default_node_name(), |n| n.value());
    let ticked = |names: Vec<String>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut inputs = Vec::new();
    for p in fwd.tensor_inputs() {
        let ident = p.ident.unraw();
        inputs.push(match p.kind {
            ParamKind::Tensors(_) => format!("`{ident}` (one edge per tensor)"),
            _ if p.optional => format!("`{ident}` (optional: a `None` edge when absent)"),
            _ => format!("`{ident}`"),
        });
    }
    let attrs: Vec<String> = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| p.ident.unraw().to_string())
        .collect();
    let mut lines = vec![
        String::new(),
        " # Autograd".to_string(),
        String::new(),
        format!(
            " A call records one `{name}` node when grad mode is on and an input requires grad (generated by `#[differentiable]`)."
        ),
        String::new(),
        format!(" * Differentiable inputs: {}.", inputs.join(", ")),
        format!(
            " * Saved for the backward: what `#[backward({})]` names, and nothing else (that function's rustdoc lists them): a tensor input or output as a version-checked saved tensor, an `&InputMetadata` parameter as shape, dtype and device only{}.",
            fwd.name(),
            if attrs.is_empty() {
                String::new()
            } else {
                format!(", an attribute ({}) by value", ticked(attrs))
            }
        ),
    ];
    if !fwd.residuals.is_empty() {
        lines.push(format!(
            " * Kept from the forward (`save`): {}, moved into the node when the backward names them.",
            ticked(fwd.residuals.iter().map(|r| r.ident.to_string()).collect())
        ));
    }
    lines.push(if args.once_differentiable.is_some() {
        " * Twice differentiable: no (`once_differentiable`); differentiating its gradients again is `Error::OnceDifferentiable`.".to_string()
    } else {
        " * Twice differentiable: yes, when its backward is written with differentiable tensor ops (it runs with grad mode = `create_graph`).".to_string()
    });
    lines
}
