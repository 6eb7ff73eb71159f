//! The graph node a backward becomes: a struct holding what the backward names, and its
//! `Backward` impl, which unpacks the saved values, calls the user's backward and maps its
//! gradients into a `GradVec`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::Path;

use super::{Slot, SlotKind};
use crate::attr::DiffArgs;
use crate::ir::{BackwardFn, DiffFn, GradType};

pub(super) fn node(
    loc: Span,
    krate: &Path,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    bwd: &BackwardFn<'_>,
    slots: &[Slot<'_>],
) -> TokenStream {
    let name = args
        .name
        .as_ref()
        .map_or_else(|| fwd.default_node_name(), |n| n.value());
    let materialize = args.materialize_grads();
    let once = args.once_differentiable.is_some();

    let fields = slots.iter().map(|s| {
        let field = &s.field;
        match &s.kind {
            SlotKind::Attr { ty, .. } => quote_spanned!(loc=> #field: #ty),
            SlotKind::Input { .. } | SlotKind::Output { .. } => {
                quote_spanned!(loc=> #field: #krate::SavedTensor)
            }
        }
    });
    let tensor_fields: Vec<_> = slots
        .iter()
        .filter(|s| !matches!(s.kind, SlotKind::Attr { .. }))
        .map(|s| &s.field)
        .collect();

    let grads: Vec<_> = (0..bwd.grads.len())
        .map(|i| format_ident!("__grad_{}", i))
        .collect();
    let grad_args = grads.iter().map(|g| {
        if materialize {
            quote_spanned!(loc=> ::core::option::Option::as_ref(&#g)
                .expect("invariant: `FunctionNode` materialises undefined gradients"))
        } else {
            quote_spanned!(loc=> ::core::option::Option::as_ref(&#g))
        }
    });
    let unpacked: Vec<_> = slots
        .iter()
        .filter(|s| !matches!(s.kind, SlotKind::Attr { .. }))
        .map(|s| {
            let field = &s.field;
            let local = format_ident!("{}_unpacked", field);
            quote_spanned!(loc=> let #local = self.#field.get()?;)
        })
        .collect();
    let saved_args = slots.iter().map(|s| {
        let field = &s.field;
        match &s.kind {
            SlotKind::Attr { by_ref: true, .. } => quote_spanned!(loc=> &self.#field),
            SlotKind::Attr { by_ref: false, .. } => {
                quote_spanned!(loc=> ::core::clone::Clone::clone(&self.#field))
            }
            SlotKind::Input { .. } | SlotKind::Output { .. } => {
                let local = format_ident!("{}_unpacked", field);
                quote_spanned!(loc=> &#local)
            }
        }
    });
    let bw_ident = bwd.ident;

    let unwrap = bwd.output.fallible.then(|| {
        quote_spanned! {loc=>
            let __result = match __result {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(::core::convert::Into::into(__e));
                }
            };
        }
    });
    let results: Vec<_> = (0..bwd.output.grads.len())
        .map(|i| format_ident!("__r{}", i))
        .collect();
    let destructure = if bwd.output.tuple {
        quote_spanned!(loc=> let (#(#results,)*) = __result;)
    } else {
        quote_spanned!(loc=> let #(#results)* = __result;)
    };
    let wrapped = bwd
        .output
        .grads
        .iter()
        .zip(&results)
        .map(|((_, kind), r)| match kind {
            GradType::OptionTensor => quote_spanned!(loc=> #r),
            GradType::Tensor | GradType::Other => {
                quote_spanned!(loc=> ::core::option::Option::Some(#r))
            }
        });

    let (once_prologue, once_epilogue, delayed_error) = if once {
        (
            quote_spanned! {loc=>
                // B36: the backward runs under no_grad; with create_graph its results are routed
                // through an `Error` node so that differentiating them again fails.
                let __create_graph = #krate::is_grad_enabled();
                let __no_grad = #krate::no_grad();
                let __wrap = __create_graph
                    && [#(&#grads),*].iter().any(|__g| {
                        ::core::option::Option::as_ref(__g).is_some_and(#krate::Tensor::requires_grad)
                    });
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
    } else {
        (
            quote_spanned!(loc=> ),
            quote_spanned!(loc=> ),
            quote_spanned!(loc=> ),
        )
    };
    let out_mut = once.then(|| quote_spanned!(loc=> mut));

    quote_spanned! {loc=>
        struct __AutogradNode {
            #(#fields,)*
        }

        impl #krate::__private::Backward for __AutogradNode {
            const NAME: &'static str = #name;
            const SKIP_IF_NO_GRAD: bool = false;
            const MATERIALIZE_GRADS: bool = #materialize;

            fn backward(
                &self,
                _meta: &#krate::NodeMeta,
                grads: #krate::__private::GradVec,
            ) -> #krate::Result<#krate::__private::GradVec> {
                let mut __grads = ::core::iter::IntoIterator::into_iter(grads);
                #(
                    let #grads: ::core::option::Option<#krate::Tensor> =
                        ::core::iter::Iterator::next(&mut __grads).flatten();
                )*
                #once_prologue
                #(#unpacked)*
                let __result = #bw_ident(#(#grad_args,)* #(#saved_args),*);
                #unwrap
                #destructure
                let #out_mut __out: #krate::__private::GradVec =
                    ::core::iter::Iterator::collect(::core::iter::IntoIterator::into_iter([#(#wrapped),*]));
                #once_epilogue
                ::core::result::Result::Ok(__out)
            }

            fn release(&self) {
                #(self.#tensor_fields.release();)*
            }
        }

        #delayed_error
    }
}
