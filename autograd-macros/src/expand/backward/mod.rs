//! What `#[backward(f)]` emits: its own function unchanged plus a call of `f`'s signature macro
//! (`hand_over.rs`), and (through `__check_backward!`) the node and the impl of `f`'s link trait
//! that runs the forward and records the node. The impl is planned once (`plan.rs`), then each
//! fragment is one method of the plan, by concern: the call and its edges (`call.rs`), the dirty
//! inputs' checks and rebases (`dirty.rs`), what the outputs become (`outputs.rs`), what the
//! node keeps (`saving.rs`) and the recording (`record.rs`).

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Path, Signature};

use super::aliases::output_type;
use super::node::node;
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn};

mod call;
mod dirty;
mod hand_over;
mod outputs;
mod plan;
mod record;
mod saving;

pub(crate) use hand_over::backward_attr;
use plan::{LinkPlan, Linked};

/// Implements the forward's link trait: run the forward with recording off, then build the node
/// that saves exactly what the backward names.
pub(crate) fn link_impl(
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    fwd_path: &Path,
) -> TokenStream {
    let plan = LinkPlan::new(args, fwd, bwd, fwd_path);
    let Linked {
        span,
        loc,
        ref marker,
        ref link,
        ..
    } = plan.linked;
    let node = node(loc, &plan.krate, args, fwd, fwd_path, bwd, &plan.slots);
    let (call, keeping) = plan.call();
    let rule = plan.rule();
    let attr_asserts = plan.attr_asserts();
    let impl_link = impl_link(span, link, marker, quote_spanned!(loc=> #call #rule));
    quote_spanned! {loc=>
        const _: () = {
            #attr_asserts
            #node
            #impl_link
            #keeping
        };
    }
}

/// `impl link for marker { items }`, its first and last token spanned on the backward's path.
fn impl_link(span: Span, link: &Path, marker: &Path, items: TokenStream) -> TokenStream {
    let impl_token = quote_spanned!(span=> impl);
    let mut body = Group::new(Delimiter::Brace, items);
    body.set_span(span);
    quote!(#impl_token #link for #marker #body)
}

/// Stands in for the link impl when the backward has errors, so that the forward does not also
/// report a missing backward, and nothing is reported unused.
pub(crate) fn link_stub(fwd: &DiffFn<'_>, fwd_path: &Path, bwd: &Signature) -> TokenStream {
    let Linked {
        span,
        loc,
        marker,
        link,
        forward_fn,
    } = Linked::new(fwd_path);
    let (params, idents) = call::params(fwd_path, fwd);
    let ret = output_type(fwd_path, fwd);
    // Marks the backward used; a generic one could not be named without its parameters.
    let bwd_ident = &bwd.ident;
    let use_backward = bwd
        .generics
        .params
        .is_empty()
        .then(|| quote_spanned!(loc=> let _ = #bwd_ident;));
    let call = quote_spanned! {loc=>
        fn call(#params) #ret {
            let _ = (#(&#idents,)*);
            let _ = #forward_fn;
            #use_backward
            ::core::unreachable!()
        }
    };
    let impl_link = impl_link(span, &link, &marker, call);
    quote_spanned! {loc=>
        const _: () = { #impl_link };
    }
}

#[cfg(test)]
mod tests;
