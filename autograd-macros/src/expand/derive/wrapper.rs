//! What the user's name becomes: `f` itself, calling the hidden forward, and `__autograd_f_rule`,
//! the rule other derived bodies call `f` through.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Path};

use super::doc::doc_section;
use super::hidden_names;
use super::plan::DerivedPlan;
use crate::ir::{DiffFn, ParamKind};

impl DerivedPlan<'_> {
    /// `f` itself: calls the hidden forward and returns its results.
    pub(super) fn wrapper(&self, node: &str) -> TokenStream {
        let (fwd, func, hidden) = (self.fwd, self.func, &self.hidden);
        let attrs_out = &func.attrs;
        let vis = &func.vis;
        let ident = fwd.ident;
        let inputs = &func.sig.inputs;
        let user_ret = fwd.output.original;
        let args = fwd.params.iter().map(|p| p.ident);
        let call = quote!(#hidden(#(#args),*));
        let picked: Vec<TokenStream> = (0..self.m)
            .map(|j| {
                let j = syn::Index::from(j);
                quote!(__outputs.#j)
            })
            .collect();
        let value = if fwd.output.tuple {
            quote!((#(#picked,)*))
        } else {
            quote!(#(#picked)*)
        };
        // An infallible function's ops are operators, which panic on error; so does it.
        let wrapper_body = if fwd.output.fallible {
            quote! {
                let __outputs = #call?;
                ::core::result::Result::Ok(#value)
            }
        } else {
            quote! {
                match #call {
                    ::core::result::Result::Ok(__outputs) => #value,
                    ::core::result::Result::Err(__e) => ::core::panic!("{}", __e),
                }
            }
        };
        let doc = doc_section(node, fwd, self.body)
            .into_iter()
            .map(|line| quote!(#[doc = #line]));
        quote! {
            #(#attrs_out)*
            #(#doc)*
            #vis fn #ident(#inputs) #user_ret {
                #wrapper_body
            }
        }
    }

    /// `__autograd_f_rule`; a function of several results is not called from derived bodies
    /// yet: no rule.
    pub(super) fn rule(&self) -> TokenStream {
        if self.m == 1 {
            own_rule(
                self.krate,
                self.fwd,
                &self.func.vis,
                &self.attrs,
                self.kept.len(),
            )
        } else {
            TokenStream::new()
        }
    }
}

/// `__autograd_f_rule` of a derived `f`, for derived bodies that call it. The caller keeps only
/// `f`'s inputs (and its attributes); the rule runs `f`'s hidden forward again to get what `f`'s
/// own backward reads, then that backward. Under `create_graph` the forward records its node
/// again, so the gradient it returns is differentiable through it.
fn own_rule(
    krate: &Path,
    fwd: &DiffFn<'_>,
    vis: &syn::Visibility,
    backward_attrs: &[(&Ident, &syn::Type)],
    kept: usize,
) -> TokenStream {
    if !fwd.original.generics.params.is_empty() {
        return TokenStream::new();
    }
    let (hidden, hidden_backward) = hidden_names(fwd.ident);
    let rule = crate::expand::rule::rule_name(fwd.ident);
    let tensor = quote!(#krate::Tensor);
    let private = quote!(#krate::__private);
    let tensors: Vec<&Ident> = fwd.tensor_inputs().map(|p| p.ident).collect();
    let attrs: Vec<(&Ident, &syn::Type)> = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| (p.ident, p.ty))
        .collect();
    let n = tensors.len();
    let positions = 0..n;
    let tensor_tys = (0..n).map(|_| quote!(&#tensor));
    let grad_tys: Vec<TokenStream> = (0..n)
        .map(|_| quote!(::core::option::Option<#tensor>))
        .collect();
    let attr_tys = attrs.iter().map(|(_, t)| t);
    let attr_idents = attrs.iter().map(|(i, _)| i);
    let used = |i: &Ident| backward_attrs.iter().any(|(b, _)| *b == i);
    let forward_args = fwd.params.iter().map(|p| {
        let ident = p.ident;
        if p.kind == ParamKind::Attr && used(ident) {
            quote!(::core::clone::Clone::clone(&#ident))
        } else {
            quote!(#ident)
        }
    });
    let backward_attr_args = backward_attrs.iter().map(|(i, _)| i);
    let kept_locals: Vec<Ident> = (1..=kept).map(|k| format_ident!("__k{}", k)).collect();
    let nones = (0..kept).map(|_| quote!(::core::option::Option::None));
    let value = if n == 1 {
        quote!((__grads,))
    } else {
        quote!(__grads)
    };
    let reads = (0..n).map(|_| quote!(#private::Read::Value));
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code, unused_variables, clippy::all)]
        #vis const #rule: #private::Rule<
            fn(&#tensor, [bool; #n], #(#tensor_tys,)* &#tensor, #(#attr_tys),*)
                -> #krate::Result<(#(#grad_tys,)*)>
        > = #private::Rule {
            reads: #private::Reads { operands: &[#(#reads),*], result: false, value_for: &[] },
            apply: |__grad, __needs, #(#tensors,)* __result, #(#attr_idents),*| {
                #(let #tensors = &#private::needing_grad(#tensors, __needs[#positions])?;)*
                let (_, #(#kept_locals,)*) = #hidden(#(#forward_args),*)?;
                let __grads = #hidden_backward(
                    ::core::option::Option::Some(__grad),
                    #(#nones,)*
                    __needs,
                    #(#backward_attr_args,)*
                    #(&#kept_locals,)*
                )?;
                ::core::result::Result::Ok(#value)
            },
        };
    }
}
