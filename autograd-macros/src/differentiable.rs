//! `#[differentiable]`: parse the options and the function, lower and validate, then emit the
//! wrapper and the hidden items a `#[backward]` links to.

use proc_macro2::TokenStream;
use syn::ItemFn;

use crate::attr::DiffArgs;
use crate::ctxt::Ctxt;
use crate::ir::DiffFn;
use crate::{derive, expand, fallback, impl_form, valid};

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    if let Ok(block) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return match impl_form::expand(args, &block) {
            Ok(generated) => generated,
            Err(e) => fallback::item_with_error(item, e),
        };
    }
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = syn::Error::new(
                e.span(),
                format!("`#[differentiable]` applies to free functions and `impl` blocks: {e}"),
            );
            return fallback::item_with_error(item, e);
        }
    };
    match try_expand(args, &func) {
        Ok(generated) => generated,
        Err(e) => fallback::forward_with_error(&func, e),
    }
}

fn try_expand(args: TokenStream, func: &ItemFn) -> syn::Result<TokenStream> {
    let opts: DiffArgs = syn::parse2(args.clone())?;
    if opts.derive.is_some() {
        if let Some(save) = &opts.save {
            return Err(syn::Error::new(
                save.keyword,
                "`save` is not supported with `derive`; write a `#[backward]` to use it",
            ));
        }
        return derive::try_expand(&opts, func);
    }
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &func.sig, opts.save());
    valid::check_forward(&cx, &opts, &fwd);
    cx.check()?;
    Ok(expand::forward(&opts, &args, &fwd, func))
}
