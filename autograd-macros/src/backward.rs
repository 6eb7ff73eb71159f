//! `#[backward(f)]` and the hidden `__check_backward!` it reaches through `f`'s signature macro.
//!
//! The two attributes expand independently, so the backward cannot see its forward directly:
//! `#[backward(f)]` re-emits its function and calls `f`'s signature macro with its own signature;
//! that macro (emitted by `#[differentiable]`) adds the forward's options and signature and calls
//! `__check_backward!`, which sees both with their original spans, checks one against the other
//! and emits the node.

use std::path::Path;

use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, ItemFn};

use crate::attr::{BackwardArgs, CheckInput, DiffArgs};
use crate::ctxt::Ctxt;
use crate::ir::{BackwardFn, DiffFn};
use crate::{earlier_backward, expand, fallback, valid};

/// `file`: the source file the attribute is in, when rustc says (to find an earlier
/// `#[backward]` of the same forward there: see `earlier_backward`).
pub(crate) fn expand(args: TokenStream, item: TokenStream, file: Option<&Path>) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = syn::Error::new(
                e.span(),
                format!("`#[backward]` applies to free functions: {e}"),
            );
            return fallback::item_with_error(item, e);
        }
    };
    let args: BackwardArgs = match syn::parse2(args) {
        Ok(a) => a,
        Err(e) => return fallback::item_with_error(quote!(#func), e),
    };
    // A method cannot carry the hand-over (a macro call is no associated item): report it here.
    if let Some(FnArg::Receiver(r)) = func.sig.inputs.first() {
        let e = syn::Error::new_spanned(
            r,
            "methods are not supported by `#[backward]`; write a plain free function",
        );
        return fallback::item_with_error(quote!(#func), e);
    }
    if let Some(first) = file.and_then(|f| earlier_backward::in_file(f, &func, &args.forward)) {
        return fallback::second_backward(&func, &args.forward, &first);
    }
    expand::backward_attr(&args, &func)
}

pub(crate) fn check(input: TokenStream) -> TokenStream {
    let input: CheckInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.into_compile_error(),
    };
    let args: DiffArgs = match syn::parse2(input.args.clone()) {
        Ok(a) => a,
        Err(e) => return e.into_compile_error(),
    };
    let cx = Ctxt::new();
    let fwd = DiffFn::from_syn_hand_written(&cx, &input.forward, args.save());
    valid::check_forward(&cx, &args, &fwd);
    if cx.is_ok() {
        let bwd = BackwardFn::from_syn(&cx, &input.backward);
        valid::check_backward(&cx, &args, &fwd, &bwd);
        if cx.is_ok() {
            let generated = expand::link_impl(&args, &fwd, &bwd, &input.forward_path);
            return cx
                .check()
                .map_or_else(|e| e.into_compile_error(), |()| generated);
        }
    }
    let err = cx.check().err().map(syn::Error::into_compile_error);
    let stub = expand::link_stub(&fwd, &input.forward_path, &input.backward);
    quote!(#stub #err)
}
