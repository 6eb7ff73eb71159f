//! What `#[backward(f)]` emits: its own function unchanged plus a call of `f`'s signature macro,
//! and (through `__check_backward!`) the node and the impl of `f`'s link trait that runs the
//! forward and records the node.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, ItemFn, Path, Signature};

use super::{node::node, sibling, slots, Attrs, Names, SlotKind};
use crate::attr::{BackwardArgs, DiffArgs};
use crate::ir::{BackwardFn, DiffFn};

/// The user's backward, and the hand-over of its signature to the forward's signature macro.
pub(crate) fn backward_attr(args: &BackwardArgs, func: &ItemFn) -> TokenStream {
    let path = &args.forward;
    let Some(last) = path.segments.last() else {
        return quote!(#func);
    };
    let names = Names::of(&last.ident);
    let signature = sibling(path, &names.signature);
    let cfg = Attrs::split(&func.attrs).cfg;
    let ident = &func.sig.ident;
    let sig = &func.sig;
    quote! {
        #func

        #(#cfg)*
        #signature! { { #path } { #ident } { #sig } }
    }
}

/// The forward's hidden items as seen from a backward, spanned on the backward's
/// `#[backward(path)]` so that errors about the link (two backwards) point there.
struct Linked {
    /// The backward's `path` token: where errors about the impl (two backwards) point. The
    /// whole impl carries it, since rustc joins an item's first and last token for its span.
    span: Span,
    /// Where every other generated token points: the same place, with call-site hygiene.
    loc: Span,
    marker: Path,
    link: Path,
    forward_fn: Path,
}

impl Linked {
    fn new(fwd_path: &Path) -> Linked {
        let last = &fwd_path
            .segments
            .last()
            .expect("invariant: `Path::parse_mod_style` yields a segment")
            .ident;
        let names = Names::of(last);
        Linked {
            span: last.span(),
            loc: Span::call_site().located_at(last.span()),
            marker: sibling(fwd_path, &names.marker),
            link: sibling(fwd_path, &names.link),
            forward_fn: sibling(fwd_path, &names.forward_fn),
        }
    }
}

/// The forward's parameter list and call arguments, as the link trait declares them.
fn params<'a>(fwd: &DiffFn<'a>) -> (TokenStream, Vec<&'a Ident>) {
    let idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let tys = fwd.params.iter().map(|p| p.ty);
    (quote!(#(#idents: #tys),*), idents)
}

/// Implements the forward's link trait: run the forward with recording off, then build the node
/// that saves exactly what the backward names.
pub(crate) fn link_impl(
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    fwd_path: &Path,
) -> TokenStream {
    let krate = args.krate();
    let Linked {
        span,
        loc,
        marker,
        link,
        forward_fn,
    } = Linked::new(fwd_path);
    let slots = slots(args, fwd, bwd);
    let node = node(loc, &krate, args, fwd, bwd, &slots);

    let (params, idents) = params(fwd);
    let ret = fwd.output.original;
    let inputs: Vec<&Ident> = fwd.tensor_inputs().map(|p| p.ident).collect();

    let attr_clones = slots.iter().filter_map(|s| match s.kind {
        SlotKind::Attr { ident, .. } => {
            let local = format_ident!("{}_attr", s.field);
            Some(quote_spanned!(loc=> let #local = ::core::clone::Clone::clone(&#ident);))
        }
        _ => None,
    });

    let err = |e: TokenStream| quote_spanned!(loc=> return ::core::result::Result::Err(::core::convert::Into::into(#e)););
    let unwrap = fwd.output.fallible.then(|| {
        quote_spanned! {loc=>
            let __output = match __output {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => return ::core::result::Result::Err(__e),
            };
        }
    });
    let outs: Vec<Ident> = (0..fwd.num_outputs())
        .map(|i| format_ident!("__out{}", i))
        .collect();
    let destructure = if fwd.output.tuple {
        quote_spanned!(loc=> let (#(#outs,)*) = __output;)
    } else {
        quote_spanned!(loc=> let #(#outs)* = __output;)
    };

    // B35: a dirty input must come back as an output (the same handle), may not be a leaf that
    // requires grad, and may not be a view (its base's history cannot be rewritten).
    let dirty: Vec<(&Ident, Ident)> = args
        .dirty()
        .iter()
        .filter_map(|d| fwd.tensor_inputs().find(|p| *p.ident == *d))
        .map(|p| (p.ident, format_ident!("__dirty_{}", p.ident.unraw())))
        .collect();
    let dirty_checks = dirty.iter().map(|(input, pos)| {
        let not_returned = err(quote_spanned!(loc=> #krate::Error::msg(
            "Some elements marked as dirty during the forward method were not returned as output."
        )));
        let leaf = err(quote_spanned!(loc=> #krate::Error::msg(
            "a leaf Variable that requires grad has been used in an in-place operation."
        )));
        let view = err(quote_spanned!(loc=> #krate::Error::ViewInPlace));
        quote_spanned! {loc=>
            let #pos: usize = match [#(&#outs),*].iter().position(|__o| __o.is_same(#input)) {
                ::core::option::Option::Some(__i) => __i,
                ::core::option::Option::None => { #not_returned }
            };
            if #input.is_leaf() && #input.requires_grad() { #leaf }
            if #input.is_view() { #view }
        }
    });
    let dirty_positions: Vec<&Ident> = dirty.iter().map(|(_, pos)| pos).collect();

    // An output that already takes part in autograd (an input returned as is, a captured tensor
    // that requires grad, or an earlier output returned twice) is replaced by a detached alias,
    // which shares storage and version counter; only dirty inputs keep their handle.
    let fresh = outs.iter().enumerate().map(|(j, out)| {
        let earlier = &outs[..j];
        let earlier_check = (j > 0).then(
            || quote_spanned!(loc=> || [#(&#earlier),*].iter().any(|__e| __e.is_same(&#out))),
        );
        let aliased = quote_spanned! {loc=>
            #out.requires_grad()
                || [#(#inputs),*].iter().any(|__i| __i.is_same(&#out))
                #earlier_check
        };
        let keep = (!dirty_positions.is_empty())
            .then(|| quote_spanned!(loc=> [#(#dirty_positions),*].contains(&#j) ||));
        quote_spanned! {loc=>
            let #out = if #keep !(#aliased) { #out } else { #out.detach() };
        }
    });

    let output_names = fwd.output_names();
    let non_diff: Vec<bool> = output_names
        .iter()
        .map(|o| args.non_differentiable().iter().any(|n| *n == *o))
        .collect();
    // Non-differentiable outputs still count as node inputs (their gradient slot is zeros or
    // `None`), but the node is attached to a throwaway alias so they never require grad (B34).
    let non_diff_aliases = outs
        .iter()
        .zip(&non_diff)
        .filter(|(_, nd)| **nd)
        .map(|(out, _)| {
            let alias = format_ident!("{}_alias", out);
            quote_spanned!(loc=> let #alias = #out.detach();)
        });
    let record_refs = outs.iter().zip(&non_diff).map(|(out, nd)| {
        if *nd {
            let alias = format_ident!("{}_alias", out);
            quote_spanned!(loc=> &#alias)
        } else {
            quote_spanned!(loc=> &#out)
        }
    });
    let inits = slots.iter().map(|s| {
        let field = &s.field;
        let init = match s.kind {
            SlotKind::Input { ident, dirty: false } => quote_spanned!(loc=> #krate::SavedTensor::input(#ident)),
            SlotKind::Input { ident, dirty: true } => {
                let pos = format_ident!("__dirty_{}", ident.unraw());
                quote_spanned!(loc=> #krate::SavedTensor::output(#ident, ::core::clone::Clone::clone(__weak), #pos))
            }
            SlotKind::Attr { .. } => {
                let local = format_ident!("{}_attr", s.field);
                quote_spanned!(loc=> #local)
            }
            SlotKind::Output { index, differentiable: true } => {
                let out = &outs[index];
                quote_spanned!(loc=> #krate::SavedTensor::output(&#out, ::core::clone::Clone::clone(__weak), #index))
            }
            SlotKind::Output { index, differentiable: false } => {
                let out = &outs[index];
                quote_spanned!(loc=> #krate::SavedTensor::input(&#out))
            }
        };
        quote_spanned!(loc=> #field: #init)
    });
    let value = if fwd.output.tuple {
        quote_spanned!(loc=> (#(#outs,)*))
    } else {
        quote_spanned!(loc=> #(#outs)*)
    };
    let value = if fwd.output.fallible {
        quote_spanned!(loc=> ::core::result::Result::Ok(#value))
    } else {
        value
    };

    let call = quote_spanned! {loc=>
                fn call(#params) #ret {
                    let ::core::option::Option::Some(__edges) =
                        #krate::__private::next_edges(&[#(#inputs),*])
                    else {
                        let _no_grad = #krate::no_grad();
                        return #forward_fn(#(#idents),*);
                    };
                    #(#attr_clones)*
                    let __output = {
                        let _no_grad = #krate::no_grad();
                        #forward_fn(#(#idents),*)
                    };
                    #unwrap
                    #destructure
                    #(#dirty_checks)*
                    #(#fresh)*
                    #(#non_diff_aliases)*
                    let _ = #krate::__private::record_node(
                        __edges,
                        &[#(#record_refs),*],
                        |__weak| __AutogradNode { #(#inits,)* },
                    );
                    #value
                }
    };
    let impl_link = impl_link(span, &link, &marker, call);
    quote_spanned! {loc=>
        const _: () = {
            #node
            #impl_link
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
    let (params, idents) = params(fwd);
    let ret = fwd.output.original;
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
