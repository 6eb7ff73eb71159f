//! The hidden forward: every step as written, with whether each value will need a gradient and
//! what is kept of it; or, for a fusable body, one generated kernel where it runs.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::super::fusion::{self, Fusion};
use super::plan::DerivedPlan;
use super::values::{forward_needs, run_op};
use crate::ir::body::Step;

impl DerivedPlan<'_> {
    /// Forward: every step as written, each followed by whether its value will need a gradient,
    /// and each intermediate kept (a dead one dropped) after its last use; then the inputs and
    /// the results are kept. Returns the results and the kept values.
    pub(super) fn forward(&self) -> TokenStream {
        let (krate, body) = (self.krate, self.body);
        let hidden = &self.hidden;
        let input_needs_fwd = (0..body.vars.len())
            .filter(|&v| body.vars[v].input.is_some())
            .map(|v| {
                let (ident, n) = (&body.vars[v].ident, forward_needs(v));
                quote!(let #n: bool = #ident.requires_grad();)
            });
        let keep_inputs = self.keep_inputs();
        // A fusable body's scalar `let`s run first (they read no intermediate), then the fused
        // kernel is asked for; the ops run one by one where it declines.
        let (hoisted, fused) = match &self.fusion {
            Some(fusion) => {
                let scalars = body.stmts.iter().filter_map(|s| match s {
                    Step::Scalar(t) => Some(t.clone()),
                    Step::Op(_) => None,
                });
                (scalars.collect(), self.fusion_forward(fusion))
            }
            None => (Vec::new(), TokenStream::new()),
        };
        let fwd_steps = body
            .stmts
            .iter()
            .enumerate()
            .filter(|(_, s)| self.fusion.is_none() || matches!(s, Step::Op(_)))
            .map(|(i, s)| self.forward_step(i, s));
        // Each returned value is kept once (it may be returned twice).
        let (keep_outputs, out_idents) = self.keep_results();
        let kept_locals: Vec<Ident> = self.kept.iter().map(|&v| Self::keep_local(v)).collect();
        let tensors_ty = (0..self.n_outputs).map(|_| &self.tensor);
        let tuple_ty = quote!((#(#tensors_ty,)*));
        let inputs = &self.func.sig.inputs;
        // The lints are the user's to hear about on their own function; the copy here would repeat
        // them (`unused_variables` for a scalar `let` only the backward reads).
        quote! {
            #[doc(hidden)]
            #[allow(unused_variables, clippy::all)]
            fn #hidden(#inputs) -> #krate::Result<#tuple_ty> {
                #(#input_needs_fwd)*
                #(#hoisted)*
                #fused
                #(#fwd_steps)*
                #(#keep_inputs)*
                #(#keep_outputs)*
                ::core::result::Result::Ok((#(#out_idents,)* #(#kept_locals,)*))
            }
        }
    }

    /// The forward's fused attempt: every op's needs flag, which values to compute (the
    /// results, and the intermediates the backward keeps as themselves), one kernel, then what
    /// is kept of each value, as the op-by-op path keeps it. Returns early when it ran.
    pub(super) fn fusion_forward(&self, fusion: &Fusion) -> TokenStream {
        let (krate, body, private) = (self.krate, self.body, &self.private);
        let rt = quote!(#private::fusion);
        let read = quote!(#private::Read);
        let program = fusion::program(krate, body, fusion);
        let needs = body.ops().map(|op| {
            let n = forward_needs(op.result);
            let from = op.tensors.iter().map(|&t| forward_needs(t));
            quote!(let #n: bool = false #(|| #from)*;)
        });
        // What the backward reads of each kept intermediate, computed once.
        let is_intermediate =
            |v: &usize| body.vars[*v].input.is_none() && !body.outputs.contains(v);
        let read_local = |v: usize| format_ident!("__autograd_read{}", v);
        let reads = self.kept.iter().filter(|v| is_intermediate(v)).map(|&v| {
            let (local, r) = (read_local(v), &self.reads[v]);
            quote!(let #local: #read = #r;)
        });
        let want = (0..body.vars.len()).map(|v| {
            if body.outputs.contains(&v) {
                quote!(true)
            } else if is_intermediate(&v) && self.kept.contains(&v) {
                let local = read_local(v);
                quote!(#local == #read::Value)
            } else {
                quote!(false)
            }
        });
        let mut inputs: Vec<(usize, &Ident)> = body
            .vars
            .iter()
            .filter_map(|v| Some((v.input?, &v.ident)))
            .collect();
        inputs.sort_by_key(|&(k, _)| k);
        let input_idents: Vec<&Ident> = inputs.iter().map(|&(_, i)| i).collect();
        let like = input_idents[0];
        let scalars = &fusion.scalars;
        let take_outputs = self.returned().into_iter().map(|v| {
            let ident = &body.vars[v].ident;
            quote!(let #ident: #krate::Tensor = #rt::take_value(&mut __fv, #v)?;)
        });
        let keep_inputs = self.keep_inputs();
        let keep_intermediates = self.kept.iter().filter(|v| is_intermediate(v)).map(|&v| {
            let (local, read) = (Self::keep_local(v), read_local(v));
            quote!(let #local = #rt::keep_value(&mut __fv, #v, #read, #like)?;)
        });
        let (keep_outputs, out_idents) = self.keep_results();
        let kept_locals = self.kept.iter().map(|&v| Self::keep_local(v));
        quote! {
            if #rt::fuses_on(#like) {
                #program
                #(#needs)*
                #(#reads)*
                let __want = [#(#want),*];
                if let ::core::option::Option::Some(mut __fv) = #rt::forward(
                    &__AUTOGRAD_FUSION,
                    &[#(#input_idents),*],
                    &[#(#scalars),*],
                    &__want,
                )? {
                    #(#take_outputs)*
                    #(#keep_inputs)*
                    #(#keep_intermediates)*
                    #(#keep_outputs)*
                    return ::core::result::Result::Ok((#(#out_idents,)* #(#kept_locals,)*));
                }
            }
        }
    }

    /// Step `i` of the forward: the op, whether its value will need a gradient, and what is
    /// kept or dropped after it.
    pub(super) fn forward_step(&self, i: usize, s: &Step) -> TokenStream {
        let (body, private, live) = (self.body, &self.private, &self.live);
        let (step, op) = match s {
            Step::Scalar(t) => return t.clone(),
            Step::Op(op) => (run_op(body, op), op),
        };
        let n = forward_needs(op.result);
        let from = op.tensors.iter().map(|&t| forward_needs(t));
        let needs = quote!(let #n: bool = false #(|| #from)*;);
        let keeps = self
            .kept
            .iter()
            .filter(|&&v| {
                !body.outputs.contains(&v)
                    && body.vars[v].input.is_none()
                    && self.last_use[v] == Some(i)
            })
            .map(|&v| {
                let (ident, local, read) =
                    (&body.vars[v].ident, Self::keep_local(v), &self.reads[v]);
                quote!(let #local = #private::keep(#ident, #read)?;)
            });
        let drops = (0..body.vars.len())
            .filter(|&v| !live[v] && body.vars[v].input.is_none() && self.last_use[v] == Some(i))
            .map(|v| {
                let ident = &body.vars[v].ident;
                quote!(::core::mem::drop(#ident);)
            });
        quote!(#step #needs #(#keeps)* #(#drops)*)
    }
}
