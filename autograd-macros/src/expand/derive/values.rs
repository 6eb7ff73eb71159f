//! The pieces both hidden functions are written from: a value as a reference or as the locals
//! that hold its needs flag and gradient, what the rules read of it, one op as the user wrote
//! it, and the path of an op's rule.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
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

/// The rule of `op` as an expression, spanned on the user's method, operator or function name
/// (where a missing rule is reported): `DerivativeRules::method`, or for a call of `path::f`,
/// `path::__autograd_f_rule`, passed through a check whose failure is the DSL's message.
///
/// A macro cannot see which ops have rules (they are declared all over the runtime, and a user
/// function has one when it is `#[differentiable]` and fits), so the lookup itself decides, and
/// a missing rule falls back to a stand-in that the check rejects, in a block of its own:
///
/// * a method or operator: `DerivativeRules::m` is the inherent constant when the op has a rule;
///   otherwise the path resolves to a trait constant `m` (a `()`) that a block-local trait in
///   scope gives every type (inherent items win over trait items, and this trait's blanket
///   impl applies where a prelude trait's method of that name, `Ord::clamp` or `PartialEq::ne`, would not);
/// * a function called by its bare name: `__autograd_f_rule` is looked up in an inner block
///   that glob-imports the function's module, so the module's rule (an item, or an import of
///   any kind) wins over the `()` constant the outer block declares under that name. A path
///   `a::f` is looked up as written (rustc's error where `a::__autograd_f_rule` is missing).
///
/// The check ([`rule_checks`]) is a trait implemented for `Rule<F>` only, whose
/// `#[diagnostic::on_unimplemented]` message names the call: a stand-in is reported there, at
/// the call, and the rule's type is an error type after it, so no other error follows.
pub(super) fn rule_path(krate: &Path, func: &Ident, op: &Op) -> TokenStream {
    let rule = &op.rule;
    let span = rule.span();
    let check = check_trait(func, rule);
    match &op.callee {
        Some(path) if path.leading_colon.is_none() && path.segments.len() == 1 => {
            let name = super::super::rule::rule_name(rule);
            quote_spanned! {span=> #check::rule({
                #[allow(non_upper_case_globals, dead_code)]
                const #name: () = ();
                {
                    #[allow(unused_imports)]
                    use self::*;
                    #name
                }
            })}
        }
        Some(path) => {
            let path = super::super::names::sibling(path, &super::super::rule::rule_name(rule));
            quote_spanned!(span=> #check::rule(#path))
        }
        None => quote_spanned! {span=> #check::rule({
            #[allow(non_camel_case_types, dead_code)]
            trait __autograd_no_rule {
                #[allow(non_upper_case_globals)]
                const #rule: ();
            }
            impl<T: ?::core::marker::Sized> __autograd_no_rule for T {
                const #rule: () = ();
            }
            #krate::__private::DerivativeRules::#rule
        })},
    }
}

/// The check of the rules named `rule` in the body of `func` (see [`rule_path`]), beside the
/// hidden pair so that the forward and the backward share it (rustc then reports a missing rule
/// once): `__autograd_<func>_<rule>_has_rule`.
fn check_trait(func: &Ident, rule: &Ident) -> Ident {
    format_ident!(
        "__autograd_{}_{}_has_rule",
        func.unraw(),
        rule.unraw(),
        span = rule.span()
    )
}

/// The checks of [`rule_path`], one per rule name the body uses: a trait implemented for
/// `Rule<F>` only, whose `#[diagnostic::on_unimplemented]` message names the call (the first
/// op of that name; a stand-in for a missing rule is a `()`).
pub(super) fn rule_checks(krate: &Path, func: &Ident, body: &Body) -> TokenStream {
    let rule_ty = quote!(#krate::__private::Rule);
    let mut seen: Vec<String> = Vec::new();
    let checks = body.ops().filter(|op| !op.tensors.is_empty()).filter_map(|op| {
        let key = op.rule.unraw().to_string();
        if seen.contains(&key) {
            return None;
        }
        seen.push(key);
        let check = check_trait(func, &op.rule);
        let (message, label, notes) = missing_rule_message(func, op);
        Some(quote! {
            #[doc(hidden)]
            #[diagnostic::on_unimplemented(message = #message, label = #label, #(note = #notes),*)]
            #[allow(non_camel_case_types, dead_code)]
            trait #check: ::core::marker::Sized {
                type Apply;
                fn rule(self) -> #rule_ty<Self::Apply>;
            }
            #[diagnostic::do_not_recommend]
            impl<F> #check for #rule_ty<F> {
                type Apply = F;
                fn rule(self) -> #rule_ty<F> {
                    self
                }
            }
        })
    });
    let checks: Vec<TokenStream> = checks.collect();
    quote!(#(#checks)*)
}

/// What rustc says, through the check of [`rule_path`], when `op` has no rule in the body of
/// `func`: the message, the label at the call, and the notes (what to write instead, then why).
pub(super) fn missing_rule_message(func: &Ident, op: &Op) -> (String, String, Vec<String>) {
    let func = func.unraw();
    let rule = op.rule.unraw();
    let backward =
        format!("remove `derive` and write the gradient in a `#[backward({func})]` function");
    let (what, label, instead) = match &op.form {
        Form::Call { func: callee, .. } => {
            let callee = callee.to_token_stream().to_string().replace(' ', "");
            return (
                format!(
                    "`#[differentiable(derive)]` cannot differentiate the call of `{callee}`: it is a plain function, with no derivative rule"
                ),
                format!("`{callee}` has no derivative rule"),
                vec![
                    format!(
                        "make `{rule}` `#[differentiable(derive)]` (or give it a `#[backward]`), write its body here instead of calling it, or {backward}"
                    ),
                    "a derived body differentiates tensor ops that have rules and calls of `#[differentiable]` functions that take `&Tensor`s and attributes and return one `Tensor`; the macro cannot see into a plain function".to_string(),
                    format!(
                        "if `{rule}` is `#[differentiable]` and declared inside a function body, declare it at module level, where a derived body finds its rule"
                    ),
                ],
            );
        }
        Form::Binary { op: bin, .. } => (
            format!(
                "the operator `{}` here: its tensor op `{rule}` has no derivative rule",
                bin.to_token_stream()
            ),
            format!("`{rule}` has no derivative rule"),
            "write it with ops that have rules",
        ),
        Form::Neg => (
            format!("the operator `-` here: its tensor op `{rule}` has no derivative rule"),
            format!("`{rule}` has no derivative rule"),
            "write it with ops that have rules",
        ),
        Form::Method { .. } => (
            format!("`{rule}`: the tensor method has no derivative rule"),
            format!("`{rule}` has no derivative rule"),
            "write it with tensor methods and operators that have rules",
        ),
    };
    (
        format!("`#[differentiable(derive)]` cannot differentiate {what}"),
        label,
        vec![
            format!("{instead}, or {backward}"),
            format!(
                "a derived body differentiates each tensor method and operator by its rule, `DerivativeRules::{rule}`, declared beside the op in the runtime"
            ),
        ],
    )
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
pub(super) fn reads_of(
    krate: &Path,
    func: &Ident,
    body: &Body,
    live: &[bool],
    v: usize,
) -> TokenStream {
    reads_given(krate, func, body, live, v, forward_needs)
}

/// [`reads_of`], with the needs flags named by `needs` (the forward's or the backward's).
pub(super) fn reads_given(
    krate: &Path,
    func: &Ident,
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
            let path = rule_path(krate, func, op);
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
