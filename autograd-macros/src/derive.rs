//! `#[differentiable(derive)]`: lower the body to straight-line ops, write the hidden forward and
//! backward a user would write by hand (`expand/derive/`), then expand that pair exactly as
//! `#[differentiable]` and `#[backward]` do, so that saving, version checks and the node are the
//! same code.
//!
//! The hidden forward returns the result followed by what the backward keeps of each value
//! (`expand/derive/forward.rs`), with `materialize_grads = false`: the kept values are outputs of the
//! node, saved with it like any saved output and version-checked.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{ItemFn, LitStr, Path};

use crate::attr::DiffArgs;
use crate::ctxt::Ctxt;
use crate::expand::Names;
use crate::expand::derive::{derived, hidden_names};
use crate::ir::body::Body;
use crate::ir::{BackwardFn, DiffFn, ParamKind};
use crate::{expand, valid};

pub(crate) fn try_expand(opts: &DiffArgs, func: &ItemFn) -> syn::Result<TokenStream> {
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn(&cx, &func.sig);
    check_options(&cx, opts);
    for p in &fwd.params {
        if matches!(p.kind, ParamKind::Tensors(_)) {
            cx.error_spanned_by(
                p.ty,
                "`&[Tensor]` inputs are not supported by `#[differentiable(derive)]` yet; write a `#[backward]`",
            );
        }
    }
    if fwd.output.vec {
        cx.error_spanned_by(
            fwd.output.original,
            "`#[differentiable(derive)]` functions return a `Tensor` or a tuple of them (or a `Result` of either), not a `Vec`",
        );
    }
    let body = if cx.is_ok() {
        Body::from_syn(&cx, &fwd, &func.block)
    } else {
        None
    };
    cx.check()?;
    let Some(body) = body else {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            "internal error: body not lowered",
        ));
    };
    let krate = opts.krate();
    let node = opts
        .name
        .as_ref()
        .map_or_else(|| fwd.default_node_name(), LitStr::value);
    let d = derived(&krate, &node, &fwd, func, &body);
    expand_pair(opts, &fwd, &krate, d)
}

/// Options that change what a hand-written pair means have no meaning for a derived one.
fn check_options(cx: &Ctxt, opts: &DiffArgs) {
    let unsupported = |span: proc_macro2::Span, option: &str| {
        cx.error_at(
            span,
            format!("`{option}` is not supported with `derive`; write a `#[backward]` to use it"),
        );
    };
    if let Some(s) = opts.once_differentiable {
        unsupported(s, "once_differentiable");
    }
    if let Some(b) = &opts.materialize_grads {
        unsupported(b.span, "materialize_grads");
    }
    if let Some(l) = &opts.non_differentiable {
        unsupported(l.keyword, "non_differentiable");
    }
    if let Some(l) = &opts.dirty {
        unsupported(l.keyword, "dirty");
    }
    if let Some(s) = opts.builtin {
        unsupported(s, "builtin");
    }
}

/// Expands the hidden pair through the same code as a hand-written `#[differentiable]` and
/// `#[backward]`.
fn expand_pair(
    opts: &DiffArgs,
    user: &DiffFn<'_>,
    krate: &Path,
    d: expand::derive::Derived,
) -> syn::Result<TokenStream> {
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&user.default_node_name(), user.ident.span()));
    let krate_str = LitStr::new(&quote!(#krate).to_string(), user.ident.span());
    let args_tokens = quote!(name = #name, materialize_grads = false, crate = #krate_str);
    let mut args: DiffArgs = syn::parse2(args_tokens.clone())?;
    args.derived = true;
    let forward: ItemFn = syn::parse2(d.forward)?;
    let backward: ItemFn = syn::parse2(d.backward)?;
    let cx = Ctxt::new();
    let hfwd = DiffFn::from_syn(&cx, &forward.sig);
    let hbwd = BackwardFn::from_syn(&cx, &backward.sig);
    valid::check_forward(&cx, &args, &hfwd);
    valid::check_backward(&cx, &args, &hfwd, &hbwd);
    cx.check()?;
    let (hidden, _) = hidden_names(user.ident);
    let path: Path = hidden.into();
    let forward_items = expand::forward(&args, &args_tokens, &hfwd, &forward);
    let link = expand::link_impl(&args, &hfwd, &hbwd, &path);
    let wrapper = d.wrapper;
    let rule = d.rule;
    let refuse = refuse_backward(user);
    Ok(quote! {
        #wrapper
        #rule
        #refuse
        #forward_items
        #backward
        #link
    })
}

/// The signature macro a `#[backward(f)]` calls: for a derived `f`, an error (at `f`'s name) that
/// says the backward is derived, instead of rustc's "cannot find macro".
fn refuse_backward(user: &DiffFn<'_>) -> TokenStream {
    let Names { signature, .. } = Names::of(user.ident);
    let alias = crate::expand::signature_alias(user.ident, &signature, &[]);
    let message = format!(
        "`{}` is `#[differentiable(derive)]`: its backward is derived; remove the `#[backward({})]` function, or `derive` to keep it",
        user.name(),
        user.name()
    );
    let error = quote_spanned!(user.ident.span()=> ::core::compile_error!(#message););
    let jvp_message = format!(
        "`{}` is `#[differentiable(derive)]`: its forward derivative is derived with its backward; remove the `#[jvp({})]` function, or `derive` to keep it",
        user.name(),
        user.name()
    );
    let jvp_error = quote_spanned!(user.ident.span()=> ::core::compile_error!(#jvp_message););
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #signature {
            (@jvp { $($path:tt)* } { $jvp:ident } $($rest:tt)*) => {
                #jvp_error
                const _: () = { let _ = $jvp; };
            };
            ({ $($path:tt)* } { $backward:ident } $($rest:tt)*) => {
                #error
                const _: () = { let _ = $backward; };
            };
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        pub(crate) use #signature;

        #alias
    }
}
