//! The graph node a backward becomes: a struct holding what the backward names, and its
//! `Backward` impl, which unpacks the saved values, calls the user's backward and maps its
//! gradients into a `GradVec`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path};

use super::aliases::{param_type, residual_type};
use super::slots::{Slot, SlotKind, borrowed_target};
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn, GradType};

/// What [`node`] computes once before it emits anything: the options that shape the node, and
/// the locals of the incoming gradients and of the backward's results. Each fragment of the
/// node (its fields, `release`, `visit_saved`, and the steps of `backward`) is one method.
struct NodePlan<'a> {
    loc: Span,
    krate: &'a Path,
    args: &'a DiffArgs,
    fwd: &'a DiffFn<'a>,
    fwd_path: &'a Path,
    bwd: &'a BackwardFn<'a>,
    slots: &'a [Slot<'a>],
    /// `SavedTensor`, through the crate path.
    saved: TokenStream,
    materialize: bool,
    once: bool,
    /// The incoming gradients: one local per output (`__grad_{i}`), unless the forward returns
    /// `Vec<Tensor>` (one list).
    vec_output: bool,
    grads: Vec<Ident>,
    /// `__r{i}`: the backward's results.
    results: Vec<Ident>,
    /// The backward returns a `Vec` of gradients among its results.
    has_vec: bool,
}

impl<'a> NodePlan<'a> {
    fn fields(&self) -> Vec<TokenStream> {
        let (loc, krate, fwd_path, fwd, saved) =
            (self.loc, self.krate, self.fwd_path, self.fwd, &self.saved);
        self.slots
            .iter()
            .filter(|s| s.has_field())
            .map(|s| {
                let field = &s.field;
                let ty = match &s.kind {
                    SlotKind::Attr { ty, index, .. } => match borrowed_target(ty) {
                        Some(_) => {
                            let x = param_type(fwd_path, fwd, *index, true);
                            quote_spanned!(loc=> <#x as ::std::borrow::ToOwned>::Owned)
                        }
                        None => param_type(fwd_path, fwd, *index, false),
                    },
                    SlotKind::Residual { tensor: true, .. } => saved.clone(),
                    SlotKind::Residual { index, .. } => residual_type(fwd_path, fwd, *index),
                    SlotKind::Metadata { .. } => {
                        quote_spanned!(loc=> #krate::__private::InputMetadata)
                    }
                    SlotKind::Input { .. } | SlotKind::Output { .. } => saved.clone(),
                    SlotKind::NeedsInputGrad { .. } => {
                        unreachable!("invariant: filtered by has_field")
                    }
                };
                let ty = if s.is_list() {
                    quote_spanned!(loc=> ::std::vec::Vec<#ty>)
                } else {
                    ty
                };
                let ty = if s.is_option() {
                    quote_spanned!(loc=> ::core::option::Option<#ty>)
                } else {
                    ty
                };
                quote_spanned!(loc=> #field: #ty)
            })
            .collect()
    }

    /// The body of `release`.
    fn releases(&self) -> TokenStream {
        let (loc, krate) = (self.loc, self.krate);
        self.slots
            .iter()
            .filter(|s| s.has_field())
            .filter_map(|s| {
                let field = &s.field;
                if !s.is_tensor() {
                    // An attribute or residual of a type that keeps releasable state
                    // (`SavedIndices`, by an inherent method of that name) is freed with the
                    // saved tensors; for every other type the method is the trait's no-op.
                    return matches!(s.kind, SlotKind::Attr { .. } | SlotKind::Residual { .. })
                        .then(|| {
                            quote_spanned! {loc=>
                                {
                                    #[allow(unused_imports)]
                                    use #krate::__private::ReleaseAttribute as _;
                                    self.#field.__autograd_release();
                                }
                            }
                        });
                }
                Some(if s.is_list() {
                    quote_spanned!(loc=> for __s in &self.#field { __s.release(); })
                } else if s.is_option() {
                    quote_spanned!(loc=> if let ::core::option::Option::Some(__s) = &self.#field { __s.release(); })
                } else {
                    quote_spanned!(loc=> self.#field.release();)
                })
            })
            .collect()
    }

    /// The body of `visit_saved`.
    fn visits(&self) -> TokenStream {
        let loc = self.loc;
        self.slots
            .iter()
            .filter(|s| s.is_tensor())
            .map(|s| {
                let field = &s.field;
                let name = &s.name;
                if s.is_list() {
                    quote_spanned! {loc=>
                        for (__i, __s) in self.#field.iter().enumerate() {
                            __visit(&::std::format!("{}[{}]", #name, __i), __s);
                        }
                    }
                } else if s.is_option() {
                    quote_spanned!(loc=> if let ::core::option::Option::Some(__s) = &self.#field { __visit(#name, __s); })
                } else {
                    quote_spanned!(loc=> __visit(#name, &self.#field);)
                }
            })
            .collect()
    }

    /// The incoming gradients into their locals.
    fn take_grads(&self) -> TokenStream {
        let (loc, krate, grads) = (self.loc, self.krate, &self.grads);
        if self.vec_output {
            quote_spanned! {loc=>
                let __grads: ::std::vec::Vec<::core::option::Option<#krate::Tensor>> = grads.into_vec();
            }
        } else {
            let (i, n) = (0..grads.len(), grads.len());
            quote_spanned! {loc=>
                let __grads: [::core::option::Option<#krate::Tensor>; #n] =
                    #krate::__private::take_grads(grads);
                #(
                    let #grads: ::core::option::Option<&#krate::Tensor> = __grads[#i].as_ref();
                )*
            }
        }
    }

    /// The incoming gradients as an iterator of `Option<&Tensor>`.
    fn grads_iter(&self) -> TokenStream {
        let (loc, grads) = (self.loc, &self.grads);
        if self.vec_output {
            quote_spanned!(loc=> __grads.iter().map(::core::option::Option::as_ref))
        } else {
            quote_spanned!(loc=> [#(#grads),*].into_iter())
        }
    }

    /// The backward's gradient arguments, and the statement that prepares them (materialised
    /// gradients of a `Vec<Tensor>` forward).
    fn grad_args(&self) -> (TokenStream, Vec<TokenStream>) {
        let (loc, krate) = (self.loc, self.krate);
        if self.vec_output {
            if self.materialize {
                (
                    quote_spanned! {loc=>
                        let __grads: ::std::vec::Vec<#krate::Tensor> = __grads
                            .into_iter()
                            .map(|__g| __g.expect("invariant: `FunctionNode` materialises undefined gradients"))
                            .collect();
                    },
                    vec![quote_spanned!(loc=> &__grads)],
                )
            } else {
                (TokenStream::new(), vec![quote_spanned!(loc=> &__grads)])
            }
        } else {
            let args = self
                .grads
                .iter()
                .map(|g| {
                    if self.materialize {
                        quote_spanned!(loc=> #g
                            .expect("invariant: `FunctionNode` materialises undefined gradients"))
                    } else {
                        quote_spanned!(loc=> #g)
                    }
                })
                .collect();
            (TokenStream::new(), args)
        }
    }

    /// `let x_unpacked = self.x.get()?;` for each saved tensor.
    fn unpacked(&self) -> TokenStream {
        let (loc, krate, saved) = (self.loc, self.krate, &self.saved);
        self.slots
            .iter()
            .filter(|s| s.is_tensor())
            .map(|s| {
                let field = &s.field;
                let local = format_ident!("{}_unpacked", field);
                // A built-in formula cannot observe a saved output's grad_fn: without
                // `create_graph` it reads the data alone, at no cost of a new tensor.
                let get = if self.args.builtin() && matches!(s.kind, SlotKind::Output { .. }) {
                    format_ident!("get_in_builtin", span = loc)
                } else {
                    format_ident!("get", span = loc)
                };
                if s.is_list() {
                    quote_spanned! {loc=>
                        let #local: ::std::vec::Vec<#krate::Tensor> = ::core::iter::Iterator::collect::<
                            #krate::Result<::std::vec::Vec<#krate::Tensor>>,
                        >(::core::iter::Iterator::map(self.#field.iter(), #saved::#get))?;
                    }
                } else if s.is_option() {
                    quote_spanned! {loc=>
                        let #local: ::core::option::Option<#krate::Tensor> = match &self.#field {
                            ::core::option::Option::Some(__s) => ::core::option::Option::Some(__s.#get()?),
                            ::core::option::Option::None => ::core::option::Option::None,
                        };
                    }
                } else {
                    quote_spanned!(loc=> let #local = self.#field.#get()?;)
                }
            })
            .collect()
    }

    /// What a backward's `needs_input_grad` reads: for built-in ops and derived functions, the
    /// gradients the running pass wants (PyTorch's generated nodes' `task_should_compute_output`:
    /// a `grad()` w.r.t. some inputs skips the others); for a hand-written custom backward, the
    /// inputs that required grad at the forward (`ctx.needs_input_grad`).
    fn needs_method(&self) -> Ident {
        if self.args.builtin() || self.args.derive.is_some() {
            format_ident!("should_compute_output", span = self.loc)
        } else {
            format_ident!("needs_input_grad", span = self.loc)
        }
    }

    /// `needs_input_grad` as a `Vec<bool>`, for a backward that takes `&[bool]`.
    fn needs_list(&self) -> Option<TokenStream> {
        let loc = self.loc;
        let needs = self.needs_method();
        self.slots
            .iter()
            .any(|s| matches!(s.kind, SlotKind::NeedsInputGrad { array: None }))
            .then(|| {
                quote_spanned! {loc=>
                    let __needs_input_grad: ::std::vec::Vec<bool> =
                        (0.._meta.num_outputs()).map(|__i| _meta.#needs(__i)).collect();
                }
            })
    }

    /// A saved attribute reaches the backward through a `let` with the backward's parameter
    /// type, spanned on that type: a type that does not fit is rustc's error there.
    fn attr_args(&self) -> TokenStream {
        self.slots
            .iter()
            .filter_map(|s| {
                let (ty, bw_ty, by_ref) = match s.kind {
                    SlotKind::Attr {
                        ty, bw_ty, by_ref, ..
                    } => (Some(ty), bw_ty, by_ref),
                    SlotKind::Residual {
                        bw_ty,
                        by_ref,
                        tensor: false,
                        ..
                    } => (None, bw_ty, by_ref),
                    SlotKind::Residual {
                        bw_ty,
                        by_ref,
                        tensor: true,
                        ..
                    } => {
                        // A saved tensor, unpacked above: lent or moved as the backward asks.
                        let local = format_ident!("{}_arg", s.field);
                        let unpacked = format_ident!("{}_unpacked", s.field);
                        let at = Span::mixed_site().located_at(bw_ty.span());
                        let value = format_ident!("{}_value", s.field, span = at);
                        let value_init = if by_ref {
                            quote_spanned!(at=> &#unpacked)
                        } else {
                            quote_spanned!(at=> ::core::clone::Clone::clone(&#unpacked))
                        };
                        return Some(quote_spanned! {at=>
                            let #value = #value_init;
                            let #local: #bw_ty = #value;
                        });
                    }
                    _ => return None,
                };
                let field = &s.field;
                let local = format_ident!("{}_arg", field);
                let at = Span::mixed_site().located_at(bw_ty.span());
                // The value is a local spanned on the backward's type, so that the whole `let`
                // (and rustc's "expected `f32`, found `f64`") points there.
                let value = format_ident!("{}_value", field, span = at);
                let borrowed = ty.and_then(borrowed_target).is_some()
                    && matches!(bw_ty, syn::Type::Reference(_));
                Some(if borrowed {
                    quote_spanned! {at=>
                        let #value = &self.#field;
                        let #local: #bw_ty = ::core::borrow::Borrow::borrow(#value);
                    }
                } else if by_ref {
                    quote_spanned! {at=>
                        let #value = &self.#field;
                        let #local: #bw_ty = #value;
                    }
                } else {
                    quote_spanned! {at=>
                        let #value = ::core::clone::Clone::clone(&self.#field);
                        let #local: #bw_ty = #value;
                    }
                })
            })
            .collect()
    }

    /// The backward's arguments after the gradients, one per saved value.
    fn saved_args(&self) -> Vec<TokenStream> {
        let loc = self.loc;
        self.slots
            .iter()
            .map(|s| {
                let field = &s.field;
                match &s.kind {
                    SlotKind::Attr { .. } | SlotKind::Residual { .. } => {
                        let local = format_ident!("{}_arg", field);
                        quote_spanned!(loc=> #local)
                    }
                    SlotKind::Metadata { .. } => quote_spanned!(loc=> &self.#field),
                    SlotKind::NeedsInputGrad { array: Some(n) } => {
                        let i = 0..*n;
                        let needs = self.needs_method();
                        quote_spanned!(loc=> [#(_meta.#needs(#i)),*])
                    }
                    SlotKind::NeedsInputGrad { array: None } => {
                        quote_spanned!(loc=> &__needs_input_grad)
                    }
                    SlotKind::Input { .. } | SlotKind::Output { .. } => {
                        let local = format_ident!("{}_unpacked", field);
                        if s.is_option() && !s.is_list() {
                            quote_spanned!(loc=> ::core::option::Option::as_ref(&#local))
                        } else {
                            quote_spanned!(loc=> &#local)
                        }
                    }
                }
            })
            .collect()
    }

    /// The backward's error converts into `Error`: rustc checks that on its return type.
    fn unwrap(&self) -> Option<TokenStream> {
        let (loc, krate, bwd) = (self.loc, self.krate, self.bwd);
        bwd.output.fallible.then(|| {
            let at = match bwd.output.original {
                syn::ReturnType::Type(_, ty) => Span::mixed_site().located_at(ty.span()),
                syn::ReturnType::Default => loc,
            };
            let convert = quote_spanned!(at=> ::core::convert::Into::<#krate::Error>::into(__e));
            quote_spanned! {loc=>
                let __result = match __result {
                    ::core::result::Result::Ok(__v) => __v,
                    ::core::result::Result::Err(__e) => {
                        return ::core::result::Result::Err(#convert);
                    }
                };
            }
        })
    }

    /// The backward's result into the result locals.
    fn destructure(&self) -> TokenStream {
        let (loc, results) = (self.loc, &self.results);
        if self.bwd.output.tuple {
            quote_spanned!(loc=> let (#(#results,)*) = __result;)
        } else {
            quote_spanned!(loc=> let #(#results)* = __result;)
        }
    }

    /// The results into `__out`, the node's `GradVec`.
    fn collect_out(&self) -> TokenStream {
        let (loc, krate, results) = (self.loc, self.krate, &self.results);
        let some = quote_spanned!(loc=> ::core::option::Option::Some);
        let grads = &self.bwd.output.grads;
        if self.has_vec {
            let pushes = grads.iter().zip(results).map(|((_, kind), r)| match kind {
                GradType::OptionTensor => quote_spanned!(loc=> __out.push(#r);),
                GradType::Tensor | GradType::Other => quote_spanned!(loc=> __out.push(#some(#r));),
                GradType::VecTensor => quote_spanned!(loc=> __out.extend(::core::iter::IntoIterator::into_iter(#r).map(#some));),
                GradType::VecOptionTensor => quote_spanned!(loc=> __out.extend(#r);),
            });
            quote_spanned! {loc=>
                let mut __out: #krate::__private::GradVec = #krate::__private::GradVec::new();
                #(#pushes)*
            }
        } else {
            let wrapped = grads.iter().zip(results).map(|((_, kind), r)| match kind {
                GradType::OptionTensor => quote_spanned!(loc=> #r),
                _ => quote_spanned!(loc=> #some(#r)),
            });
            quote_spanned! {loc=>
                let mut __out: #krate::__private::GradVec =
                    #krate::__private::smallvec::smallvec![#(#wrapped),*];
            }
        }
    }

    /// `once_differentiable`: the prologue and epilogue of `backward`, and the node its
    /// gradients are routed through.
    fn once_differentiable(&self) -> (TokenStream, TokenStream, TokenStream) {
        let (loc, krate) = (self.loc, self.krate);
        if !self.once {
            return (
                quote_spanned!(loc=> ),
                quote_spanned!(loc=> ),
                quote_spanned!(loc=> ),
            );
        }
        let grads_iter = self.grads_iter();
        (
            quote_spanned! {loc=>
                // B36: the backward runs under no_grad; with create_graph its results are routed
                // through an `Error` node so that differentiating them again fails.
                let __create_graph = #krate::is_grad_enabled();
                let __no_grad = #krate::no_grad();
                let __wrap = __create_graph
                    && #grads_iter.any(|__g| __g.is_some_and(#krate::Tensor::requires_grad));
            },
            quote_spanned! {loc=>
                ::core::mem::drop(__no_grad);
                if __wrap {
                    let mut __leaves = ::std::vec::Vec::new();
                    let mut __aliases = ::std::vec::Vec::new();
                    for __g in __out.iter_mut().flatten() {
                        let __leaf = __g.detach();
                        __leaf.set_requires_grad(true)?;
                        *__g = __g.detach();
                        __aliases.push(::core::clone::Clone::clone(&*__g));
                        __leaves.push(__leaf);
                    }
                    let __leaf_refs: ::std::vec::Vec<&#krate::Tensor> = __leaves.iter().collect();
                    if let ::core::option::Option::Some(__edges) =
                        #krate::__private::next_edges(&__leaf_refs)
                    {
                        let __alias_refs: ::std::vec::Vec<&#krate::Tensor> = __aliases.iter().collect();
                        let _ = #krate::__private::record_node(__edges, &__alias_refs, |_| {
                            __AutogradDelayedError
                        });
                    }
                }
            },
            quote_spanned! {loc=>
                struct __AutogradDelayedError;

                impl #krate::__private::Backward for __AutogradDelayedError {
                    const NAME: &'static str = "Error";

                    fn backward(
                        &self,
                        _meta: &#krate::NodeMeta,
                        _grads: #krate::__private::GradVec,
                    ) -> #krate::Result<#krate::__private::GradVec> {
                        ::core::result::Result::Err(#krate::Error::OnceDifferentiable)
                    }
                }
            },
        )
    }
}

pub(super) fn node(
    loc: Span,
    krate: &Path,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    fwd_path: &Path,
    bwd: &BackwardFn<'_>,
    slots: &[Slot<'_>],
) -> TokenStream {
    let plan = NodePlan {
        loc,
        krate,
        args,
        fwd,
        fwd_path,
        bwd,
        slots,
        saved: quote_spanned!(loc=> #krate::SavedTensor),
        materialize: args.materialize_grads(),
        once: args.once_differentiable.is_some(),
        vec_output: fwd.output.vec,
        grads: (0..bwd.grads.len())
            .map(|i| format_ident!("__grad_{}", i, span = loc))
            .collect(),
        results: (0..bwd.output.grads.len())
            .map(|i| format_ident!("__r{}", i, span = loc))
            .collect(),
        has_vec: bwd
            .output
            .grads
            .iter()
            .any(|(_, k)| matches!(k, GradType::VecTensor | GradType::VecOptionTensor)),
    };
    let name = args
        .name
        .as_ref()
        .map_or_else(|| fwd.default_node_name(), |n| n.value());
    let materialize = plan.materialize;
    let saved = &plan.saved;
    let fields = plan.fields();
    let releases = plan.releases();
    let visits = plan.visits();
    let take_grads = plan.take_grads();
    let (grad_prep, grad_args) = plan.grad_args();
    let unpacked = plan.unpacked();
    let needs_list = plan.needs_list();
    let attr_args = plan.attr_args();
    let saved_args = plan.saved_args();
    let bw_ident = bwd.ident;
    let unwrap = plan.unwrap();
    let destructure = plan.destructure();
    let collect_out = plan.collect_out();
    let (once_prologue, once_epilogue, delayed_error) = plan.once_differentiable();
    let builtin = args.builtin();
    // `__out` is only modified by the once-differentiable epilogue, or pushed into.
    let allow_unused_mut =
        (!plan.once && !plan.has_vec).then(|| quote_spanned!(loc=> #[allow(unused_mut)]));

    quote_spanned! {loc=>
        struct __AutogradNode {
            #(#fields,)*
        }

        impl #krate::__private::Backward for __AutogradNode {
            const NAME: &'static str = #name;
            const SKIP_IF_NO_GRAD: bool = #builtin;
            const MATERIALIZE_GRADS: bool = #materialize;

            fn backward(
                &self,
                _meta: &#krate::NodeMeta,
                grads: #krate::__private::GradVec,
            ) -> #krate::Result<#krate::__private::GradVec> {
                #take_grads
                #once_prologue
                #unpacked
                #needs_list
                #attr_args
                #grad_prep
                let __result = #bw_ident(#(#grad_args,)* #(#saved_args),*);
                #unwrap
                #destructure
                #allow_unused_mut
                #collect_out
                #once_epilogue
                ::core::result::Result::Ok(__out)
            }

            fn release(&self) {
                #releases
            }

            fn visit_saved(&self, __visit: &mut dyn ::core::ops::FnMut(&str, &#saved)) {
                let _ = &__visit;
                #visits
            }
        }

        #delayed_error
    }
}
