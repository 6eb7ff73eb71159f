//! What `#[backward(f)]` emits: its own function unchanged plus a call of `f`'s signature macro,
//! and (through `__check_backward!`) the node and the impl of `f`'s link trait that runs the
//! forward and records the node.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Path, Signature};

use super::{
    Attrs, Names, Slot, SlotKind, aliasable, borrowed_target, node::node, output_type, param_type,
    residual_type, sibling, slots,
};
use crate::attr::{BackwardArgs, DiffArgs};
use crate::ir::{
    BackwardFn, DiffFn, Param, ParamKind, is_input_metadata, is_input_metadata_ref,
    is_option_tensor_ref, is_param_attr, is_slice_ref_of, is_tensor_ref, is_tensor_slice_ref,
    option_inner,
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
    let fused = match &args.fused {
        Some(kernel) => match fused_block(kernel, &stripped) {
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
        #fused

        #(#cfg)*
        #signature! { { #path } { #ident } { #sig } }
    }
}

/// `fused = kernel`: the backward's body, the formula as differentiable ops, runs only when it is
/// recorded (or the kernel does not cover the call); otherwise the fused kernel computes it in
/// one pass from the gradient and the one tensor the backward names
/// (`Tensor::fused_or` in the runtime).
fn fused_block(kernel: &syn::Expr, func: &ItemFn) -> syn::Result<Box<syn::Block>> {
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
                symbol::FUSED
            ),
        ));
    };
    let block = &func.block;
    Ok(Box::new(syn::parse_quote!({
        #grad.fused_or(#kernel, #saved, || -> #ret #block)
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

    /// `let x_attr = x.clone();`: each saved attribute, copied before the forward consumes it.
    fn attr_clones(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Attr { ident, ty, .. } => {
                    let local = format_ident!("{}_attr", s.field);
                    Some(match borrowed_target(ty) {
                        Some(_) => {
                            quote_spanned!(loc=> let #local = ::std::borrow::ToOwned::to_owned(#ident);)
                        }
                        None => {
                            quote_spanned!(loc=> let #local = ::core::clone::Clone::clone(&#ident);)
                        }
                    })
                }
                _ => None,
            })
            .collect()
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

    /// Without a node, the forward's value less its residuals. A custom function's outputs are
    /// made what PyTorch makes of them without a node (see [`Self::fresh`]): an input returned as
    /// is comes back as a view of itself, or a detached alias when it requires grad.
    fn unrecorded(&self) -> TokenStream {
        let loc = self.linked.loc;
        let (forward_fn, idents) = (&self.linked.forward_fn, &self.idents);
        let (elems, outs) = (&self.elems, &self.outs);
        let forward_call = quote_spanned!(loc=> #forward_fn(#(#idents),*));
        if !self.builtin {
            let unwrap = self.unwrap();
            let skip = self.fwd.residuals.iter().map(|_| quote_spanned!(loc=> _));
            let destructure = if self.fwd.output.tuple || !self.fwd.residuals.is_empty() {
                quote_spanned!(loc=> let (#(#elems,)* #(#skip,)*) = __output;)
            } else {
                quote_spanned!(loc=> let #(#outs)* = __output;)
            };
            let fresh = self.fresh(false);
            let mark = self.mark_views(false);
            let mark_dirty = self.mark_dirty();
            let value = self.value(self.fwd.output.fallible);
            return quote_spanned! {loc=>
                {
                    let __output = #forward_call;
                    #unwrap
                    #mark_dirty
                    #destructure
                    #fresh
                    #mark
                    #value
                }
            };
        }
        if self.fwd.residuals.is_empty() {
            return forward_call;
        }
        let skip = self.fwd.residuals.iter().map(|_| quote_spanned!(loc=> _));
        let pattern = quote_spanned!(loc=> (#(#elems,)* #(#skip,)*));
        let value = if self.fwd.output.tuple {
            quote_spanned!(loc=> (#(#elems,)*))
        } else {
            quote_spanned!(loc=> #(#outs)*)
        };
        if self.fwd.output.fallible {
            quote_spanned!(loc=> ::core::result::Result::map(#forward_call, |#pattern| #value))
        } else {
            quote_spanned!(loc=> { let #pattern = #forward_call; #value })
        }
    }

    /// B35: a dirty input must come back as an output (the same handle), may not be a leaf that
    /// requires grad, and may not be a view (its base's history cannot be rewritten). Built-in
    /// ops check first, whenever grad mode is on, with the built-in errors, so that a refused op
    /// changes nothing (PyTorch's `check_inplace`); custom functions check after the forward
    /// ([`Self::dirty_checks`]), as PyTorch's `mark_dirty` does.
    fn dirty_prechecks(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| self.builtin)
            .map(|(input, _)| {
                let ident = input.ident;
                let others = self.fwd.tensor_inputs().filter(|p| p.ident != ident).map(|p| {
                    let other = p.ident;
                    if p.optional {
                        quote_spanned!(loc=> || #other.is_some_and(#krate::Tensor::requires_grad))
                    } else if matches!(p.kind, ParamKind::Tensors(_)) {
                        quote_spanned!(loc=> || #other.iter().any(#krate::Tensor::requires_grad))
                    } else {
                        quote_spanned!(loc=> || #other.requires_grad())
                    }
                });
                let check = self.try_(quote_spanned!(loc=>
                    #krate::__private::check_inplace(#ident, false #(#others)*)
                ));
                quote_spanned!(loc=> #check;)
            })
            .collect()
    }

    /// After the forward: where each dirty input is among the outputs, and (custom functions)
    /// the rest of B35's checks.
    fn dirty_checks(&self) -> TokenStream {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        self.dirty
            .iter()
            .map(|(input, pos)| {
                let input = input.ident;
                let not_returned = self.err(quote_spanned!(loc=> #krate::Error::msg(
                    "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function."
                )));
                let find = quote_spanned! {loc=>
                    let #pos: usize = match [#(&#outs),*].iter().position(|__o| __o.is_same(#input)) {
                        ::core::option::Option::Some(__i) => __i,
                        ::core::option::Option::None => { #not_returned }
                    };
                };
                if self.builtin {
                    return find;
                }
                let check = self.try_(quote_spanned!(loc=> #krate::__private::check_dirty(#input)));
                quote_spanned! {loc=>
                    #find
                    #check;
                }
            })
            .collect()
    }

    /// PyTorch's `mark_dirty` bumps each dirty input's version once more after a custom
    /// function's forward, recorded or not.
    fn mark_dirty(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| !self.builtin)
            .map(|(input, _)| {
                let input = input.ident;
                quote_spanned!(loc=> #krate::__private::mark_dirty(#input);)
            })
            .collect()
    }

    /// A custom function's dirty view moves the node into its base's history (CopySlices), as
    /// the built-in in-place ops' methods do.
    fn rebases(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.dirty
            .iter()
            .filter(|_| !self.builtin)
            .map(|(input, _)| {
                let input = input.ident;
                let r = self.try_(
                    quote_spanned!(loc=> #krate::__private::rebase_dirty_view(#input, &__node)),
                );
                quote_spanned!(loc=> #r;)
            })
            .collect()
    }

    /// `#[original]`: a copy of a dirty input taken before the forward modifies it (PyTorch's
    /// `original_self`), differentiable so that a `create_graph` pass reaches the old history.
    fn originals(&self) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        self.slots
            .iter()
            .filter_map(|s| {
                let SlotKind::Input {
                    ident,
                    original: true,
                    ..
                } = s.kind
                else {
                    return None;
                };
                let local = format_ident!("{}_original", s.field);
                let copy = self.try_(quote_spanned!(loc=> #krate::Tensor::copy(#ident)));
                Some(match s.needed_local() {
                    Some(needed) => quote_spanned! {loc=>
                        let #local: ::core::option::Option<#krate::Tensor> =
                            if #needed { ::core::option::Option::Some(#copy) } else { ::core::option::Option::None };
                    },
                    None => quote_spanned!(loc=> let #local: #krate::Tensor = #copy;),
                })
            })
            .collect()
    }

    /// The outputs made what PyTorch's `_process_backward_mode_ad` makes of them
    /// (`custom_output` in the runtime): an input returned as is becomes a view of itself (or,
    /// unrecorded and requiring grad, a detached alias, so that no gradient escapes), a captured
    /// tensor with history a detached alias; only dirty inputs keep their handle. `recorded`:
    /// whether a node is being recorded (the outputs are then differentiable, unless marked
    /// `non_differentiable`). A built-in forward returns new tensors by contract: that is only
    /// asserted, in debug builds.
    fn fresh(&self, recorded: bool) -> TokenStream {
        let (loc, krate, outs, fwd) = (self.linked.loc, &self.krate, &self.outs, self.fwd);
        let builtin = self.builtin;
        let inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_)) && !p.optional)
            .map(|p| p.ident)
            .collect();
        let optional_inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| p.optional)
            .map(|p| p.ident)
            .collect();
        let slice_inputs: Vec<&Ident> = fwd
            .tensor_inputs()
            .filter(|p| matches!(p.kind, ParamKind::Tensors(_)))
            .map(|p| p.ident)
            .collect();
        let is_input = |t: TokenStream| {
            quote_spanned! {loc=>
                false #(|| #inputs.is_same(#t))*
                    #(|| #optional_inputs.is_some_and(|__i| __i.is_same(#t)))*
                    #(|| #slice_inputs.iter().any(|__i| __i.is_same(#t)))*
            }
        };
        // The same tensor returned twice stays one tensor, the node's output at both positions
        // (PyTorch's `test_return_duplicate`), unless it is an input returned as is: each
        // occurrence of an input is a view of its own, as PyTorch makes one view per
        // occurrence. A dirty input is the input itself at every position.
        let is_plain_input = |t: TokenStream| {
            let plain = |ps: &[&Ident]| -> Vec<Ident> {
                ps.iter()
                    .filter(|i| !self.args.dirty().iter().any(|d| d == **i))
                    .map(|i| (*i).clone())
                    .collect()
            };
            let (inputs, optional_inputs) = (plain(&inputs), plain(&optional_inputs));
            quote_spanned! {loc=>
                false #(|| #inputs.is_same(#t))*
                    #(|| #optional_inputs.is_some_and(|__i| __i.is_same(#t)))*
                    #(|| #slice_inputs.iter().any(|__i| __i.is_same(#t)))*
            }
        };
        let custom_output = quote_spanned!(loc=> #krate::__private::custom_output);
        if fwd.output.vec {
            let out = &outs[0];
            let taken = is_input(quote_spanned!(loc=> __o));
            return if builtin {
                quote_spanned! {loc=>
                    ::core::debug_assert!(
                        !#out.iter().any(|__o| __o.has_history() || #taken),
                        "a `builtin` forward returns new tensors"
                    );
                }
            } else {
                quote_spanned! {loc=>
                    let #out: ::std::vec::Vec<#krate::Tensor> = {
                        // For each output, whether it is an input, and the first earlier output
                        // that is the same tensor.
                        let __kinds: ::std::vec::Vec<(bool, ::core::option::Option<usize>)> = #out
                            .iter()
                            .enumerate()
                            .map(|(__j, __o)| {
                                if #taken { return (true, ::core::option::Option::None); }
                                (false, #out[..__j].iter().position(|__e| __e.is_same(__o)))
                            })
                            .collect();
                        let mut __fresh: ::std::vec::Vec<#krate::Tensor> =
                            ::std::vec::Vec::with_capacity(#out.len());
                        for (__o, (__input, __dup)) in ::core::iter::Iterator::zip(#out.into_iter(), __kinds) {
                            let __o = match __dup {
                                ::core::option::Option::Some(__i) => ::core::clone::Clone::clone(&__fresh[__i]),
                                ::core::option::Option::None => #custom_output(__o, __input, false, #recorded),
                            };
                            __fresh.push(__o);
                        }
                        __fresh
                    };
                }
            };
        }
        let dirty_flags = self.dirty_flags(recorded);
        let dups = (1..outs.len()).filter(|_| !builtin).map(|j| {
            let (earlier, out) = (&outs[..j], &outs[j]);
            let dup = format_ident!("__dup{}", j, span = loc);
            let plain = is_plain_input(quote_spanned!(loc=> &#out));
            quote_spanned! {loc=>
                let #dup: ::core::option::Option<usize> = if #plain {
                    ::core::option::Option::None
                } else {
                    [#(&#earlier),*].iter().position(|__e| __e.is_same(&#out))
                };
            }
        });
        let processed = outs.iter().enumerate().map(|(j, out)| {
            let taken = is_input(quote_spanned!(loc=> &#out));
            if builtin {
                let dirty_positions: Vec<&Ident> = self.dirty.iter().map(|(_, pos)| pos).collect();
                let keep = (!dirty_positions.is_empty())
                    .then(|| quote_spanned!(loc=> [#(#dirty_positions),*].contains(&#j) ||));
                let earlier = &outs[..j];
                let earlier_check = (j > 0).then(
                    || quote_spanned!(loc=> || [#(&#earlier),*].iter().any(|__e| __e.is_same(&#out))),
                );
                // A built-in's fresh view requires grad through its base already: what must
                // not be there is history of its own.
                return quote_spanned! {loc=>
                    ::core::debug_assert!(
                        #keep !(#out.has_history() || #taken #earlier_check),
                        "a `builtin` forward returns new tensors (or its `dirty` inputs)"
                    );
                };
            }
            let is_dirty = format_ident!("__is_dirty{}", j, span = loc);
            let differentiable = recorded && !self.non_diff[j];
            let fresh = quote_spanned! {loc=>
                {
                    let __input: bool = #taken;
                    #custom_output(#out, __input, #is_dirty, #differentiable)
                }
            };
            if j == 0 {
                return quote_spanned!(loc=> let #out = #fresh;);
            }
            let dup = format_ident!("__dup{}", j, span = loc);
            let arms = outs[..j].iter().enumerate().map(|(i, earlier)| {
                quote_spanned!(loc=> ::core::option::Option::Some(#i) => ::core::clone::Clone::clone(&#earlier),)
            });
            quote_spanned! {loc=>
                let #out = match #dup {
                    #(#arms)*
                    _ => #fresh,
                };
            }
        });
        dirty_flags
            .into_iter()
            .chain(dups)
            .chain(processed)
            .collect()
    }

    /// `let __is_dirty{j}: bool = ..;`: whether output `j` is a dirty input (custom functions;
    /// nothing for built-in ops and `Vec<Tensor>` forwards). Recorded, from the positions the
    /// dirty checks found; unrecorded (nothing was checked), by comparing handles.
    fn dirty_flags(&self, recorded: bool) -> Option<TokenStream> {
        let (loc, outs) = (self.linked.loc, &self.outs);
        if self.builtin || self.fwd.output.vec {
            return None;
        }
        let flags = outs.iter().enumerate().map(|(j, out)| {
            let is_dirty = format_ident!("__is_dirty{}", j, span = loc);
            let value = if recorded {
                let positions = self.dirty.iter().map(|(_, pos)| pos);
                quote_spanned!(loc=> false #(|| #positions == #j)*)
            } else {
                let inputs = self.dirty.iter().map(|(input, _)| input.ident);
                quote_spanned!(loc=> false #(|| #inputs.is_same(&#out))*)
            };
            quote_spanned!(loc=> let #is_dirty: bool = #value;)
        });
        Some(flags.collect())
    }

    /// After the node is attached (or none was recorded): the outputs that are views are marked
    /// as made in a custom function (`mark_custom_outputs`), so that PyTorch refuses an in-place
    /// op on them, and a use after their base changed.
    fn mark_views(&self, recorded: bool) -> Option<TokenStream> {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        if self.builtin {
            return None;
        }
        let mark = quote_spanned!(loc=> #krate::__private::mark_custom_outputs);
        if self.fwd.output.vec {
            let out = &outs[0];
            let differentiable = if recorded {
                quote_spanned!(loc=> #out.len())
            } else {
                quote_spanned!(loc=> 0)
            };
            return Some(quote_spanned! {loc=>
                #mark(&#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>(), &[], #differentiable);
            });
        }
        let flags = (0..outs.len()).map(|j| format_ident!("__is_dirty{}", j, span = loc));
        let differentiable = if recorded {
            self.non_diff.iter().filter(|nd| !**nd).count()
        } else {
            0
        };
        Some(quote_spanned! {loc=>
            #mark(&[#(&#outs),*], &[#(#flags),*], #differentiable);
        })
    }

    /// Which output of the node a saved output is: the last position of that tensor among the
    /// outputs, since `record_node` gives a tensor returned twice the later output number.
    fn output_nr(&self, t: TokenStream, nr: TokenStream) -> TokenStream {
        let (loc, outs) = (self.linked.loc, &self.outs);
        if self.builtin || self.fwd.num_outputs() < 2 {
            return nr;
        }
        quote_spanned! {loc=>
            [#(&#outs),*].iter().rposition(|__e| __e.is_same(#t)).unwrap_or(#nr)
        }
    }

    /// Non-differentiable outputs still count as node inputs (their gradient slot is zeros or
    /// `None`), but the node is attached to a throwaway alias so they never require grad (B34).
    fn non_diff_aliases(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.outs
            .iter()
            .zip(&self.non_diff)
            .filter(|(_, nd)| **nd)
            .map(|(out, _)| {
                let alias = format_ident!("{}_alias", out);
                quote_spanned!(loc=> let #alias = #out.detach();)
            })
            .collect()
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

    /// `field: value` of each of the node's fields. Tensors are saved through the
    /// `SaveContext` `record_node` passes (`__save`), which notes a pack hook that modifies its
    /// input.
    fn inits(&self) -> Vec<TokenStream> {
        let (loc, krate, outs) = (self.linked.loc, &self.krate, &self.outs);
        let save = quote_spanned!(loc=> __save);
        self.slots.iter().filter(|s| s.has_field()).map(|s| {
            let field = &s.field;
            let init = match s.kind {
                SlotKind::Input { ident, slice: true, .. } => {
                    quote_spanned!(loc=> #ident.iter().map(|__t| #save.input(__t)).collect())
                }
                SlotKind::Input { original: true, .. } => {
                    let local = format_ident!("{}_original", s.field);
                    if s.needed_local().is_some() {
                        quote_spanned!(loc=> #local.as_ref().map(|__t| #save.input(__t)))
                    } else {
                        quote_spanned!(loc=> #save.input(&#local))
                    }
                }
                SlotKind::Input { ident, optional: true, .. } => {
                    quote_spanned!(loc=> ::core::option::Option::map(#ident, |__t| #save.input(__t)))
                }
                SlotKind::Input { ident, dirty: false, .. } if !self.dirty.is_empty() => {
                    let local = format_ident!("{}_version", s.field);
                    quote_spanned!(loc=> #save.input_at(#ident, #local))
                }
                SlotKind::Input { ident, dirty: false, .. } => quote_spanned!(loc=> #save.input(#ident)),
                SlotKind::Input { ident, dirty: true, .. } => {
                    let pos = format_ident!("__dirty_{}", ident.unraw(), span = loc);
                    let nr = self.output_nr(quote_spanned!(loc=> #ident), quote_spanned!(loc=> #pos));
                    quote_spanned!(loc=> #save.output(#ident, #nr))
                }
                SlotKind::Metadata { ident, slice: false } => {
                    quote_spanned!(loc=> #krate::__private::InputMetadata::of(#ident))
                }
                SlotKind::Metadata { ident, slice: true } => {
                    quote_spanned!(loc=> #ident.iter().map(#krate::__private::InputMetadata::of).collect())
                }
                SlotKind::Attr { .. } => {
                    let local = format_ident!("{}_attr", s.field);
                    quote_spanned!(loc=> #local)
                }
                SlotKind::Residual { index, tensor: true, .. } => {
                    let r = format_ident!("__res{}", index, span = loc);
                    let outputs = if self.fwd.output.vec {
                        let out = &outs[0];
                        quote_spanned!(loc=> &#out.iter().collect::<::std::vec::Vec<&#krate::Tensor>>())
                    } else {
                        quote_spanned!(loc=> &[#(&#outs),*])
                    };
                    quote_spanned!(loc=> #save.residual(&#r, #outputs))
                }
                SlotKind::Residual { index, .. } => {
                    let r = format_ident!("__res{}", index, span = loc);
                    quote_spanned!(loc=> #r)
                }
                SlotKind::Output { vec: true, .. } => {
                    let out = &outs[0];
                    let nr = if self.builtin {
                        quote_spanned!(loc=> __i)
                    } else {
                        quote_spanned!(loc=> #out.iter().rposition(|__e| __e.is_same(__o)).unwrap_or(__i))
                    };
                    quote_spanned!(loc=> #out.iter().enumerate()
                        .map(|(__i, __o)| #save.output(__o, #nr))
                        .collect())
                }
                SlotKind::Output { index, differentiable: true, .. } => {
                    let out = &outs[index];
                    let nr = self.output_nr(quote_spanned!(loc=> &#out), quote_spanned!(loc=> #index));
                    quote_spanned!(loc=> #save.output(&#out, #nr))
                }
                SlotKind::Output { index, differentiable: false, .. } => {
                    let out = &outs[index];
                    quote_spanned!(loc=> #save.input(&#out))
                }
                SlotKind::NeedsInputGrad { .. } => unreachable!("invariant: filtered by has_field"),
            };
            // `#[needed_for]`: saved only when needed (the originals and optional inputs are
            // already `Option`s).
            let init = match (s.needed_local(), &s.kind) {
                (Some(needed), SlotKind::Input { optional: true, .. }) => {
                    quote_spanned! {loc=>
                        if #needed { #init } else { ::core::option::Option::None }
                    }
                }
                (Some(needed), kind) if !matches!(kind, SlotKind::Input { original: true, .. }) => {
                    quote_spanned! {loc=>
                        if #needed { ::core::option::Option::Some(#init) } else { ::core::option::Option::None }
                    }
                }
                _ => init,
            };
            quote_spanned!(loc=> #field: #init)
        }).collect()
    }

    /// `let __node = record_node(..);`. A pack hook that modifies its input fails the call, as
    /// in PyTorch, when the forward can return the error: its error type then converts from
    /// `Error` (rustc checks that, on the forward's return type). A forward returning a bare
    /// tensor leaves it to the backward.
    fn record(&self, record_refs: &TokenStream) -> TokenStream {
        let (loc, krate) = (self.linked.loc, &self.krate);
        let inits = self.inits();
        let make = quote_spanned!(loc=> |__save| __AutogradNode { #(#inits,)* });
        // A node that may save an output packs it under saved-tensor hooks once it is the
        // output's grad_fn (`finish_output_packs`).
        let saves_output = self.slots.iter().any(|s| {
            matches!(
                s.kind,
                SlotKind::Output {
                    differentiable: true,
                    ..
                } | SlotKind::Input { dirty: true, .. }
                    | SlotKind::Residual { tensor: true, .. }
            )
        });
        let finish = quote_spanned!(loc=> #krate::__private::finish_output_packs(&__node));
        if self.fwd.output.fallible && self.slots.iter().any(Slot::is_tensor) {
            let at = Span::mixed_site().located_at(error_type_span(self.fwd, loc));
            let convert = quote_spanned!(at=> ::core::convert::Into::into(__e));
            let finish = saves_output.then(|| {
                quote_spanned! {loc=>
                    if let ::core::result::Result::Err(__e) = #finish {
                        return ::core::result::Result::Err(#convert);
                    }
                }
            });
            quote_spanned! {loc=>
                let __node = match #krate::__private::try_record_node(__edges, #record_refs, #make) {
                    ::core::result::Result::Ok(__n) => __n,
                    ::core::result::Result::Err(__e) => return ::core::result::Result::Err(#convert),
                };
                #finish
            }
        } else {
            // A failure stays in its slot, reported when the tensor is used.
            let finish = saves_output.then(|| quote_spanned!(loc=> let _ = #finish;));
            quote_spanned! {loc=>
                let __node = #krate::__private::record_node(__edges, #record_refs, #make);
                #finish
            }
        }
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

    /// An op that modifies an input in place saves its other inputs at the version they have
    /// before it runs, as PyTorch saves inputs before calling the kernel: an operand that
    /// aliases the modified tensor (`y.mul_(&y.detach())`) then fails the version check in
    /// backward.
    fn saved_versions(&self) -> TokenStream {
        let loc = self.linked.loc;
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Input {
                    ident,
                    dirty: false,
                    original: false,
                    optional: false,
                    slice: false,
                    ..
                } if !self.dirty.is_empty() && s.has_field() => {
                    let local = format_ident!("{}_version", s.field);
                    Some(quote_spanned!(loc=> let #local: u64 = #ident.version();))
                }
                _ => None,
            })
            .collect()
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

    /// Each saved attribute is owned by the node, which the engine may run on another thread:
    /// rustc checks that on the attribute's type as the forward writes it.
    fn attr_asserts(&self) -> TokenStream {
        let (krate, fwd_path, fwd) = (&self.krate, self.fwd_path, self.fwd);
        self.slots
            .iter()
            .filter_map(|s| match s.kind {
                SlotKind::Attr { ty, index, .. } => {
                    let at = Span::mixed_site().located_at(syn::spanned::Spanned::span(ty));
                    Some(match borrowed_target(ty) {
                        Some(_) => {
                            let x = param_type(fwd_path, fwd, index, true);
                            quote_spanned!(at=>
                                #krate::__private::assert_attribute::<<#x as ::std::borrow::ToOwned>::Owned>();
                            )
                        }
                        None => {
                            let ty = param_type(fwd_path, fwd, index, false);
                            quote_spanned!(at=> #krate::__private::assert_attribute::<#ty>();)
                        }
                    })
                }
                SlotKind::Residual { tensor: true, .. } => None,
                SlotKind::Residual { index, .. } => {
                    let ty = fwd.residuals[index].ty;
                    let at = Span::mixed_site().located_at(syn::spanned::Spanned::span(ty));
                    let ty = residual_type(fwd_path, fwd, index);
                    Some(quote_spanned!(at=> #krate::__private::assert_attribute::<#ty>();))
                }
                _ => None,
            })
            .collect()
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
mod tests {
    #[test]
    fn a_fused_backward_runs_its_kernel_unless_recorded() {
        let func: syn::ItemFn = syn::parse_quote! {
            fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
                grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
            }
        };
        let kernel: syn::Expr = syn::parse_quote!(FusedOp::Tanh);
        let block = super::fused_block(&kernel, &func).expect("one gradient, one saved tensor");
        let tight = |t: proc_macro2::TokenStream| t.to_string().replace(' ', "");
        assert_eq!(
            tight(quote::quote!(#block)),
            tight(quote::quote!({
                grad.fused_or(FusedOp::Tanh, result, || -> Result<Tensor> {
                    grad.mul(&result.mul(result)?.rsub_scalar(1.0)?)
                })
            }))
        );
        let two: syn::ItemFn = syn::parse_quote! {
            fn div_backward(grad: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> { grad.div(b) }
        };
        let err = super::fused_block(&kernel, &two).expect_err("two saved tensors");
        assert!(
            err.to_string()
                .contains("one gradient and one saved tensor"),
            "{err}"
        );
    }

    #[test]
    fn a_backwards_doc_lists_what_its_node_saves() {
        let func: syn::ItemFn = syn::parse_quote! {
            fn linear_backward(
                grad: &Tensor,
                needs_input_grad: [bool; 3],
                x: &Tensor,
                w: &InputMetadata,
                #[needed_for(x)] weight: Option<&Tensor>,
                bias: Option<&Tensor>,
                result: &Tensor,
                k: f64,
            ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
                Ok((None, None, None))
            }
        };
        let path: syn::Path = syn::parse_quote!(super::linear);
        let doc = super::saved_doc(&path, &func).join("\n");
        for part in [
            "# Autograd",
            "The backward of `super::linear`. What its node saves",
            "* `x`: a saved tensor (version-checked).",
            "* `w`: shape, dtype and device only (no data).",
            "* `weight`: a saved tensor, kept only when `x`'s gradient is wanted (`#[needed_for]`).",
            "* `bias`: a saved tensor when the optional input is given.",
            "* `result`: the output, a saved tensor",
            "* `k`: by value",
        ] {
            assert!(doc.contains(part), "{part:?} not in:\n{doc}");
        }
        assert!(!doc.contains("`grad`") && !doc.contains("needs_input_grad"));
        let func: syn::ItemFn = syn::parse_quote! {
            fn double_backward(grad: &Tensor) -> Tensor { grad * 2.0 }
        };
        let doc = super::saved_doc(&syn::parse_quote!(double), &func).join("\n");
        assert!(doc.contains("Its node saves nothing"), "{doc}");
    }
}
