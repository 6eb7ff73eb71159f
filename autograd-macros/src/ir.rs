//! Typed IR of a forward (`DiffFn`) and of a backward (`BackwardFn`), lowered from `syn` with
//! the syntactic rules of the DSL. Cross-cutting rules (backward against forward, options against
//! parameters) live in `valid.rs`.

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{
    FnArg, GenericArgument, Ident, Pat, PatType, PathArguments, ReturnType, Signature, Type,
};

use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

/// A `#[differentiable]` function.
pub(crate) struct DiffFn<'a> {
    pub(crate) original: &'a Signature,
    pub(crate) ident: &'a Ident,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) output: Output<'a>,
}

/// A forward parameter.
pub(crate) struct Param<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) kind: ParamKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `&Tensor`: a differentiable input (the node's next edge number `.0`).
    Tensor(usize),
    /// Anything else: an attribute, saved by value if the backward names it.
    Attr,
}

/// The forward's return type.
pub(crate) struct Output<'a> {
    pub(crate) original: &'a ReturnType,
    /// Wrapped in `Result<..>`.
    pub(crate) fallible: bool,
    /// A tuple (outputs named `result_0`, ..) rather than a single `Tensor` (named `result`).
    pub(crate) tuple: bool,
    /// One type per output tensor.
    pub(crate) tensors: Vec<&'a Type>,
}

/// A `#[backward(..)]` function.
pub(crate) struct BackwardFn<'a> {
    pub(crate) original: &'a Signature,
    pub(crate) ident: &'a Ident,
    /// The leading `grad*` parameters.
    pub(crate) grads: Vec<BwParam<'a>>,
    /// The remaining parameters, each naming a forward parameter or output.
    pub(crate) saved: Vec<BwParam<'a>>,
    pub(crate) output: BackwardOutput<'a>,
}

/// A backward parameter.
pub(crate) struct BwParam<'a> {
    pub(crate) original: &'a PatType,
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
}

/// The backward's return type: one gradient per differentiable input.
pub(crate) struct BackwardOutput<'a> {
    pub(crate) original: &'a ReturnType,
    pub(crate) fallible: bool,
    /// A tuple rather than a single gradient type.
    pub(crate) tuple: bool,
    pub(crate) grads: Vec<(&'a Type, GradType)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum GradType {
    Tensor,
    OptionTensor,
    Other,
}

/// What a backward parameter after the gradients refers to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Forward parameter number `.0`.
    Param(usize),
    /// Forward output number `.0`.
    Output(usize),
}

impl<'a> DiffFn<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, sig: &'a Signature) -> DiffFn<'a> {
        check_plain_fn(cx, sig, "#[differentiable]");
        let mut params = Vec::new();
        let mut inputs = 0;
        for arg in &sig.inputs {
            let Some((original, ident)) = plain_param(cx, arg, "#[differentiable]") else {
                continue;
            };
            for reserved in [symbol::GRAD, symbol::RESULT] {
                if reserved.is_prefix_of(ident) {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "parameter name `{ident}` is reserved: in `#[backward]`, `{reserved}` and `{reserved}_*` name {}; rename the parameter",
                            if reserved == symbol::GRAD { "incoming gradients" } else { "the forward's outputs" }
                        ),
                    );
                }
            }
            let ty = &*original.ty;
            let kind = match classify_param(ty) {
                Ok(true) => {
                    inputs += 1;
                    ParamKind::Tensor(inputs - 1)
                }
                Ok(false) => ParamKind::Attr,
                Err(msg) => {
                    cx.error_spanned_by(ty, msg);
                    ParamKind::Attr
                }
            };
            params.push(Param { ident, ty, kind });
        }
        if inputs == 0 && cx.is_ok() {
            cx.error_at(
                sig.paren_token.span.join(),
                "`#[differentiable]` function needs at least one `&Tensor` parameter: its differentiable inputs",
            );
        }
        let output = Output::from_syn(cx, sig);
        DiffFn {
            original: sig,
            ident: &sig.ident,
            params,
            output,
        }
    }

    pub(crate) fn tensor_inputs(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_)))
    }

    pub(crate) fn num_outputs(&self) -> usize {
        self.output.tensors.len()
    }

    /// `result`, or `result_0`, `result_1`, .. for tuple outputs.
    pub(crate) fn output_names(&self) -> Vec<String> {
        if self.output.tuple {
            (0..self.num_outputs())
                .map(|i| format!("{}_{i}", symbol::RESULT))
                .collect()
        } else {
            vec![symbol::RESULT.to_string()]
        }
    }

    /// What `name` refers to in a backward of this function.
    pub(crate) fn resolve(&self, name: &Ident) -> Option<Source> {
        let name = name.unraw();
        if let Some(i) = self.params.iter().position(|p| p.ident.unraw() == name) {
            return Some(Source::Param(i));
        }
        let name = name.to_string();
        self.output_names()
            .iter()
            .position(|o| *o == name)
            .map(Source::Output)
    }

    /// The function name for messages (`scaled_square`).
    pub(crate) fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// The default node name: `scaled_square` → `ScaledSquareBackward0`.
    pub(crate) fn default_node_name(&self) -> String {
        let mut name: String = self
            .name()
            .split('_')
            .filter(|part| !part.is_empty())
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                    .unwrap_or_default()
            })
            .collect();
        name.push_str("Backward0");
        name
    }
}

impl<'a> Output<'a> {
    fn from_syn(cx: &Ctxt, sig: &'a Signature) -> Output<'a> {
        let mut output = Output {
            original: &sig.output,
            fallible: false,
            tuple: false,
            tensors: Vec::new(),
        };
        let ReturnType::Type(_, ty) = &sig.output else {
            cx.error_at(
                sig.paren_token.span.close(),
                "`#[differentiable]` function must return `Tensor`, a tuple of tensors, or a `Result` of either",
            );
            return output;
        };
        let (ty, fallible) = match result_ok_type(ty) {
            Some(ok) => (ok, true),
            None => (&**ty, false),
        };
        output.fallible = fallible;
        match ty {
            Type::Tuple(tuple) if !tuple.elems.is_empty() => {
                output.tuple = true;
                for elem in &tuple.elems {
                    if !is_tensor(elem) {
                        cx.error_spanned_by(
                            elem,
                            format!(
                                "every output of a `#[differentiable]` function must be `Tensor`, found `{}`",
                                type_string(elem)
                            ),
                        );
                    }
                    output.tensors.push(elem);
                }
            }
            ty if is_tensor(ty) => output.tensors.push(ty),
            ty => cx.error_spanned_by(
                ty,
                format!(
                    "`#[differentiable]` function must return `Tensor`, a tuple of tensors, or a `Result` of either, found `{}`",
                    type_string(ty)
                ),
            ),
        }
        output
    }
}

impl<'a> BackwardFn<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, sig: &'a Signature) -> BackwardFn<'a> {
        check_plain_fn(cx, sig, "#[backward]");
        let mut grads = Vec::new();
        let mut saved: Vec<BwParam<'a>> = Vec::new();
        for arg in &sig.inputs {
            let Some((original, ident)) = plain_param(cx, arg, "#[backward]") else {
                continue;
            };
            let param = BwParam {
                original,
                ident,
                ty: &original.ty,
            };
            if symbol::GRAD.is_prefix_of(ident) {
                if let Some(first) = saved.first() {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "incoming gradient parameters come first: move `{ident}` before `{}`",
                            first.ident
                        ),
                    );
                }
                grads.push(param);
            } else {
                saved.push(param);
            }
        }
        let output = BackwardOutput::from_syn(sig);
        BackwardFn {
            original: sig,
            ident: &sig.ident,
            grads,
            saved,
            output,
        }
    }
}

impl<'a> BackwardOutput<'a> {
    fn from_syn(sig: &'a Signature) -> BackwardOutput<'a> {
        let ReturnType::Type(_, ty) = &sig.output else {
            return BackwardOutput {
                original: &sig.output,
                fallible: false,
                tuple: false,
                grads: Vec::new(),
            };
        };
        let (ty, fallible) = match result_ok_type(ty) {
            Some(ok) => (ok, true),
            None => (&**ty, false),
        };
        let tuple = matches!(ty, Type::Tuple(_));
        let grads = match ty {
            Type::Tuple(tuple) if !tuple.elems.is_empty() => {
                tuple.elems.iter().map(|t| (t, grad_type(t))).collect()
            }
            Type::Tuple(_) => Vec::new(),
            ty => vec![(ty, grad_type(ty))],
        };
        BackwardOutput {
            original: &sig.output,
            fallible,
            tuple,
            grads,
        }
    }
}

/// Rejects what a macro-generated free function cannot be: methods, generics, async, ...
fn check_plain_fn(cx: &Ctxt, sig: &Signature, attr: &str) {
    let not_supported = |what: &dyn ToTokens, kind: &str| {
        cx.error_spanned_by(
            what,
            format!("{kind} are not supported by `{attr}`; write a plain free function"),
        );
    };
    if let Some(t) = &sig.constness {
        not_supported(t, "`const fn`s");
    }
    if let Some(t) = &sig.asyncness {
        not_supported(t, "`async fn`s");
    }
    if let Some(t) = &sig.unsafety {
        not_supported(t, "`unsafe fn`s");
    }
    if let Some(t) = &sig.abi {
        not_supported(t, "`extern` functions");
    }
    if let Some(t) = &sig.variadic {
        not_supported(t, "variadic functions");
    }
    if !sig.generics.params.is_empty() {
        not_supported(&sig.generics, "generic functions");
    } else if let Some(w) = &sig.generics.where_clause {
        not_supported(w, "`where` clauses");
    }
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        not_supported(r, "methods");
    }
}

/// `ident: Type` with a plain (possibly `mut`) identifier pattern.
fn plain_param<'a>(cx: &Ctxt, arg: &'a FnArg, attr: &str) -> Option<(&'a PatType, &'a Ident)> {
    let FnArg::Typed(pat_type) = arg else {
        return None; // receivers are reported by `check_plain_fn`
    };
    match &*pat_type.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some((pat_type, &p.ident)),
        pat => {
            cx.error_spanned_by(
                pat,
                format!(
                    "parameters of a `{attr}` function must be plain identifiers (`x: &Tensor`)"
                ),
            );
            None
        }
    }
}

/// `Ok(true)` for `&Tensor`, `Ok(false)` for an attribute, `Err` for tensor-like types the DSL
/// does not take.
fn classify_param(ty: &Type) -> Result<bool, String> {
    match ty {
        Type::Reference(r) if is_tensor(&r.elem) => match r.mutability {
            None => Ok(true),
            Some(_) => Err("`&mut Tensor` parameters are not supported; take `&Tensor`, and list it in `dirty(..)` if the function modifies it in place".into()),
        },
        ty if is_tensor(ty) => Err("tensor inputs are taken by reference: write `&Tensor`".into()),
        Type::ImplTrait(_) => Err("`impl Trait` parameters are not supported by `#[differentiable]`; name a concrete type".into()),
        ty if option_inner(ty).is_some_and(|inner| matches!(inner, Type::Reference(r) if is_tensor(&r.elem))) => {
            Err("optional tensor inputs are not supported by `#[differentiable]`; take `&Tensor`".into())
        }
        _ => Ok(false),
    }
}

/// `Tensor` (any path ending in `Tensor`, without generics).
pub(crate) fn is_tensor(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == symbol::TENSOR && s.arguments.is_none()),
        Type::Group(g) => is_tensor(&g.elem),
        Type::Paren(p) => is_tensor(&p.elem),
        _ => false,
    }
}

/// `&Tensor`.
pub(crate) fn is_tensor_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none() && is_tensor(&r.elem))
}

/// `Option<&Tensor>`.
pub(crate) fn is_option_tensor_ref(ty: &Type) -> bool {
    option_inner(ty).is_some_and(is_tensor_ref)
}

fn grad_type(ty: &Type) -> GradType {
    if is_tensor(ty) {
        GradType::Tensor
    } else if option_inner(ty).is_some_and(is_tensor) {
        GradType::OptionTensor
    } else {
        GradType::Other
    }
}

/// `T` in `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::OPTION_TYPE)
}

/// `T` in `Result<T>` or `Result<T, E>` (any path ending in `Result`).
fn result_ok_type(ty: &Type) -> Option<&Type> {
    generic_arg(ty, symbol::RESULT_TYPE)
}

fn generic_arg(ty: &Type, name: Symbol) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    if p.qself.is_some() || !name.ends(&p.path) {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &p.path.segments.last()?.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// A type as users write it, for messages: `&Tensor`, `Option<&Tensor>`, `Vec<usize>`.
pub(crate) fn type_string(ty: &Type) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut s = raw;
    for (from, to) in [
        ("& ", "&"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        (" :: ", "::"),
        (":: ", "::"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// Where to point when a list is empty: the closing parenthesis of the signature.
pub(crate) fn params_end(sig: &Signature) -> Span {
    sig.paren_token.span.close()
}

#[cfg(test)]
mod tests;
