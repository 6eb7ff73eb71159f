//! The hidden backward: each live op's rule applied to its result's gradient in reverse order,
//! accumulating the operands' gradients; or, when only the results have incoming gradients and
//! the body is fusable, one generated kernel.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::Ident;

use super::super::fusion::{self, Fusion};
use super::plan::DerivedPlan;
use super::values::{backward_grad, backward_needs, reads_given, reference, rule_path};
use crate::ir::ParamKind;
use crate::ir::body::{Op, Step};

impl DerivedPlan<'_> {
    /// Backward parameters: the incoming gradients, `needs_input_grad`, the attributes the
    /// steps use, and the kept values. Its body binds each value to what was kept of it, seeds
    /// the gradients, and applies the live ops' rules in reverse order.
    pub(super) fn backward(&self) -> TokenStream {
        let (krate, fwd, body, private) = (self.krate, self.fwd, self.body, &self.private);
        let (tensor, m, live) = (&self.tensor, self.m, &self.live);
        let hidden_backward = &self.hidden_backward;
        let grads = self.grads();
        let n_inputs = fwd.tensor_inputs().count();
        let live_ops = self.live_ops();
        let attr_params = self.attrs.iter().map(|(i, t)| quote!(#i: #t));
        let results: Vec<Ident> = (m..self.n_outputs)
            .map(|i| format_ident!("result_{}", i))
            .collect();
        let input_needs = (0..body.vars.len()).filter_map(|v| {
            let i = body.vars[v].input?;
            let n = backward_needs(v);
            Some(quote!(let #n: bool = needs_input_grad[#i];))
        });
        let op_needs = live_ops.iter().map(|op| {
            let n = backward_needs(op.result);
            let from = op.tensors.iter().map(|&t| backward_needs(t));
            quote!(let #n: bool = false #(|| #from)*;)
        });
        let scalar_steps = body.stmts.iter().filter_map(|s| match s {
            Step::Scalar(t) => Some(t),
            Step::Op(_) => None,
        });
        // Each value, bound to what was kept of it.
        let bind_kept = self.kept.iter().zip(&results).map(|(&v, r)| {
            let ident = &body.vars[v].ident;
            quote!(let #ident: &#tensor = #r;)
        });
        // Gradients: seeded by the gradients that reach the node's outputs (a kept value
        // receives one only in a double backward, through a rule that read it).
        let grad_locals = self.kept.iter().zip(&grads[m..]).map(|(&v, gk)| {
            let g = backward_grad(v);
            let seeds = body
                .outputs
                .iter()
                .zip(&grads)
                .filter(|&(&o, _)| o == v)
                .map(|(_, gj)| gj);
            quote! {
                let mut #g: ::core::option::Option<#tensor> = #gk.cloned();
                #(#g = #private::accumulate(#g, #seeds.cloned())?;)*
            }
        });
        let rules = live_ops
            .iter()
            .rev()
            .filter(|op| !op.tensors.is_empty())
            .map(|op| self.apply_rule(op));
        let input_grads: Vec<TokenStream> = fwd
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_)))
            .map(|p| {
                match body
                    .vars
                    .iter()
                    .position(|v| v.ident == *p.ident && v.input.is_some())
                {
                    Some(v) if live[v] => backward_grad(v).into_token_stream(),
                    _ => quote!(::core::option::Option::None),
                }
            })
            .collect();
        let nones = (0..n_inputs).map(|_| quote!(::core::option::Option::None));
        let (bwd_ret, bwd_value, bwd_none) = if n_inputs == 1 {
            (
                quote!(::core::option::Option<#tensor>),
                quote!(#(#input_grads)*),
                quote!(#(#nones)*),
            )
        } else {
            let opt = (0..n_inputs).map(|_| quote!(::core::option::Option<#tensor>));
            (
                quote!((#(#opt,)*)),
                quote!((#(#input_grads,)*)),
                quote!((#(#nones,)*)),
            )
        };
        let fused = match &self.fusion {
            Some(fusion) => {
                let taken = (0..n_inputs).map(|i| quote!(__fg[#i].take()));
                let value = if n_inputs == 1 {
                    quote!(#(#taken)*)
                } else {
                    quote!((#(#taken,)*))
                };
                self.fusion_backward(fusion, &value)
            }
            None => TokenStream::new(),
        };
        // Generated code: unused flags, `mut` locals a rule never updates, and parenthesised
        // scalars are expected here.
        quote! {
            #[doc(hidden)]
            #[allow(unused_variables, unused_mut, unused_parens, non_snake_case, clippy::all)]
            fn #hidden_backward(
                #(#grads: ::core::option::Option<&#tensor>,)*
                needs_input_grad: [bool; #n_inputs],
                #(#attr_params,)*
                #(#results: &#tensor,)*
            ) -> #krate::Result<#bwd_ret> {
                if true #(&& #grads.is_none())* {
                    return ::core::result::Result::Ok(#bwd_none);
                }
                #(#scalar_steps)*
                #(#input_needs)*
                #(#op_needs)*
                #(#bind_kept)*
                #fused
                #(#grad_locals)*
                #(#rules)*
                ::core::result::Result::Ok(#bwd_value)
            }
        }
    }

    /// The backward's fused attempt, when only the results have incoming gradients: the values
    /// the rules would read as themselves (given what needs a gradient now, which the forward's
    /// keeping covered) go to one kernel with the results' gradients. Returns early when it ran.
    pub(super) fn fusion_backward(
        &self,
        fusion: &Fusion,
        bwd_ret_value: &TokenStream,
    ) -> TokenStream {
        let (krate, body, private) = (self.krate, self.body, &self.private);
        let rt = quote!(#private::fusion);
        let read = quote!(#private::Read);
        let program = fusion::program(krate, body, fusion);
        let grads = self.grads();
        let (result_grads, kept_grads) = grads.split_at(self.m);
        let values = (0..body.vars.len()).map(|v| {
            if self.kept.contains(&v) {
                let ident = &body.vars[v].ident;
                let r = reads_given(krate, self.fwd.ident, body, &self.live, v, backward_needs);
                quote! {
                    if (#r) == #read::Value {
                        ::core::option::Option::Some(#ident)
                    } else {
                        ::core::option::Option::None
                    }
                }
            } else {
                quote!(::core::option::Option::None)
            }
        });
        let scalars = &fusion.scalars;
        let like = match fusion.reduced {
            Some(v) => {
                let ident = &body.vars[v].ident;
                quote!(::core::option::Option::Some(#ident))
            }
            None => quote!(::core::option::Option::None),
        };
        quote! {
            if true #(&& #kept_grads.is_none())*
                && [#(#result_grads),*].iter().flatten().next().is_some_and(|g| #rt::fuses_on(g))
            {
                #program
                let __values: [::core::option::Option<&#krate::Tensor>; _] = [#(#values),*];
                if let ::core::option::Option::Some(mut __fg) = #rt::backward(
                    &__AUTOGRAD_FUSION,
                    &[#(#scalars),*],
                    &__values,
                    &[#(#result_grads),*],
                    &needs_input_grad,
                    #like,
                )? {
                    return ::core::result::Result::Ok(#bwd_ret_value);
                }
            }
        }
    }

    /// `grad_{i}`: the backward's incoming gradients (the results', then one per kept value).
    pub(super) fn grads(&self) -> Vec<Ident> {
        (0..self.n_outputs)
            .map(|i| format_ident!("grad_{}", i))
            .collect()
    }

    /// The rule of one live op, applied to the gradient of its result.
    pub(super) fn apply_rule(&self, op: &Op) -> TokenStream {
        let (krate, body) = (self.krate, self.body);
        let accumulate = quote!(#krate::__private::accumulate);
        let g = backward_grad(op.result);
        let path = rule_path(krate, self.fwd.ident, op);
        let operands = op.tensors.iter().map(|&t| reference(body, t, true));
        let result = reference(body, op.result, true);
        let scalars = &op.scalars;
        // Builtin one-operand rules take and return one gradient; every other rule takes
        // `needs` and returns one `Option` per operand.
        let apply = if let ([x], None) = (&op.tensors[..], &op.callee) {
            let x = *x;
            let (nx, gx) = (backward_needs(x), backward_grad(x));
            quote! {
                if #nx {
                    let __c = (#path.apply)(&__g, #(#operands,)* #result, #(#scalars),*)?;
                    #gx = #accumulate(#gx.take(), ::core::option::Option::Some(__c))?;
                }
            }
        } else {
            let flags = op.tensors.iter().map(|&t| backward_needs(t));
            let parts: Vec<Ident> = (0..op.tensors.len())
                .map(|i| format_ident!("__c{}", i))
                .collect();
            let adds = op.tensors.iter().zip(&parts).map(|(&t, c)| {
                let gt = backward_grad(t);
                quote!(#gt = #accumulate(#gt.take(), #c)?;)
            });
            let n = backward_needs(op.result);
            quote! {
                if #n {
                    let (#(#parts,)*) = (#path.apply)(&__g, [#(#flags),*], #(#operands,)* #result, #(#scalars),*)?;
                    #(#adds)*
                }
            }
        };
        quote! {
            if let ::core::option::Option::Some(__g) = #g.take() {
                #apply
            }
        }
    }
}
