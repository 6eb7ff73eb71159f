//! Checks a `#[jvp]`'s signature against its forward's: the tangents, the named values, the
//! return type.

use syn::ext::IdentExt;
use syn::{Attribute, FnArg, Ident, Pat, ReturnType, Signature, Type};

use super::{JvpPlan, Named, TangentForm};
use crate::attr::DiffArgs;
use crate::ctxt::Ctxt;
use crate::ir::{
    DiffFn, ParamKind, Source, is_option_tensor_ref, is_slice_ref_of, is_tensor, is_tensor_ref,
    is_tensor_slice_ref, option_inner, vec_inner,
};
use crate::{ir, symbol};

/// `&[Option<Tensor>]`.
fn is_option_tensor_slice_ref(ty: &Type) -> bool {
    is_slice_ref_of(ty, |t| option_inner(t).is_some_and(is_tensor))
}

/// The form of a tangent parameter of type `ty` for `input`, if it fits.
fn tangent_form(ty: &Type, input: &ir::Param<'_>) -> Option<TangentForm> {
    match input.kind {
        ParamKind::Tensors(_) if is_tensor_slice_ref(ty) => Some(TangentForm::Slice),
        ParamKind::Tensors(_) if is_option_tensor_slice_ref(ty) => Some(TangentForm::SliceOption),
        ParamKind::Tensors(_) => None,
        _ if is_option_tensor_ref(ty) => Some(TangentForm::Option),
        _ if !input.optional && is_tensor_ref(ty) => Some(TangentForm::Tensor),
        _ => None,
    }
}

/// Checks the jvp's parameters and return type against the forward's; errors go to `cx`.
pub(super) fn check_jvp<'a>(
    cx: &Ctxt,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    jvp: &'a Signature,
) -> Option<JvpPlan<'a>> {
    let params = jvp_params(cx, jvp);
    let inputs: Vec<&ir::Param<'_>> = fwd.tensor_inputs().collect();
    let tangents = check_tangents(cx, fwd, jvp, &params, &inputs);
    for p in params.iter().take(inputs.len()) {
        if let Some(attr) = p.original {
            cx.error_spanned_by(
                attr,
                "`#[original]` applies to a named input after the tangents, not to a tangent",
            );
        }
    }
    let mut named = Vec::new();
    for p in params.iter().skip(inputs.len()) {
        match p.original {
            Some(attr) => named.push(check_original(cx, args, fwd, attr, p.ident, p.ty)?),
            None => named.extend(check_named(cx, fwd, p.ident, p.ty)?),
        }
    }
    let fallible = check_return(cx, fwd, jvp);
    Some(JvpPlan {
        tangents,
        named,
        fallible,
    })
}

/// A parameter of the jvp: its name, its type and its `#[original]` attribute.
struct JvpParam<'a> {
    ident: &'a Ident,
    ty: &'a Type,
    original: Option<&'a Attribute>,
}

/// The jvp's parameters, plain names only (others are errors).
fn jvp_params<'a>(cx: &Ctxt, jvp: &'a Signature) -> Vec<JvpParam<'a>> {
    jvp.inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(p) => match &*p.pat {
                Pat::Ident(i) => Some(JvpParam {
                    ident: &i.ident,
                    ty: &p.ty,
                    original: p.attrs.iter().find(|a| symbol::ORIGINAL.is(a.path())),
                }),
                other => {
                    cx.error_spanned_by(other, "`#[jvp]` parameters are plain names");
                    None
                }
            },
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// The tangents, one per tensor input, in order: `&Tensor` (zeros for an input without a
/// tangent, as PyTorch materialises them) or `Option<&Tensor>` (`None` then, so that a rule can
/// skip the term: an optional input's tangent is always that); for a `&[Tensor]` input, one per
/// element, `&[Tensor]` or `&[Option<Tensor>]` alike.
fn check_tangents(
    cx: &Ctxt,
    fwd: &DiffFn<'_>,
    jvp: &Signature,
    params: &[JvpParam<'_>],
    inputs: &[&ir::Param<'_>],
) -> Vec<TangentForm> {
    let f = fwd.name();
    let mut tangents = Vec::with_capacity(inputs.len());
    for (k, input) in inputs.iter().enumerate() {
        let expected = if matches!(input.kind, ParamKind::Tensors(_)) {
            "&[Tensor]` or `&[Option<Tensor>]"
        } else if input.optional {
            "Option<&Tensor>"
        } else {
            "&Tensor` or `Option<&Tensor>"
        };
        let form = params.get(k).and_then(|p| tangent_form(p.ty, input));
        tangents.push(form.unwrap_or(TangentForm::Option));
        match params.get(k) {
            Some(_) if form.is_some() => {}
            Some(p) => cx.error_spanned_by(
                p.ty,
                format!(
                    "`{}` is the tangent of `{}`, input {k} of `{f}`: expected `{expected}`",
                    p.ident.unraw(),
                    input.ident.unraw()
                ),
            ),
            None => cx.error_at(
                ir::params_end(jvp),
                format!(
                    "`#[jvp({f})]` takes one tangent per tensor input of `{f}` first: missing the tangent of `{}` (`{expected}`)",
                    input.ident.unraw()
                ),
            ),
        }
    }
    tangents
}

/// A jvp parameter after the tangents, named as a parameter, output or residual of the forward.
/// `Some(None)`: an error was reported, the check goes on; `None`: it stops.
fn check_named<'a>(
    cx: &Ctxt,
    fwd: &DiffFn<'_>,
    ident: &Ident,
    ty: &'a Type,
) -> Option<Option<Named<'a>>> {
    let f = fwd.name();
    let param = |i: usize| &fwd.params[i];
    let mismatch = |expected: String| {
        cx.error_spanned_by(ty, format!("`{}` {expected}", ident.unraw()));
    };
    let named = match fwd.resolve(ident) {
        Some(Source::Param(i)) if param(i).kind == ParamKind::Attr => {
            if ir::type_string(ty) != ir::type_string(param(i).ty) {
                mismatch(format!(
                    "has type `{}` in `{f}`",
                    ir::type_string(param(i).ty)
                ));
            }
            Named::Attr(i)
        }
        Some(Source::Param(i)) => {
            let (fits, expected) = match param(i).kind {
                ParamKind::Tensors(_) => (is_tensor_slice_ref(ty), "&[Tensor]"),
                _ if param(i).optional => (is_option_tensor_ref(ty), "Option<&Tensor>"),
                _ => (is_tensor_ref(ty), "&Tensor"),
            };
            if !fits {
                mismatch(format!("is an input of `{f}`: expected `{expected}`"));
            }
            let (ParamKind::Tensor(k) | ParamKind::Tensors(k)) = param(i).kind else {
                return None;
            };
            Named::Input(k)
        }
        Some(Source::Output(j)) => {
            let (fits, expected) = if fwd.output.vec {
                (
                    is_tensor_slice_ref(ty),
                    "`&[Tensor]` (the outputs of a `Vec<Tensor>` forward, together)",
                )
            } else {
                (is_tensor_ref(ty), "`&Tensor`")
            };
            if !fits {
                mismatch(format!("is an output of `{f}`: expected {expected}"));
            }
            Named::Output(j)
        }
        Some(Source::Residual(k)) => {
            if !matches!(ty, Type::Reference(r) if r.mutability.is_none()) {
                mismatch(format!(
                    "is a residual of `{f}` (`save(..)`), taken by reference: expected `&{}`",
                    ir::type_string(fwd.residuals[k].ty)
                ));
            }
            Named::Residual(k, ty)
        }
        _ => {
            unknown_name(cx, fwd, ident);
            return Some(None);
        }
    };
    Some(Some(named))
}

/// The error for a jvp parameter that names nothing of the forward, listing what it may name.
fn unknown_name(cx: &Ctxt, fwd: &DiffFn<'_>, ident: &Ident) {
    let f = fwd.name();
    let mut known: Vec<String> = fwd
        .params
        .iter()
        .map(|p| p.ident.unraw().to_string())
        .collect();
    known.extend(fwd.output_names());
    known.extend(fwd.residuals.iter().map(|r| r.ident.unraw().to_string()));
    let what = if fwd.residuals.is_empty() {
        "parameters and outputs"
    } else {
        "parameters, outputs and residuals"
    };
    cx.error_spanned_by(
        ident,
        format!(
            "`{}` names nothing of `{f}`: after the tangents, a `#[jvp]` takes `{f}`'s {what} by name ({})",
            ident.unraw(),
            known
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
}

/// A jvp parameter marked `#[original]`: a `dirty` tensor input of the forward, taken as
/// `&Tensor`.
fn check_original(
    cx: &Ctxt,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    attr: &syn::Attribute,
    ident: &Ident,
    ty: &Type,
) -> Option<Named<'static>> {
    let f = fwd.name();
    if !matches!(attr.meta, syn::Meta::Path(_)) {
        cx.error_spanned_by(attr, "`#[original]` takes no arguments");
        return None;
    }
    let dirty = args
        .dirty
        .as_ref()
        .is_some_and(|l| l.names.iter().any(|n| n == ident));
    let k = match fwd.resolve(ident) {
        Some(Source::Param(i)) => match fwd.params[i].kind {
            ParamKind::Tensor(k) if dirty => k,
            _ => {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "`#[original]` gives the value a `dirty` input had before `{f}` modified it; `{}` is not listed in `dirty(..)`",
                        ident.unraw()
                    ),
                );
                return None;
            }
        },
        _ => {
            cx.error_spanned_by(
                ident,
                format!("`{}` names no input of `{f}`", ident.unraw()),
            );
            return None;
        }
    };
    if !is_tensor_ref(ty) {
        cx.error_spanned_by(
            ty,
            format!(
                "`{}` is `{f}`'s input before the write: expected `&Tensor`",
                ident.unraw()
            ),
        );
    }
    Some(Named::Original(k))
}

/// The jvp returns one tangent per tensor output: `Tensor` or a tuple of them, in a `Result`
/// when it can fail (then only for a fallible forward). Returns whether it is a `Result`.
fn check_return(cx: &Ctxt, fwd: &DiffFn<'_>, jvp: &Signature) -> bool {
    let f = fwd.name();
    let m = fwd.output.tensors.len();
    let expected = if fwd.output.vec {
        "Vec<Tensor>".to_string()
    } else if m == 1 {
        "Tensor".to_string()
    } else {
        format!("({})", vec!["Tensor"; m].join(", "))
    };
    let ReturnType::Type(_, ty) = &jvp.output else {
        cx.error_at(
            ir::params_end(jvp),
            format!(
                "`#[jvp({f})]` returns the tangent of each tensor output of `{f}`: `{expected}`"
            ),
        );
        return false;
    };
    let (inner, fallible) = match ir::result_ok_type(ty) {
        Some(inner) => (inner, true),
        None => (&**ty, false),
    };
    let ok = match inner {
        _ if fwd.output.vec => vec_inner(inner).is_some_and(is_tensor),
        Type::Tuple(t) => m > 1 && t.elems.len() == m && t.elems.iter().all(is_tensor),
        other => m == 1 && is_tensor(other),
    };
    if !ok {
        cx.error_spanned_by(
            ty,
            format!(
                "`#[jvp({f})]` returns the tangent of each tensor output of `{f}`: expected `{expected}` (or a `Result` of it)"
            ),
        );
    }
    if fallible && !fwd.output.fallible {
        cx.error_spanned_by(
            ty,
            format!("a fallible `#[jvp]` needs a fallible forward: `{f}` returns no `Result`"),
        );
    }
    fallible
}
