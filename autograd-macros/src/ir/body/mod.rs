//! The body of a `#[differentiable(derive)]` function, lowered to straight-line code: one
//! primitive op per tensor method call or operator (each result a fresh value), the scalar `let`s
//! as written, and the output value. Anything else is reported, spanned on the construct.
//!
//! `mod.rs` holds the lowered IR and what is read off it; `lower.rs` lowers the statements and
//! the result, `expr.rs` the expressions (method calls, function calls, operators).

use proc_macro2::TokenStream;
use syn::{BinOp, Ident};

mod expr;
mod lower;

/// The lowered body.
pub(crate) struct Body {
    /// Every tensor value: the `&Tensor` inputs first, then one per op, in order.
    pub(crate) vars: Vec<Var>,
    pub(crate) stmts: Vec<Step>,
    /// The values the function returns: one, or one per element of a returned tuple.
    pub(crate) outputs: Vec<usize>,
}

/// A tensor value.
pub(crate) struct Var {
    /// The local it lives in (an input's parameter name, or a generated name).
    pub(crate) ident: Ident,
    /// For an input: its number among the tensor inputs.
    pub(crate) input: Option<usize>,
    /// The name the user gave it: the parameter, or the first `let` that binds it (for docs).
    pub(crate) name: Option<Ident>,
}

/// One step of the body, in order.
pub(crate) enum Step {
    /// A `let` of a non-tensor value, re-emitted as written (in the backward too).
    Scalar(TokenStream),
    Op(Box<Op>),
}

/// A primitive op: `result = rule(tensors.., scalars..)`. An op with no tensor operands
/// (`detach()`) is a constant: it has no rule and passes no gradient on.
pub(crate) struct Op {
    pub(crate) result: usize,
    /// The method name (or the operator's method, or the called function's name), spanned on
    /// the user's token: the name of its derivative rule.
    pub(crate) rule: Ident,
    /// For a call of a `#[differentiable]` function: its path, beside which its rule is.
    pub(crate) callee: Option<syn::Path>,
    /// Its tensor operands, receiver first.
    pub(crate) tensors: Vec<usize>,
    /// Its non-tensor arguments, as written.
    pub(crate) scalars: Vec<TokenStream>,
    pub(crate) form: Form,
    /// Written with `?` after it (a method or function returning a `Result`).
    pub(crate) tried: bool,
    /// For `let (v, rest..) = op;`: the patterns after the tensor, bound in the forward.
    pub(crate) rest: Option<TokenStream>,
}

/// How the op is written, to run it again as written.
pub(crate) enum Form {
    /// `receiver.method(args)`.
    Method {
        receiver: usize,
        method: Ident,
        args: Vec<Arg>,
    },
    /// `lhs op rhs`.
    Binary { op: BinOp, lhs: Arg, rhs: Arg },
    /// `-operand`.
    Neg,
    /// `function(args)`: a `#[differentiable]` function.
    Call { func: syn::Path, args: Vec<Arg> },
}

/// An argument of an op.
pub(crate) enum Arg {
    Tensor(usize),
    Scalar(TokenStream),
}

impl Body {
    /// The ops, in order.
    pub(crate) fn ops(&self) -> impl DoubleEndedIterator<Item = &Op> {
        self.stmts.iter().filter_map(|s| match s {
            Step::Op(op) => Some(&**op),
            Step::Scalar(_) => None,
        })
    }

    /// Which values the output depends on (the output included): only those get gradients.
    pub(crate) fn live(&self) -> Vec<bool> {
        let mut live = vec![false; self.vars.len()];
        for &o in &self.outputs {
            live[o] = true;
        }
        for op in self.ops().rev() {
            if live[op.result] {
                for &t in &op.tensors {
                    live[t] = true;
                }
            }
        }
        live
    }
}

#[cfg(test)]
mod tests;
