//! The pieces both hidden functions are written from: a value as a reference or as the locals
//! that hold its needs flag and gradient, what the rules read of it, one op as the user wrote
//! it, and the path of an op's rule.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Path};

use crate::ir::body::{Arg, Body, Form, Op};

/// A tensor value as a `&Tensor` expression: in the forward, inputs are references already and
/// intermediates are owned; in the backward every value is a reference to a saved tensor.
pub(super) fn reference(body: &Body, v: usize, backward: bool) -> TokenStream {
    let var = &body.vars[v];
    let ident = &var.ident;
    if backward || var.input.is_some() {
        quote!(#ident)
    } else {
        quote!((&#ident))
    }
}

/// `let v = <op as written>;`, with `?` after a method or function call where the user wrote one.
pub(super) fn run_op(body: &Body, op: &Op) -> TokenStream {
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
pub(super) fn rule_path(krate: &Path, op: &Op) -> TokenStream {
    let rule = &op.rule;
    match &op.callee {
        Some(path) => {
            let path = super::super::names::sibling(path, &super::super::rule::rule_name(rule));
            quote_spanned!(rule.span()=> #path)
        }
        None => quote_spanned!(rule.span()=> #krate::__private::DerivativeRules::#rule),
    }
}

/// The local that says, in the forward, whether value `v` will need a gradient (an input that
/// requires grad, or an op with an operand that will).
pub(super) fn forward_needs(v: usize) -> Ident {
    format_ident!("__autograd_fneeds{}", v)
}

/// The backward's local that says whether value `v` needs a gradient.
pub(super) fn backward_needs(v: usize) -> Ident {
    format_ident!("__needs_{}", v)
}

/// The backward's local of value `v`'s gradient.
pub(super) fn backward_grad(v: usize) -> Ident {
    format_ident!("__grad_{}", v)
}

/// What the rules of the live ops read of value `v`, given which operands will need a gradient:
/// a `Read`, from each rule's `reads` declaration.
pub(super) fn reads_of(krate: &Path, body: &Body, live: &[bool], v: usize) -> TokenStream {
    reads_given(krate, body, live, v, forward_needs)
}

/// [`reads_of`], with the needs flags named by `needs` (the forward's or the backward's).
pub(super) fn reads_given(
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
