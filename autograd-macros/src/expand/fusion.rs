//! Whether a derived body can run as one generated kernel each way, and its description for
//! the runtime (`__private::fusion::Program`, the runtime's `fusion/`): every op element-wise
//! (a tensor-tensor `+ - * /`, a scalar operator or method, `neg`, `pow` and the unary maths)
//! or a `sum()` / `mean()` of all elements whose value is only returned (a loss), every op
//! live, no call of another differentiable function, and scalar `let`s that read no intermediate
//! (so they can run before the kernel). The derived pair then asks the runtime for the fused
//! kernels first and runs the ops one by one when it declines.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Path;

use super::derive::mentions;
use crate::ir::body::{Body, Step};

/// A fusable body, for the runtime.
pub(crate) struct Fusion {
    /// `fusion::Var` expressions, one per body value.
    pub(crate) vars: Vec<TokenStream>,
    /// The scalar arguments, one per op that takes one, in order (each an `f64` expression).
    pub(crate) scalars: Vec<TokenStream>,
    /// The operand of the first `sum()`/`mean()` (a value of the elements' shape), if any.
    pub(crate) reduced: Option<usize>,
}

/// `Elementwise`'s variant for rule `rule`, with the tensor operands and scalar arguments it
/// takes.
fn elementwise(rule: &str) -> Option<(&'static str, usize, usize)> {
    Some(match rule {
        "add" => ("Add", 2, 0),
        "sub" => ("Sub", 2, 0),
        "mul" => ("Mul", 2, 0),
        "div" => ("Div", 2, 0),
        "add_scalar" => ("AddScalar", 1, 1),
        "sub_scalar" => ("SubScalar", 1, 1),
        "mul_scalar" => ("MulScalar", 1, 1),
        "div_scalar" => ("DivScalar", 1, 1),
        "rsub_scalar" => ("RsubScalar", 1, 1),
        "rdiv_scalar" => ("RdivScalar", 1, 1),
        "pow" => ("Pow", 1, 1),
        "neg" => ("Neg", 1, 0),
        "exp" => ("Exp", 1, 0),
        "log" => ("Log", 1, 0),
        "sin" => ("Sin", 1, 0),
        "cos" => ("Cos", 1, 0),
        "tanh" => ("Tanh", 1, 0),
        "sigmoid" => ("Sigmoid", 1, 0),
        "relu" => ("Relu", 1, 0),
        "sqrt" => ("Sqrt", 1, 0),
        "abs" => ("Abs", 1, 0),
        "sum" => ("Sum", 1, 0),
        "mean" => ("Mean", 1, 0),
        _ => return None,
    })
}

/// The body as a fused program, if it is one (see the module docs).
pub(crate) fn fusion(krate: &Path, body: &Body, live: &[bool]) -> Option<Fusion> {
    let rt = quote!(#krate::__private::fusion);
    if body.vars.len() >= usize::from(u16::MAX)
        || body.ops().next().is_none()
        || body.vars.iter().all(|v| v.input.is_none())
    {
        return None;
    }
    // Results are ops' values; the scalar `let`s read no intermediate.
    if body.outputs.iter().any(|&o| body.vars[o].input.is_some()) {
        return None;
    }
    let intermediates: Vec<_> = body.vars.iter().filter(|v| v.input.is_none()).collect();
    for s in &body.stmts {
        if let Step::Scalar(t) = s
            && intermediates.iter().any(|v| mentions(t, &v.ident))
        {
            return None;
        }
    }
    let mut vars: Vec<Option<TokenStream>> = body
        .vars
        .iter()
        .map(|v| {
            v.input.map(|k| {
                let k = k as u16;
                quote!(#rt::Var::Input(#k))
            })
        })
        .collect();
    let mut scalars = Vec::new();
    let mut reduced = None;
    for op in body.ops() {
        if !live[op.result] || op.callee.is_some() || op.rest.is_some() {
            return None;
        }
        let (variant, n_tensors, n_scalars) = elementwise(&op.rule.to_string())?;
        if op.tensors.len() != n_tensors || op.scalars.len() != n_scalars {
            return None;
        }
        if matches!(variant, "Sum" | "Mean") {
            // A reduced value has another shape: it may only be returned.
            if body.ops().any(|other| other.tensors.contains(&op.result)) {
                return None;
            }
            reduced.get_or_insert(op.tensors[0]);
        }
        let variant = syn::Ident::new(variant, proc_macro2::Span::call_site());
        let a = op.tensors[0] as u16;
        let b = op.tensors.get(1).map_or(0, |&t| t as u16);
        let s = scalars.len() as u16;
        scalars.extend(op.scalars.iter().cloned());
        vars[op.result] = Some(quote! {
            #rt::Var::Op { op: #rt::Elementwise::#variant, a: #a, b: #b, s: #s }
        });
    }
    Some(Fusion {
        vars: vars.into_iter().collect::<Option<_>>()?,
        scalars,
        reduced,
    })
}

/// `static __AUTOGRAD_FUSION: fusion::Program = ..;` for `body`.
pub(crate) fn program(krate: &Path, body: &Body, fusion: &Fusion) -> TokenStream {
    let rt = quote!(#krate::__private::fusion);
    let vars = &fusion.vars;
    let outputs = body.outputs.iter().map(|&o| o as u16);
    quote! {
        static __AUTOGRAD_FUSION: #rt::Program = #rt::Program {
            vars: &[#(#vars),*],
            outputs: &[#(#outputs),*],
        };
    }
}
