//! What `#[backward(f)]` emits: its own function unchanged plus a call of `f`'s signature macro,
//! and (through `__check_backward!`) the node and the impl of `f`'s link trait that runs the
//! forward and records the node.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Path, Signature};

use super::{
    Attrs, Names, Slot, SlotKind, aliasable, node::node, output_type, param_type, sibling, slots,
};
use crate::attr::{BackwardArgs, DiffArgs};
use crate::ir::{
    BackwardFn, DiffFn, Param, ParamKind, is_input_metadata, is_input_metadata_ref,
    is_option_tensor_ref, is_param_attr, is_slice_ref_of, is_tensor_ref, is_tensor_slice_ref,
    option_inner,
};
use crate::symbol;

mod outputs;
mod saving;

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
/// is recorded (or the kernel does not cover the call); otherwise the grad formula kernel
/// computes it in one pass from the gradient and the one tensor the backward names
/// (`Tensor::grad_formula_or` in the runtime).
fn formula_block(kernel: &syn::Expr, func: &ItemFn) -> syn::Result<Box<syn::Block>> {
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
fn saved_doc(path: &Path, func: &ItemFn) -> Vec<String> {
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

/// The forward's hidden items as seen from a backward, spanned on the backward's
/// `#[backward(path)]` so that errors about the link (two backwards) point there.
struct Linked {
    /// The backward's `path` token: where errors about the impl (two backwards) point. The
    /// whole impl carries it, since rustc joins an item's first and last token for its span.
    span: Span,
    /// Where every other generated token points: the same place, with mixed-site hygiene, so
    /// that generated locals (`__edges`, `__output`, ..) never capture or shadow a user's
    /// parameter of the same name.
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
            loc: Span::mixed_site().located_at(last.span()),
            marker: sibling(fwd_path, &names.marker),
            link: sibling(fwd_path, &names.link),
            forward_fn: sibling(fwd_path, &names.forward_fn),
        }
    }
}

/// The forward's parameter list and call arguments, as the link trait declares them, with the
/// types named through the aliases beside the forward (so they resolve where the forward is).
fn params<'a>(fwd_path: &Path, fwd: &DiffFn<'a>) -> (TokenStream, Vec<&'a Ident>) {
    let idents: Vec<&Ident> = fwd.params.iter().map(|p| p.ident).collect();
    let tys = (0..fwd.params.len()).map(|i| param_type(fwd_path, fwd, i, false));
    (quote!(#(#idents: #tys),*), idents)
}

/// The first next edge of tensor input `p`: the number of `&Tensor` inputs before it plus the
/// lengths of the `&[Tensor]` inputs before it.
fn edge_start(loc: Span, fwd: &DiffFn<'_>, p: &Param<'_>) -> TokenStream {
    let before = fwd.tensor_inputs().take_while(|q| q.ident != p.ident);
    let (singles, slices): (Vec<&Param<'_>>, Vec<&Param<'_>>) =
        before.partition(|q| matches!(q.kind, ParamKind::Tensor(_)));
    let n = singles.len();
    let slices = slices.iter().map(|q| q.ident);
    quote_spanned!(loc=> (#n #(+ #slices.len())*))
}

/// Whether tensor input `p` needs a gradient, from the edges being recorded.
fn input_needed(loc: Span, fwd: &DiffFn<'_>, p: &Param<'_>) -> TokenStream {
    let start = edge_start(loc, fwd, p);
    let ident = p.ident;
    if matches!(p.kind, ParamKind::Tensors(_)) {
        quote_spanned!(loc=> __edges[#start..#start + #ident.len()].iter().any(::core::option::Option::is_some))
    } else {
        quote_spanned!(loc=> __edges[#start].is_some())
    }
}

/// `let <slot>_needed = ..;` for each `#[needed_for]` slot.
fn needed_locals(loc: Span, fwd: &DiffFn<'_>, slots: &[Slot<'_>]) -> TokenStream {
    slots
        .iter()
        .filter_map(|s| {
            let local = s.needed_local()?;
            let conds = s.needed_for.iter().map(|p| input_needed(loc, fwd, p));
            Some(quote_spanned!(loc=> let #local: bool = #(#conds)||*;))
        })
        .collect()
}

/// The tensor inputs as a `&[&Tensor]` expression (one entry per next edge), and the statement
/// that builds it when `&[Tensor]` inputs make it dynamic.
/// With `Option<&Tensor>` inputs, the list is of `Option<&Tensor>` (for `next_edges_opt`).
fn input_list(loc: Span, krate: &Path, fwd: &DiffFn<'_>) -> (TokenStream, TokenStream) {
    let optional = fwd.has_optional();
    let item = |p: &Param<'_>| {
        let ident = p.ident;
        if optional && !p.optional {
            quote_spanned!(loc=> ::core::option::Option::Some(#ident))
        } else {
            quote_spanned!(loc=> #ident)
        }
    };
    if !fwd.has_slices() {
        let inputs = fwd.tensor_inputs().map(item);
        return (quote_spanned!(loc=> &[#(#inputs),*]), TokenStream::new());
    }
    let pushes = fwd.tensor_inputs().map(|p| {
        let ident = p.ident;
        if matches!(p.kind, ParamKind::Tensors(_)) && optional {
            quote_spanned!(loc=> __inputs.extend(#ident.iter().map(::core::option::Option::Some));)
        } else if matches!(p.kind, ParamKind::Tensors(_)) {
            quote_spanned!(loc=> __inputs.extend(#ident.iter());)
        } else {
            let item = item(p);
            quote_spanned!(loc=> __inputs.push(#item);)
        }
    });
    let elem = if optional {
        quote_spanned!(loc=> ::core::option::Option<&#krate::Tensor>)
    } else {
        quote_spanned!(loc=> &#krate::Tensor)
    };
    (
        quote_spanned!(loc=> &__inputs),
        quote_spanned! {loc=>
            let mut __inputs: ::std::vec::Vec<#elem> = ::std::vec::Vec::new();
            #(#pushes)*
        },
    )
}

/// What [`link_impl`] computes once from the IR before it emits anything (as serde_derive's
/// `ser.rs` computes its parameters): the hidden names, what the node saves, the locals that
/// hold the forward's outputs, and the dirty inputs. Each fragment of the emitted impl is then
/// one method, named for what it emits.
struct LinkPlan<'a> {
    args: &'a DiffArgs,
    fwd: &'a DiffFn<'a>,
    bwd: &'a BackwardFn<'a>,
    fwd_path: &'a Path,
    krate: Path,
    builtin: bool,
    linked: Linked,
    /// What the node saves: the values the backward names.
    slots: Vec<Slot<'a>>,
    /// The forward's parameters (and its call's arguments).
    idents: Vec<&'a Ident>,
    /// `__out{i}`: the locals of the forward's tensor outputs.
    outs: Vec<Ident>,
    /// The elements of the value the public function returns: the tensor outputs, and (in a
    /// tuple) the non-tensor outputs beside them, returned as they are.
    elems: Vec<Ident>,
    /// B35: the `dirty` inputs, each with the local of its position among the outputs.
    dirty: Vec<(&'a Param<'a>, Ident)>,
    /// Which outputs are `non_differentiable` (B34).
    non_diff: Vec<bool>,
}

impl<'a> LinkPlan<'a> {
    fn new(
        args: &'a DiffArgs,
        fwd: &'a DiffFn<'a>,
        bwd: &'a BackwardFn<'a>,
        fwd_path: &'a Path,
    ) -> LinkPlan<'a> {
        let linked = Linked::new(fwd_path);
        let loc = linked.loc;
        let slots = slots(loc, args, fwd, bwd);
        let idents = fwd.params.iter().map(|p| p.ident).collect();
        let outs: Vec<Ident> = (0..fwd.num_outputs())
            .map(|i| format_ident!("__out{}", i, span = loc))
            .collect();
        let elems: Vec<Ident> = if fwd.output.tuple {
            fwd.output
                .elems
                .iter()
                .enumerate()
                .map(|(pos, e)| match e {
                    Some(i) => outs[*i].clone(),
                    None => format_ident!("__other{}", pos, span = loc),
                })
                .collect()
        } else {
            outs.clone()
        };
        let dirty = args
            .dirty()
            .iter()
            .filter_map(|d| fwd.tensor_inputs().find(|p| *p.ident == *d))
            .map(|p| (p, format_ident!("__dirty_{}", p.ident.unraw(), span = loc)))
            .collect();
        let non_diff = fwd
            .output_names()
            .iter()
            .map(|o| args.non_differentiable().iter().any(|n| *n == *o))
            .collect();
        LinkPlan {
            args,
            fwd,
            bwd,
            fwd_path,
            krate: args.krate(),
            builtin: args.builtin(),
            linked,
            slots,
            idents,
            outs,
            elems,
            dirty,
            non_diff,
        }
    }

    /// Returns `e` from `call`, converted into the forward's error type.
    fn err(&self, e: TokenStream) -> TokenStream {
        let loc = self.linked.loc;
        quote_spanned!(loc=> return ::core::result::Result::Err(::core::convert::Into::into(#e));)
    }

    /// `e?`, with the error converted into the forward's error type.
    fn try_(&self, e: TokenStream) -> TokenStream {
        let loc = self.linked.loc;
        let ret_err = self.err(quote_spanned!(loc=> __e));
        quote_spanned! {loc=>
            match #e {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => { #ret_err }
            }
        }
    }

    /// The forward's return value: its outputs as a tuple or alone, in `Ok` if it is fallible.
    fn value(&self, fallible: bool) -> TokenStream {
        let loc = self.linked.loc;
        let (elems, outs) = (&self.elems, &self.outs);
        let value = if self.fwd.output.tuple {
            quote_spanned!(loc=> (#(#elems,)*))
        } else {
            quote_spanned!(loc=> #(#outs)*)
        };
        if fallible {
            quote_spanned!(loc=> ::core::result::Result::Ok(#value))
        } else {
            value
        }
    }

    /// The forward's `Err` returned as it is.
    fn unwrap(&self) -> Option<TokenStream> {
        let loc = self.linked.loc;
        self.fwd.output.fallible.then(|| {
            quote_spanned! {loc=>
                let __output = match __output {
                    ::core::result::Result::Ok(__v) => __v,
                    ::core::result::Result::Err(__e) => return ::core::result::Result::Err(__e),
                };
            }
        })
    }

    /// The forward's value into the output locals. The residuals of `save(..)` the backward
    /// names are moved into the node; the others are dropped here.
    fn destructure(&self) -> TokenStream {
        let loc = self.linked.loc;
        let (elems, outs) = (&self.elems, &self.outs);
        let residuals: Vec<TokenStream> = (0..self.fwd.residuals.len())
            .map(|k| {
                let saved = self
                    .slots
                    .iter()
                    .any(|s| matches!(s.kind, SlotKind::Residual { index, .. } if index == k));
                if saved {
                    let r = format_ident!("__res{}", k, span = loc);
                    quote_spanned!(loc=> #r)
                } else {
                    quote_spanned!(loc=> _)
                }
            })
            .collect();
        if !residuals.is_empty() {
            quote_spanned!(loc=> let (#(#elems,)* #(#residuals,)*) = __output;)
        } else if self.fwd.output.tuple {
            quote_spanned!(loc=> let (#(#elems,)*) = __output;)
        } else {
            quote_spanned!(loc=> let #(#outs)* = __output;)
        }
    }

    /// The outputs the node is recorded for, as a `&[&Tensor]` expression, and the statement
    /// that builds it for a `Vec<Tensor>` forward.
    fn record_refs(&self) -> (TokenStream, TokenStream) {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        if self.fwd.output.vec {
            let out = &outs[0];
            return (
                quote_spanned!(loc=> &__refs),
                quote_spanned! {loc=>
                    let __refs: ::std::vec::Vec<&#krate::Tensor> = #out.iter().collect();
                },
            );
        }
        let refs = outs.iter().zip(&self.non_diff).map(|(out, nd)| {
            if *nd {
                let alias = format_ident!("{}_alias", out);
                quote_spanned!(loc=> &#alias)
            } else {
                quote_spanned!(loc=> &#out)
            }
        });
        (quote_spanned!(loc=> &[#(#refs),*]), TokenStream::new())
    }

    /// The next edges, `None` when no input requires grad. Built-in ops fail at once on a view
    /// PyTorch refuses to rebase (its grad_fn read raises); a user's function, whose error type
    /// may not come from ours, leaves that to the backward.
    fn edges(&self, input_refs: &TokenStream) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        let next_edges = if self.fwd.has_optional() {
            format_ident!("next_edges_opt", span = loc)
        } else {
            format_ident!("next_edges", span = loc)
        };
        let try_next_edges = format_ident!("try_{}", next_edges);
        if self.builtin {
            let t =
                self.try_(quote_spanned!(loc=> #krate::__private::#try_next_edges(#input_refs)));
            return quote_spanned!(loc=> (#t));
        }
        let ret = match super::output_path(self.fwd_path, self.fwd) {
            Some(ret) if self.fwd.output.fallible => ret,
            _ => return quote_spanned!(loc=> #krate::__private::#next_edges(#input_refs)),
        };
        // A fallible forward whose error type converts from ours fails at once on an input view
        // PyTorch refuses to rebase, as PyTorch's `collect_next_edges` does; any other leaves it
        // to the backward (an edge to a node that fails with that error).
        quote_spanned! {loc=>
            (match #krate::__private::#try_next_edges(#input_refs) {
                ::core::result::Result::Ok(__e) => __e,
                ::core::result::Result::Err(__e) => {
                    #[allow(unused_imports)]
                    use #krate::__private::{ConvertsError as _, KeepsError as _};
                    let __probe = #krate::__private::ErrorProbe::<
                        <#ret as #krate::__private::ForwardResult>::Error,
                    >::new();
                    #[allow(clippy::needless_borrow)]
                    let __converted = (&&__probe).convert_error(__e);
                    match __converted {
                        ::core::result::Result::Ok(__e) => return ::core::result::Result::Err(__e),
                        ::core::result::Result::Err(_) => #krate::__private::#next_edges(#input_refs),
                    }
                }
            })
        }
    }

    /// The link trait's `call`: the forward runs with recording off (PyTorch's generated code
    /// calls the kernel below autograd too); with grad mode already off, as in a backward pass
    /// without `create_graph`, it is called directly.
    fn call(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        let (params, idents) = params(self.fwd_path, self.fwd);
        let ret = output_type(self.fwd_path, self.fwd);
        let forward_fn = &self.linked.forward_fn;
        let (input_refs, build_inputs) = input_list(loc, krate, self.fwd);
        let edges = self.edges(&input_refs);
        let needed = needed_locals(loc, self.fwd, &self.slots);
        let dirty_prechecks = self.dirty_prechecks();
        let unrecorded = self.unrecorded();
        let originals = self.originals();
        let saved_versions = self.saved_versions();
        let attr_clones = self.attr_clones();
        let unwrap = self.unwrap();
        let destructure = self.destructure();
        let mark_dirty = self.mark_dirty();
        let dirty_checks = self.dirty_checks();
        let fresh = self.fresh(true);
        let mark = self.mark_views(true);
        let non_diff_aliases = self.non_diff_aliases();
        let (record_refs, build_refs) = self.record_refs();
        let record = self.record(&record_refs);
        let rebases = self.rebases();
        let value = self.value(self.fwd.output.fallible);
        let no_grad = quote_spanned!(loc=> let _no_grad = #krate::no_grad(););
        // A built-in op's path without a node is the forward call alone: it returns at once when
        // recording is off, with no guard. A custom function's processes its outputs, so it is
        // written once, behind both ways of not recording.
        let edges_or_return = if self.builtin {
            quote_spanned! {loc=>
                if !#krate::is_grad_enabled() {
                    // Recording is off already (a backward pass without `create_graph`).
                    return #unrecorded;
                }
                #build_inputs
                let ::core::option::Option::Some(__edges) = #edges else {
                    #no_grad
                    return #unrecorded;
                };
            }
        } else {
            quote_spanned! {loc=>
                let __edges = if #krate::is_grad_enabled() {
                    #build_inputs
                    #edges
                } else {
                    ::core::option::Option::None
                };
                let ::core::option::Option::Some(__edges) = __edges else {
                    #no_grad
                    return #unrecorded;
                };
            }
        };
        quote_spanned! {loc=>
                    fn call(#params) #ret {
                        #dirty_prechecks
                        #edges_or_return
                        #needed
                        #originals
                        #saved_versions
                        #attr_clones
                        let __output = {
                            #no_grad
                            #forward_fn(#(#idents),*)
                        };
                        #unwrap
                        #mark_dirty
                        #destructure
                        #dirty_checks
                        #fresh
                        #non_diff_aliases
                        #build_refs
                        #record
                        #rebases
                        #mark
                        #value
                    }
        }
    }

    /// The rule a derived body calls the forward through (`rule.rs`), where it has one.
    fn rule(&self) -> Option<TokenStream> {
        let Linked { loc, .. } = self.linked;
        super::rule::eligible(self.args, self.fwd).then(|| {
            super::rule::impl_items(
                loc,
                &self.krate,
                self.fwd_path,
                self.fwd,
                self.bwd,
                &self.slots,
                super::rule::Convention::of(self.args, self.fwd),
            )
        })
    }
}

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
    let call = plan.call();
    let rule = plan.rule();
    let attr_asserts = plan.attr_asserts();
    let impl_link = impl_link(span, link, marker, quote_spanned!(loc=> #call #rule));
    quote_spanned! {loc=>
        const _: () = {
            #attr_asserts
            #node
            #impl_link
        };
    }
}

/// Where rustc reports that the forward's error type does not convert from `Error`: the `E` of
/// `Result<T, E>`, or the whole return type (`Result<T>`, an alias).
fn error_type_span(fwd: &DiffFn<'_>, otherwise: Span) -> Span {
    let syn::ReturnType::Type(_, ty) = fwd.output.original else {
        return otherwise;
    };
    if let syn::Type::Path(p) = &**ty
        && let Some(syn::PathArguments::AngleBracketed(args)) =
            p.path.segments.last().map(|s| &s.arguments)
        && let (2, Some(e)) = (args.args.len(), args.args.last())
    {
        return syn::spanned::Spanned::span(e);
    }
    syn::spanned::Spanned::span(&**ty)
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
    let (params, idents) = params(fwd_path, fwd);
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
