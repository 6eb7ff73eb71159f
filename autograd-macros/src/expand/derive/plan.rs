//! What [`derived`](super::derived) computes once from the lowered body: the [`DerivedPlan`],
//! and the small facts its methods share (the live ops, the returned values, what is kept of
//! the inputs and the results).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemFn, Path};

use super::super::fusion::{self, Fusion};
use super::hidden_names;
use super::values::{mentions, reads_of};
use crate::ir::body::{Body, Form, Op, Step};
use crate::ir::{DiffFn, ParamKind};

/// What [`derived`](super::derived) computes once from the lowered body before it emits
/// anything: the hidden names, which values are live and kept, what the rules read of each, and
/// where each value is used for the last time. Each item of the hidden pair, and each part of
/// their bodies, is then one method.
pub(super) struct DerivedPlan<'a> {
    pub(super) krate: &'a Path,
    pub(super) fwd: &'a DiffFn<'a>,
    pub(super) func: &'a ItemFn,
    pub(super) body: &'a Body,
    /// `__autograd_f_derived` and `__autograd_f_derived_backward`.
    pub(super) hidden: Ident,
    pub(super) hidden_backward: Ident,
    pub(super) tensor: TokenStream,
    pub(super) private: TokenStream,
    /// Whether each value reaches a result through differentiable ops.
    pub(super) live: Vec<bool>,
    /// Every live value is kept (as itself, a stand-in or an empty tensor): node output `m + k`
    /// is `kept[k]`, after the `m` results.
    pub(super) kept: Vec<usize>,
    /// What the rules of the live ops read of each value (a `Read` expression).
    pub(super) reads: Vec<TokenStream>,
    /// The step after which an intermediate is used for the last time: it is kept (moved)
    /// there, so a value only the forward uses is dropped as soon as it can be.
    pub(super) last_use: Vec<Option<usize>>,
    /// The number of results.
    pub(super) m: usize,
    /// The node's outputs: the results, then the kept values.
    pub(super) n_outputs: usize,
    /// The attributes the backward's steps use.
    pub(super) attrs: Vec<(&'a Ident, &'a syn::Type)>,
    /// The body as one generated kernel each way, when every op is element-wise.
    pub(super) fusion: Option<Fusion>,
}

impl<'a> DerivedPlan<'a> {
    pub(super) fn new(
        krate: &'a Path,
        fwd: &'a DiffFn<'a>,
        func: &'a ItemFn,
        body: &'a Body,
    ) -> Self {
        let (hidden, hidden_backward) = hidden_names(fwd.ident);
        let live = body.live();
        let n_vars = body.vars.len();
        let kept: Vec<usize> = (0..n_vars).filter(|&v| live[v]).collect();
        let reads = (0..n_vars)
            .map(|v| reads_of(krate, fwd.ident, body, &live, v))
            .collect();
        let mut last_use = vec![None; n_vars];
        for (i, s) in body.stmts.iter().enumerate() {
            if let Step::Op(op) = s {
                last_use[op.result] = Some(i);
                for &t in &op.tensors {
                    last_use[t] = Some(i);
                }
                // The receiver of a constant (`detach`) is read too, though not an operand.
                if let Form::Method { receiver, .. } = op.form {
                    last_use[receiver] = Some(i);
                }
            }
        }
        let m = body.outputs.len();
        let n_outputs = m + kept.len();
        // The attributes that the scalar steps, or the scalar arguments of a live op, mention.
        let scalar_tokens: Vec<&TokenStream> = body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Step::Scalar(t) => Some(t),
                Step::Op(_) => None,
            })
            .chain(
                body.ops()
                    .filter(|op| live[op.result])
                    .flat_map(|op| &op.scalars),
            )
            .collect();
        let attrs = fwd
            .params
            .iter()
            .filter(|p| p.kind == ParamKind::Attr)
            .filter(|p| scalar_tokens.iter().any(|t| mentions(t, p.ident)))
            .map(|p| (p.ident, p.ty))
            .collect();
        let fusion = fusion::fusion(krate, body, &live);
        DerivedPlan {
            fusion,
            krate,
            fwd,
            func,
            body,
            hidden,
            hidden_backward,
            tensor: quote!(#krate::Tensor),
            private: quote!(#krate::__private),
            live,
            kept,
            reads,
            last_use,
            m,
            n_outputs,
            attrs,
        }
    }

    pub(super) fn live_ops(&self) -> Vec<&'a Op> {
        self.body.ops().filter(|op| self.live[op.result]).collect()
    }

    /// The values returned, each once (a value may be returned twice).
    pub(super) fn returned(&self) -> Vec<usize> {
        let mut returned = self.body.outputs.clone();
        returned.sort_unstable();
        returned.dedup();
        returned
    }

    /// `let __autograd_keep{v} = keep_ref(input, read)?;` for each kept input.
    pub(super) fn keep_inputs(&self) -> Vec<TokenStream> {
        let (body, private) = (self.body, &self.private);
        self.kept
            .iter()
            .filter(|&&v| body.vars[v].input.is_some())
            .map(|&v| {
                let (ident, local, read) =
                    (&body.vars[v].ident, Self::keep_local(v), &self.reads[v]);
                quote!(let #local = #private::keep_ref(#ident, #read)?;)
            })
            .collect()
    }

    /// What is kept of each returned value, and the results themselves (a value returned twice
    /// is returned as two handles: the node aliases the second).
    pub(super) fn keep_results(&self) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let (body, private) = (self.body, &self.private);
        let keep = self
            .returned()
            .into_iter()
            .map(|v| {
                let (ident, local, read) =
                    (&body.vars[v].ident, Self::keep_local(v), &self.reads[v]);
                quote!(let #local = #private::keep_ref(&#ident, #read)?;)
            })
            .collect();
        let results = body
            .outputs
            .iter()
            .map(|&v| {
                let ident = &body.vars[v].ident;
                quote!(::core::clone::Clone::clone(&#ident))
            })
            .collect();
        (keep, results)
    }

    /// `__autograd_keep{v}`: what the forward keeps of value `v`.
    pub(super) fn keep_local(v: usize) -> Ident {
        format_ident!("__autograd_keep{}", v)
    }
}
