//! The link trait's `call`: the next edges, the forward run with recording off, its value
//! taken apart into the output locals and put back together; and the rule a derived body calls
//! the forward through.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Path};

use super::super::aliases::{output_type, param_type, residual_type};
use super::super::slots::{Slot, SlotKind};
use super::{LinkPlan, Linked};
use crate::ir::{DiffFn, Param, ParamKind};

/// The forward's parameter list and call arguments, as the link trait declares them, with the
/// types named through the aliases beside the forward (so they resolve where the forward is).
pub(super) fn params<'a>(fwd_path: &Path, fwd: &DiffFn<'a>) -> (TokenStream, Vec<&'a Ident>) {
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

impl LinkPlan<'_> {
    /// The forward's return value: its outputs as a tuple or alone, in `Ok` if it is fallible.
    pub(super) fn value(&self, fallible: bool) -> TokenStream {
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
    pub(super) fn unwrap(&self) -> Option<TokenStream> {
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
    pub(super) fn destructure(&self) -> TokenStream {
        let loc = self.linked.loc;
        let (elems, outs) = (&self.elems, &self.outs);
        let residuals: Vec<TokenStream> = (0..self.fwd.residuals.len())
            .map(|k| {
                // All of them are bound, for `__keep` (see `keep_residuals`).
                if self.keeps() || self.residual_saved(k) {
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

    /// Whether the forward has `save(..)` residuals: its link's `call` is then
    /// `__autograd_call_keeping`, which also hands them to a `#[jvp]` that names them.
    pub(super) fn keeps(&self) -> bool {
        !self.fwd.residuals.is_empty()
    }

    /// Whether the node keeps residual `k` (the backward names it).
    fn residual_saved(&self, k: usize) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s.kind, SlotKind::Residual { index, .. } if index == k))
    }

    /// `__keep`'s type: the residuals, for a `#[jvp]` that names them.
    fn keep_type(&self) -> TokenStream {
        let loc = self.linked.loc;
        let tys = (0..self.fwd.residuals.len()).map(|k| residual_type(self.fwd_path, self.fwd, k));
        quote_spanned!(loc=> ::core::option::Option<&mut ::core::option::Option<(#(#tys,)*)>>)
    }

    /// Hands the residuals (the locals `__res{k}`) to `__keep` when asked: a copy of those the
    /// node keeps (`recorded`), the others moved.
    pub(super) fn keep_residuals(&self, recorded: bool) -> Option<TokenStream> {
        let loc = self.linked.loc;
        let values = (0..self.fwd.residuals.len()).map(|k| {
            let r = format_ident!("__res{}", k, span = loc);
            if recorded && self.residual_saved(k) {
                quote_spanned!(loc=> ::core::clone::Clone::clone(&#r))
            } else {
                quote_spanned!(loc=> #r)
            }
        });
        self.keeps().then(|| {
            quote_spanned! {loc=>
                if let ::core::option::Option::Some(__k) = __keep {
                    *__k = ::core::option::Option::Some((#(#values,)*));
                }
            }
        })
    }

    /// The next edges, `None` when no input requires grad. Built-in ops fail at once on a view
    /// PyTorch refuses to rebase (its grad_fn read raises); a user's function, whose error type
    /// may not come from ours, leaves that to the backward.
    pub(super) fn edges(&self, input_refs: &TokenStream) -> TokenStream {
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
        let ret = match super::super::aliases::output_path(self.fwd_path, self.fwd) {
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
    ///
    /// For a forward with `save(..)`, `call` is `__autograd_call_keeping` (an inherent item of
    /// the marker, returned second) without a place for the residuals.
    pub(super) fn call(&self) -> (TokenStream, Option<TokenStream>) {
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
        let keep = self.keep_residuals(true);
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
        let forward_ad = quote_spanned!(loc=> #krate::__private::forward_ad);
        let edges_or_return = if self.builtin {
            // Forward-mode AD: with a dual level open and an input carrying a tangent, the op
            // goes on to its recording (a node built for the tangents, `forward_ad/`).
            let dual_edges = self.try_(quote_spanned! {loc=>
                #forward_ad::dual_edges(#edges, __fw, #input_refs)
            });
            let marker = &self.linked.marker;
            let idents = &self.idents;
            quote_spanned! {loc=>
                let __fw: bool = #forward_ad::engaged();
                // An op with a `#[jvp]` rule computes its tangents with it (the constant is
                // `false`, and the branch gone, for the others).
                #[allow(unused_imports)]
                use #forward_ad::NoJvp as _;
                if __fw && <#marker>::__AUTOGRAD_HAS_JVP {
                    #build_inputs
                    if #forward_ad::has_tangent(#input_refs) {
                        return <#marker>::__autograd_jvp_call((#(#idents,)*));
                    }
                }
                if !__fw && !#krate::is_grad_enabled() {
                    // Recording is off already (a backward pass without `create_graph`).
                    return #unrecorded;
                }
                #build_inputs
                let (__edges, __dual) = #dual_edges;
                let ::core::option::Option::Some(__edges) = __edges else {
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
        let jvp_dispatch = self.jvp_dispatch(&forward_ad, &build_inputs, &input_refs);
        let suspend = self
            .builtin
            .then(|| quote_spanned!(loc=> let _fw = #forward_ad::suspend_for(__dual.as_deref());));
        let body = quote_spanned! {loc=>
                        #dirty_prechecks
                        #jvp_dispatch
                        #edges_or_return
                        #needed
                        #originals
                        #saved_versions
                        #attr_clones
                        let __output = {
                            #no_grad
                            #suspend
                            #forward_fn(#(#idents),*)
                        };
                        #unwrap
                        #mark_dirty
                        #destructure
                        #keep
                        #dirty_checks
                        #fresh
                        #non_diff_aliases
                        #build_refs
                        #record
                        #rebases
                        #mark
                        #value
        };
        if !self.keeps() {
            return (quote_spanned!(loc=> fn call(#params) #ret { #body }), None);
        }
        let marker = &self.linked.marker;
        let tys = (0..self.fwd.params.len()).map(|i| param_type(self.fwd_path, self.fwd, i, false));
        let keep_type = self.keep_type();
        let call = quote_spanned! {loc=>
            #[inline]
            fn call(#params) #ret {
                <#marker>::__autograd_call_keeping((#(#idents,)*), ::core::option::Option::None)
            }
        };
        let keeping = quote_spanned! {loc=>
            impl #marker {
                #[doc(hidden)]
                #[allow(dead_code, clippy::all)]
                pub(crate) fn __autograd_call_keeping(
                    (#(#idents,)*): (#(#tys,)*),
                    __keep: #keep_type,
                ) #ret {
                    #body
                }
            }
        };
        (call, Some(keeping))
    }

    /// Forward-mode AD for a custom function called on dual inputs: its `#[jvp]` when it has
    /// one (found through the marker, see `forward_ad::NoJvp`); otherwise `__fw_missing`, and
    /// its outputs carry PyTorch's error. A derived function's body propagates the tangents
    /// itself; a built-in op computes them at its recording.
    fn jvp_dispatch(
        &self,
        forward_ad: &TokenStream,
        build_inputs: &TokenStream,
        input_refs: &TokenStream,
    ) -> Option<TokenStream> {
        if self.builtin || self.args.derived {
            return None;
        }
        let loc = self.linked.loc;
        let marker = &self.linked.marker;
        let idents = &self.idents;
        Some(quote_spanned! {loc=>
            let __fw_missing: bool = #forward_ad::engaged() && {
                #build_inputs
                #forward_ad::has_tangent(#input_refs)
            };
            if __fw_missing {
                #[allow(unused_imports)]
                use #forward_ad::NoJvp as _;
                if <#marker>::__AUTOGRAD_HAS_JVP {
                    return <#marker>::__autograd_jvp_call((#(#idents,)*));
                }
            }
        })
    }

    /// The rule a derived body calls the forward through (`rule/`), where it has one.
    pub(super) fn rule(&self) -> Option<TokenStream> {
        let Linked { loc, .. } = self.linked;
        super::super::rule::eligible(self.args, self.fwd).then(|| {
            super::super::rule::impl_items(
                loc,
                &self.krate,
                self.fwd_path,
                self.fwd,
                self.bwd,
                &self.slots,
                super::super::rule::Convention::of(self.args, self.fwd),
            )
        })
    }
}
