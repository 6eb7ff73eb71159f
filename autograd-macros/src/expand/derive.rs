//! What `#[differentiable(derive)]` writes in place of a hand-written pair: a hidden forward that
//! runs the lowered body and returns the result followed by what the backward keeps of every
//! value (see `keep`), and a hidden backward that applies each op's `DerivativeRules` entry in
//! reverse order. The two are then expanded exactly as a `#[differentiable]` / `#[backward]`
//! pair (see `derive.rs`).
//!
//! What is kept of a value is decided by the rules that read it, at compile time: each rule
//! declares what it reads (`Reads`), and the forward keeps the value itself, a one-element
//! stand-in of its shape, or an empty tensor. The kept values are outputs of the node, so they
//! are saved and version-checked like any saved output, and a gradient that reaches one in a
//! double backward (through a rule that read it) flows back into the node, seeded at that value.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{Ident, ItemFn, Path};

use crate::ir::body::{Arg, Body, Form, Op, Step};
use crate::ir::{DiffFn, ParamKind};

/// The code of the hidden pair, before it is parsed and expanded.
pub(crate) struct Derived {
    /// `__autograd_f_derived`: returns `(result, kept values..)`.
    pub(crate) forward: TokenStream,
    /// `__autograd_f_derived_backward`.
    pub(crate) backward: TokenStream,
    /// `f` itself: calls the hidden forward and returns its first output.
    pub(crate) wrapper: TokenStream,
    /// `__autograd_f_rule`: how a derived body that calls `f` differentiates the call.
    pub(crate) rule: TokenStream,
}

/// The names of the hidden pair.
pub(crate) fn hidden_names(ident: &Ident) -> (Ident, Ident) {
    let base = syn::ext::IdentExt::unraw(ident);
    (
        format_ident!("__autograd_{}_derived", base, span = ident.span()),
        format_ident!("__autograd_{}_derived_backward", base, span = ident.span()),
    )
}

/// A tensor value as a `&Tensor` expression: in the forward, inputs are references already and
/// intermediates are owned; in the backward every value is a reference to a saved tensor.
fn reference(body: &Body, v: usize, backward: bool) -> TokenStream {
    let var = &body.vars[v];
    let ident = &var.ident;
    if backward || var.input.is_some() {
        quote!(#ident)
    } else {
        quote!((&#ident))
    }
}

/// `let v = <op as written>;`, with `?` after a method or function call where the user wrote one.
fn run_op(body: &Body, op: &Op) -> TokenStream {
    let try_ = if op.tried { quote!(?) } else { quote!() };
    let v = &body.vars[op.result].ident;
    let arg = |a: &Arg| match a {
        Arg::Tensor(t) => reference(body, *t, false),
        Arg::Scalar(s) => s.clone(),
    };
    let value = match &op.form {
        Form::Method {
            receiver,
            method,
            args,
        } => {
            let recv = reference(body, *receiver, false);
            let args = args.iter().map(arg);
            quote!(#recv.#method(#(#args),*) #try_)
        }
        Form::Binary { op: bin, lhs, rhs } => {
            let (l, r) = (arg(lhs), arg(rhs));
            let l = match lhs {
                Arg::Scalar(s) => quote!((#s)),
                Arg::Tensor(_) => l,
            };
            let r = match rhs {
                Arg::Scalar(s) => quote!((#s)),
                Arg::Tensor(_) => r,
            };
            quote!(#l #bin #r)
        }
        Form::Neg => {
            let x = reference(body, op.tensors[0], false);
            quote!(-#x)
        }
        Form::Call { func, args } => {
            let args = args.iter().map(arg);
            quote!(#func(#(#args),*) #try_)
        }
    };
    match &op.rest {
        Some(rest) => quote!(let (#v, #rest) = #value;),
        None => quote!(let #v = #value;),
    }
}

/// The identifiers a token stream mentions, to find the attributes the backward needs.
pub(crate) fn mentions(tokens: &TokenStream, ident: &Ident) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == *ident,
        proc_macro2::TokenTree::Group(g) => mentions(&g.stream(), ident),
        _ => false,
    })
}

/// The rule of `op`, spanned on the user's method, operator or function name (where a missing
/// rule is reported): `DerivativeRules::method`, or for a call of `path::f`, `path::__autograd_f_rule`.
fn rule_path(krate: &Path, op: &Op) -> TokenStream {
    let rule = &op.rule;
    match &op.callee {
        Some(path) => {
            let path = crate::expand::sibling(path, &crate::expand::rule::rule_name(rule));
            quote_spanned!(rule.span()=> #path)
        }
        None => quote_spanned!(rule.span()=> #krate::__private::DerivativeRules::#rule),
    }
}

/// The local that says, in the forward, whether value `v` will need a gradient (an input that
/// requires grad, or an op with an operand that will).
fn forward_needs(v: usize) -> Ident {
    format_ident!("__autograd_fneeds{}", v)
}

/// What the rules of the live ops read of value `v`, given which operands will need a gradient:
/// a `Read`, from each rule's `reads` declaration.
fn reads_of(krate: &Path, body: &Body, live: &[bool], v: usize) -> TokenStream {
    reads_given(krate, body, live, v, forward_needs)
}

/// [`reads_of`], with the needs flags named by `needs` (the forward's or the backward's).
fn reads_given(
    krate: &Path,
    body: &Body,
    live: &[bool],
    v: usize,
    needs: fn(usize) -> Ident,
) -> TokenStream {
    let read = quote!(#krate::__private::Read);
    let uses = body
        .ops()
        .filter(|op| live[op.result] && !op.tensors.is_empty())
        .flat_map(|op| {
            let path = rule_path(krate, op);
            let needs: Vec<Ident> = op.tensors.iter().map(|&t| needs(t)).collect();
            let operands = op
                .tensors
                .iter()
                .enumerate()
                .filter(|&(_, &t)| t == v)
                .map(|(i, _)| quote!(.max(#path.reads.operand_given(#i, &[#(#needs),*]))))
                .collect::<Vec<_>>();
            let result =
                (op.result == v).then(|| quote!(.max(#path.reads.result_given(&[#(#needs),*]))));
            operands.into_iter().chain(result).collect::<Vec<_>>()
        });
    quote!(#read::Nothing #(#uses)*)
}

/// What [`derived`] computes once from the lowered body before it emits anything: the hidden
/// names, which values are live and kept, what the rules read of each, and where each value is
/// used for the last time. Each item of the hidden pair, and each part of their bodies, is
/// then one method.
struct DerivedPlan<'a> {
    krate: &'a Path,
    fwd: &'a DiffFn<'a>,
    func: &'a ItemFn,
    body: &'a Body,
    /// `__autograd_f_derived` and `__autograd_f_derived_backward`.
    hidden: Ident,
    hidden_backward: Ident,
    tensor: TokenStream,
    private: TokenStream,
    /// Whether each value reaches a result through differentiable ops.
    live: Vec<bool>,
    /// Every live value is kept (as itself, a stand-in or an empty tensor): node output `m + k`
    /// is `kept[k]`, after the `m` results.
    kept: Vec<usize>,
    /// What the rules of the live ops read of each value (a `Read` expression).
    reads: Vec<TokenStream>,
    /// The step after which an intermediate is used for the last time: it is kept (moved)
    /// there, so a value only the forward uses is dropped as soon as it can be.
    last_use: Vec<Option<usize>>,
    /// The number of results.
    m: usize,
    /// The node's outputs: the results, then the kept values.
    n_outputs: usize,
    /// The attributes the backward's steps use.
    attrs: Vec<(&'a Ident, &'a syn::Type)>,
    /// The body as one generated kernel each way, when every op is element-wise.
    fusion: Option<super::fusion::Fusion>,
}

impl<'a> DerivedPlan<'a> {
    fn new(krate: &'a Path, fwd: &'a DiffFn<'a>, func: &'a ItemFn, body: &'a Body) -> Self {
        let (hidden, hidden_backward) = hidden_names(fwd.ident);
        let live = body.live();
        let n_vars = body.vars.len();
        let kept: Vec<usize> = (0..n_vars).filter(|&v| live[v]).collect();
        let reads = (0..n_vars)
            .map(|v| reads_of(krate, body, &live, v))
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
        let fusion = super::fusion::fusion(krate, body, &live);
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

    fn live_ops(&self) -> Vec<&'a Op> {
        self.body.ops().filter(|op| self.live[op.result]).collect()
    }

    /// The values returned, each once (a value may be returned twice).
    fn returned(&self) -> Vec<usize> {
        let mut returned = self.body.outputs.clone();
        returned.sort_unstable();
        returned.dedup();
        returned
    }

    /// `let __autograd_keep{v} = keep_ref(input, read)?;` for each kept input.
    fn keep_inputs(&self) -> Vec<TokenStream> {
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
    fn keep_results(&self) -> (Vec<TokenStream>, Vec<TokenStream>) {
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
    fn keep_local(v: usize) -> Ident {
        format_ident!("__autograd_keep{}", v)
    }

    /// Forward: every step as written, each followed by whether its value will need a gradient,
    /// and each intermediate kept (a dead one dropped) after its last use; then the inputs and
    /// the results are kept. Returns the results and the kept values.
    fn forward(&self) -> TokenStream {
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
    fn fusion_forward(&self, fusion: &super::fusion::Fusion) -> TokenStream {
        let (krate, body, private) = (self.krate, self.body, &self.private);
        let rt = quote!(#private::fusion);
        let read = quote!(#private::Read);
        let program = super::fusion::program(krate, body, fusion);
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

    /// The backward's fused attempt, when only the results have incoming gradients: the values
    /// the rules would read as themselves (given what needs a gradient now, which the forward's
    /// keeping covered) go to one kernel with the results' gradients. Returns early when it ran.
    fn fusion_backward(
        &self,
        fusion: &super::fusion::Fusion,
        bwd_ret_value: &TokenStream,
    ) -> TokenStream {
        let (krate, body, private) = (self.krate, self.body, &self.private);
        let rt = quote!(#private::fusion);
        let read = quote!(#private::Read);
        let program = super::fusion::program(krate, body, fusion);
        let grads = self.grads();
        let (result_grads, kept_grads) = grads.split_at(self.m);
        let values = (0..body.vars.len()).map(|v| {
            if self.kept.contains(&v) {
                let ident = &body.vars[v].ident;
                let r = reads_given(krate, body, &self.live, v, backward_needs);
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

    /// Step `i` of the forward: the op, whether its value will need a gradient, and what is
    /// kept or dropped after it.
    fn forward_step(&self, i: usize, s: &Step) -> TokenStream {
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

    /// `grad_{i}`: the backward's incoming gradients (the results', then one per kept value).
    fn grads(&self) -> Vec<Ident> {
        (0..self.n_outputs)
            .map(|i| format_ident!("grad_{}", i))
            .collect()
    }

    /// The rule of one live op, applied to the gradient of its result.
    fn apply_rule(&self, op: &Op) -> TokenStream {
        let (krate, body) = (self.krate, self.body);
        let accumulate = quote!(#krate::__private::accumulate);
        let g = backward_grad(op.result);
        let path = rule_path(krate, op);
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

    /// Backward parameters: the incoming gradients, `needs_input_grad`, the attributes the
    /// steps use, and the kept values. Its body binds each value to what was kept of it, seeds
    /// the gradients, and applies the live ops' rules in reverse order.
    fn backward(&self) -> TokenStream {
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

    /// `f` itself: calls the hidden forward and returns its results.
    fn wrapper(&self, node: &str) -> TokenStream {
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
    fn rule(&self) -> TokenStream {
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

/// The backward's local that says whether value `v` needs a gradient.
fn backward_needs(v: usize) -> Ident {
    format_ident!("__needs_{}", v)
}

/// The backward's local of value `v`'s gradient.
fn backward_grad(v: usize) -> Ident {
    format_ident!("__grad_{}", v)
}

pub(crate) fn derived(
    krate: &Path,
    node: &str,
    fwd: &DiffFn<'_>,
    func: &ItemFn,
    body: &Body,
) -> Derived {
    let plan = DerivedPlan::new(krate, fwd, func, body);
    Derived {
        forward: plan.forward(),
        backward: plan.backward(),
        wrapper: plan.wrapper(node),
        rule: plan.rule(),
    }
}

/// The section a derived function's rustdoc gains (as `expand::doc_section` for a hand-written
/// pair): its node, the ops its backward is derived from, its inputs, which values the node may
/// keep and which the forward alone uses, and double differentiability.
pub(crate) fn doc_section(node: &str, fwd: &DiffFn<'_>, body: &Body) -> Vec<String> {
    let live = body.live();
    // Named values by their name; the others counted (or "the result").
    let list = |vs: Vec<usize>| {
        let mut names = Vec::new();
        let mut unnamed = 0;
        for v in vs {
            match &body.vars[v].name {
                Some(name) => names.push(format!("`{}`", syn::ext::IdentExt::unraw(name))),
                None if body.outputs.contains(&v) => names.push("the result".to_string()),
                None => unnamed += 1,
            }
        }
        match unnamed {
            0 => {}
            1 => names.push("1 unnamed intermediate value".to_string()),
            n => names.push(format!("{n} unnamed intermediate values")),
        }
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.concat(),
        }
    };
    let rules: Vec<String> = body
        .ops()
        .filter(|op| !op.tensors.is_empty() && live[op.result])
        .map(|op| format!("`{}`", op.rule))
        .collect();
    let inputs: Vec<usize> = (0..body.vars.len())
        .filter(|&v| body.vars[v].input.is_some())
        .collect();
    let kept: Vec<usize> = (0..body.vars.len()).filter(|&v| live[v]).collect();
    let forward_only: Vec<usize> = (0..body.vars.len())
        .filter(|&v| !live[v] && body.vars[v].input.is_none())
        .collect();
    let mut lines = vec![
        String::new(),
        " # Autograd".to_string(),
        String::new(),
        format!(
            " A call records one `{node}` node when grad mode is on and an input requires grad. Its backward is derived by `#[differentiable(derive)]` from the body's {} differentiable ops ({}): each op's declared derivative, applied in reverse order.",
            rules.len(),
            rules.join(", ")
        ),
        String::new(),
        format!(" * Differentiable inputs: {}.", list(inputs)),
        format!(
            " * Kept for the backward: what the derivative rules read of {}: the value itself (a saved, version-checked tensor), a one-element stand-in of its shape, or nothing.",
            list(kept)
        ),
    ];
    let attrs: Vec<String> = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .map(|p| format!("`{}`", syn::ext::IdentExt::unraw(p.ident)))
        .collect();
    if !attrs.is_empty() {
        lines.push(format!(
            " * Attributes ({}): copied into the node when the backward uses them.",
            attrs.join(", ")
        ));
    }
    if !forward_only.is_empty() {
        lines.push(format!(
            " * Used by the forward only, and dropped after its last use: {}.",
            list(forward_only)
        ));
    }
    lines.push(
        " * Twice differentiable: yes, as far as the functions it calls are (the derived backward is made of differentiable ops).".to_string(),
    );
    lines
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

#[cfg(test)]
mod tests {
    use crate::ctxt::Ctxt;
    use crate::ir::DiffFn;
    use crate::ir::body::Body;

    #[test]
    fn the_doc_section_names_the_node_ops_and_values() {
        let func: syn::ItemFn = syn::parse_quote! {
            fn f(x: &Tensor, s: f64) -> Result<Tensor> {
                let t = x.tanh()?;
                let unused = x.exp()?;
                Ok(&t * s + x.sin()?)
            }
        };
        let cx = Ctxt::new();
        let fwd = DiffFn::from_syn(&cx, &func.sig);
        let body = Body::from_syn(&cx, &fwd, &func.block);
        cx.check().expect("a valid body");
        let body = body.expect("lowered");
        let doc = super::doc_section("FBackward0", &fwd, &body).join("\n");
        for part in [
            "# Autograd",
            "records one `FBackward0` node",
            "from the body's 4 differentiable ops (`tanh`, `mul_scalar`, `sin`, `add`)",
            "* Differentiable inputs: `x`.",
            "Kept for the backward: what the derivative rules read of `x`, `t`, the result and 2 unnamed intermediate values: the value itself",
            "* Attributes (`s`): copied into the node",
            "* Used by the forward only, and dropped after its last use: `unused`.",
            "* Twice differentiable: yes",
        ] {
            assert!(doc.contains(part), "{part:?} not in:\n{doc}");
        }
    }
}
