//! What `#[differentiable(derive)]` writes in place of a hand-written pair: a hidden forward that
//! runs the lowered body and returns the result with the intermediates the backward needs, and
//! a hidden backward that applies each op's `DerivativeRules` entry in reverse order. The two are
//! then expanded exactly as a `#[differentiable]` / `#[backward]` pair (see `derive.rs`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::{Ident, ItemFn, Path};

use crate::ir::body::{Arg, Body, Form, Op, Step};
use crate::ir::{DiffFn, ParamKind};

/// The code of the hidden pair, before it is parsed and expanded.
pub(crate) struct Derived {
    /// `__autograd_f_derived`: returns `(result, residuals..)`.
    pub(crate) forward: TokenStream,
    /// `__autograd_f_derived_backward`.
    pub(crate) backward: TokenStream,
    /// `f` itself: calls the hidden forward and returns its first output.
    pub(crate) wrapper: TokenStream,
    /// How many residuals the forward returns after the result.
    pub(crate) residuals: usize,
}

/// The names of the hidden pair.
pub(crate) fn hidden_names(ident: &Ident) -> (Ident, Ident) {
    let base = syn::ext::IdentExt::unraw(ident);
    (
        format_ident!("__autograd_{}_derived", base, span = ident.span()),
        format_ident!("__autograd_{}_derived_backward", base, span = ident.span()),
    )
}

/// A tensor value as a `&Tensor` expression: inputs are references already.
fn reference(body: &Body, v: usize) -> TokenStream {
    let var = &body.vars[v];
    let ident = &var.ident;
    if var.input.is_some() {
        quote!(#ident)
    } else {
        quote!((&#ident))
    }
}

/// `let v = <op as written>;`; `try_` follows each method call (`?` where the caller returns a
/// `Result`).
fn run_op(body: &Body, op: &Op, try_: &TokenStream) -> TokenStream {
    let v = &body.vars[op.result].ident;
    let arg = |a: &Arg| match a {
        Arg::Tensor(t) => reference(body, *t),
        Arg::Scalar(s) => s.clone(),
    };
    let value = match &op.form {
        Form::Method { method, args } => {
            let recv = reference(body, op.tensors[0]);
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
            let x = reference(body, op.tensors[0]);
            quote!(-#x)
        }
    };
    quote!(let #v = #value;)
}

/// The identifiers a token stream mentions, to find the attributes the backward needs.
fn mentions(tokens: &TokenStream, ident: &Ident) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == *ident,
        proc_macro2::TokenTree::Group(g) => mentions(&g.stream(), ident),
        _ => false,
    })
}

pub(crate) fn derived(krate: &Path, fwd: &DiffFn<'_>, func: &ItemFn, body: &Body) -> Derived {
    let (hidden, hidden_backward) = hidden_names(fwd.ident);
    let tensor = quote!(#krate::Tensor);
    let fallible = fwd.output.fallible;
    let live = body.live();
    let out = body.output;

    // Forward: every step as written; returns the result, then each live intermediate.
    let try_fwd = if fallible { quote!(?) } else { quote!() };
    let fwd_steps = body.stmts.iter().map(|s| match s {
        Step::Scalar(t) => t.clone(),
        Step::Op(op) => run_op(body, op, &try_fwd),
    });
    let residuals: Vec<usize> = body
        .ops()
        .map(|op| op.result)
        .filter(|&v| live[v] && v != out)
        .collect();
    let out_ident = &body.vars[out].ident;
    let residual_idents: Vec<&Ident> = residuals.iter().map(|&v| &body.vars[v].ident).collect();
    let n_outputs = 1 + residuals.len();
    let tensors_ty = (0..n_outputs).map(|_| &tensor);
    let tuple_ty = quote!((#(#tensors_ty,)*));
    let (ret, value) = if fallible {
        (
            quote!(#krate::Result<#tuple_ty>),
            quote!(::core::result::Result::Ok((#out_ident, #(#residual_idents,)*))),
        )
    } else {
        (tuple_ty, quote!((#out_ident, #(#residual_idents,)*)))
    };
    let inputs = &func.sig.inputs;
    // The lints are the user's to hear about on their own function; the copy here would repeat
    // them (`unused_variables` for a scalar `let` only the backward reads).
    let forward = quote! {
        #[doc(hidden)]
        #[allow(unused_variables, clippy::all)]
        fn #hidden(#inputs) -> #ret {
            #(#fwd_steps)*
            #value
        }
    };

    // Backward parameters: incoming gradients (the result's; the residuals' are ignored),
    // `needs_input_grad`, the inputs and attributes the steps use, and the saved outputs.
    let grads: Vec<Ident> = (0..n_outputs)
        .map(|i| format_ident!("grad_{}", i))
        .collect();
    let ignored = &grads[1..];
    let n_inputs = fwd.tensor_inputs().count();
    let live_ops: Vec<&Op> = body.ops().filter(|op| live[op.result]).collect();
    let used_inputs: Vec<usize> = (0..body.vars.len())
        .filter(|&v| body.vars[v].input.is_some() && live[v] && v != out)
        .collect();
    let scalar_tokens: Vec<&TokenStream> = body
        .stmts
        .iter()
        .filter_map(|s| match s {
            Step::Scalar(t) => Some(t),
            Step::Op(_) => None,
        })
        .chain(live_ops.iter().flat_map(|op| &op.scalars))
        .collect();
    let attrs: Vec<(&Ident, &syn::Type)> = fwd
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Attr)
        .filter(|p| scalar_tokens.iter().any(|t| mentions(t, p.ident)))
        .map(|p| (p.ident, p.ty))
        .collect();
    let input_params = used_inputs.iter().map(|&v| {
        let ident = &body.vars[v].ident;
        quote!(#ident: &#tensor)
    });
    let attr_params = attrs.iter().map(|(i, t)| quote!(#i: #t));
    let results: Vec<Ident> = (0..n_outputs)
        .map(|i| format_ident!("result_{}", i))
        .collect();

    let needs = |v: usize| format_ident!("__needs_{}", v);
    let grad = |v: usize| format_ident!("__grad_{}", v);
    let input_needs = (0..body.vars.len()).filter_map(|v| {
        let i = body.vars[v].input?;
        let n = needs(v);
        Some(quote!(let #n: bool = needs_input_grad[#i];))
    });
    let op_needs = live_ops.iter().map(|op| {
        let n = needs(op.result);
        let from = op.tensors.iter().map(|&t| needs(t));
        quote!(let #n: bool = false #(|| #from)*;)
    });
    let scalar_steps = body.stmts.iter().filter_map(|s| match s {
        Step::Scalar(t) => Some(t),
        Step::Op(_) => None,
    });
    // The intermediates: replayed with recording on under `create_graph`, so that the
    // backward's own graph reaches the inputs; otherwise the saved ones.
    let try_bwd = quote!(?);
    let replay = live_ops.iter().map(|op| run_op(body, op, &try_bwd));
    let bound: Vec<&Ident> = live_ops
        .iter()
        .map(|op| &body.vars[op.result].ident)
        .collect();
    let saved_values = live_ops.iter().map(|op| {
        let r = if op.result == out {
            &results[0]
        } else {
            let j = residuals
                .iter()
                .position(|&v| v == op.result)
                .expect("invariant: every live intermediate is a residual");
            &results[j + 1]
        };
        quote!(::core::clone::Clone::clone(#r))
    });
    let grad_locals = (0..body.vars.len()).filter(|&v| live[v]).map(|v| {
        let g = grad(v);
        if v == out {
            quote!(let mut #g: ::core::option::Option<#tensor> = ::core::option::Option::Some(::core::clone::Clone::clone(__grad));)
        } else {
            quote!(let mut #g: ::core::option::Option<#tensor> = ::core::option::Option::None;)
        }
    });
    let accumulate = quote!(#krate::__private::accumulate);
    let rules = live_ops.iter().rev().map(|op| {
        let g = grad(op.result);
        let rule = &op.rule;
        let path = quote_spanned!(rule.span()=> #krate::__private::DerivativeRules::#rule);
        let operands = op.tensors.iter().map(|&t| reference(body, t));
        let result = reference(body, op.result);
        let scalars = &op.scalars;
        let apply = if let [x] = op.tensors[..] {
            let (nx, gx) = (needs(x), grad(x));
            quote! {
                if #nx {
                    let __c = #path(&__g, #(#operands,)* #result, #(#scalars),*)?;
                    #gx = #accumulate(#gx.take(), ::core::option::Option::Some(__c))?;
                }
            }
        } else {
            let flags = op.tensors.iter().map(|&t| needs(t));
            let parts: Vec<Ident> = (0..op.tensors.len()).map(|i| format_ident!("__c{}", i)).collect();
            let adds = op.tensors.iter().zip(&parts).map(|(&t, c)| {
                let gt = grad(t);
                quote!(#gt = #accumulate(#gt.take(), #c)?;)
            });
            let n = needs(op.result);
            quote! {
                if #n {
                    let (#(#parts,)*) = #path(&__g, [#(#flags),*], #(#operands,)* #result, #(#scalars),*)?;
                    #(#adds)*
                }
            }
        };
        quote! {
            if let ::core::option::Option::Some(__g) = #g.take() {
                #apply
            }
        }
    });
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
                Some(v) if live[v] => grad(v).into_token_stream(),
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
    let grad0 = &grads[0];
    // Generated code: unused flags, `mut` locals a rule never updates, and parenthesised
    // scalars are expected here.
    let backward = quote! {
        #[doc(hidden)]
        #[allow(unused_variables, unused_mut, unused_parens, non_snake_case, clippy::all)]
        fn #hidden_backward(
            #(#grads: ::core::option::Option<&#tensor>,)*
            needs_input_grad: [bool; #n_inputs],
            #(#input_params,)*
            #(#attr_params,)*
            #(#results: &#tensor,)*
        ) -> #krate::Result<#bwd_ret> {
            let _ = (#(#ignored,)*);
            let ::core::option::Option::Some(__grad) = #grad0 else {
                return ::core::result::Result::Ok(#bwd_none);
            };
            #(#scalar_steps)*
            #(#input_needs)*
            #(#op_needs)*
            let (#(#bound,)*) = if #krate::is_grad_enabled() {
                #(#replay)*
                (#(#bound,)*)
            } else {
                (#(#saved_values,)*)
            };
            #(#grad_locals)*
            #(#rules)*
            ::core::result::Result::Ok(#bwd_value)
        }
    };

    let attrs_out = &func.attrs;
    let vis = &func.vis;
    let ident = fwd.ident;
    let user_ret = fwd.output.original;
    let args = fwd.params.iter().map(|p| p.ident);
    let call = quote!(#hidden(#(#args),*));
    let wrapper_body = if fallible {
        quote!(::core::result::Result::Ok(#call?.0))
    } else {
        quote!(#call.0)
    };
    let wrapper = quote! {
        #(#attrs_out)*
        #vis fn #ident(#inputs) #user_ret {
            #wrapper_body
        }
    };
    Derived {
        forward,
        backward,
        wrapper,
        residuals: residuals.len(),
    }
}
