//! Rules that relate parts of the DSL to each other: options against the forward's parameters and
//! outputs, and a backward against its forward (gradient counts, names and types).

use syn::Ident;
use syn::ext::IdentExt;

use crate::attr::{DiffArgs, backticked};
use crate::ctxt::Ctxt;
use crate::ir::{
    self, BackwardFn, BwParam, DiffFn, GradType, ParamKind, Source, bool_array_len,
    is_bool_slice_ref, is_input_metadata_ref, is_option_tensor_ref, is_slice_ref_of, is_tensor_ref,
    is_tensor_slice_ref, type_string,
};
use crate::symbol;

/// The forward's options against its signature.
pub(crate) fn check_forward(cx: &Ctxt, args: &DiffArgs, fwd: &DiffFn<'_>) {
    let outputs = fwd.output_names();
    let mut seen: Vec<&Ident> = Vec::new();
    for name in args.non_differentiable() {
        if !outputs.iter().any(|o| *name == *o) {
            cx.error_spanned_by(
                name,
                format!(
                    "`{}` is not an output of `{}`; expected one of {}",
                    name,
                    fwd.name(),
                    backticked(&outputs)
                ),
            );
        }
        duplicate(cx, &mut seen, name, symbol::NON_DIFFERENTIABLE.as_str());
    }
    let mut seen: Vec<&Ident> = Vec::new();
    let single_inputs = || {
        fwd.params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Tensor(_)) && !p.optional)
    };
    for name in args.dirty() {
        let is_input = single_inputs().any(|p| *p.ident == *name);
        if !is_input {
            cx.error_spanned_by(
                name,
                format!(
                    "`dirty(..)` names the tensor inputs that `{}` modifies in place; expected one of {}",
                    fwd.name(),
                    backticked(single_inputs().map(|p| p.ident))
                ),
            );
        }
        duplicate(cx, &mut seen, name, symbol::DIRTY.as_str());
    }
    let mut seen: Vec<&Ident> = Vec::new();
    for name in args.save() {
        let taken = fwd.params.iter().any(|p| p.ident.unraw() == name.unraw())
            || [symbol::GRAD, symbol::RESULT]
                .iter()
                .any(|reserved| reserved.is_prefix_of(name))
            || *name == symbol::NEEDS_INPUT_GRAD;
        if taken {
            cx.error_spanned_by(
                name,
                format!(
                    "`{name}` is already a name in a backward of `{}` (a parameter, or reserved: `grad*`, `result*`, `needs_input_grad`); name the residual differently",
                    fwd.name()
                ),
            );
        }
        duplicate(cx, &mut seen, name, symbol::SAVE.as_str());
    }
    if fwd.output.vec {
        for (list, option) in [
            (&args.dirty, symbol::DIRTY),
            (&args.non_differentiable, symbol::NON_DIFFERENTIABLE),
        ] {
            if let Some(list) = list {
                cx.error_at(
                    list.keyword,
                    format!(
                        "`{option}(..)` is not supported with a `Vec<Tensor>` output; return a tuple of tensors"
                    ),
                );
            }
        }
    }
    if let Some(rule) = &args.rule {
        if !args.builtin() {
            cx.error_at(
                rule.keyword,
                "`rule` is for the runtime's `builtin` ops; a user function gets its derivative rule without it",
            );
        } else if !crate::expand::rule::fits(args, fwd) {
            cx.error_at(
                rule.keyword,
                format!(
                    "`rule` needs `{}` to take `&Tensor` inputs and attributes and return one tensor, without `save`, `dirty`, `non_differentiable` or `once_differentiable`",
                    fwd.name()
                ),
            );
        }
    }
    if let Some(dirty) = &args.dirty
        && !fwd.output.fallible
        && cx.is_ok()
    {
        cx.error_at(
                dirty.keyword,
                format!(
                    "`dirty(..)` needs `{}` to return a `Result`: modifying a leaf that requires grad in place is an error",
                    fwd.name()
                ),
            );
    }
}

fn duplicate<'a>(cx: &Ctxt, seen: &mut Vec<&'a Ident>, name: &'a Ident, list: &str) {
    if seen.contains(&name) {
        cx.error_spanned_by(name, format!("`{name}` is listed twice in `{list}(..)`"));
    } else {
        seen.push(name);
    }
}

/// A backward against its forward.
pub(crate) fn check_backward(cx: &Ctxt, args: &DiffArgs, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    check_grad_params(cx, args, fwd, bwd);
    check_saved_params(cx, args, fwd, bwd);
    check_return(cx, fwd, bwd);
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn check_grad_params(cx: &Ctxt, args: &DiffArgs, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    if fwd.output.vec {
        return check_vec_grad_params(cx, args, fwd, bwd);
    }
    let expected = fwd.num_outputs();
    let found = bwd.grads.len();
    if found != expected {
        let msg = format!(
            "`#[backward({})]` expects {} (the forward returns {}), found {}",
            fwd.name(),
            plural(expected, "incoming gradient parameter"),
            plural(expected, "tensor"),
            found
        );
        let hint = if expected == 1 {
            "; name it `grad`".to_string()
        } else {
            format!(
                "; name them {}",
                backticked((0..expected).map(|i| format!("{}_{i}", symbol::GRAD)))
            )
        };
        if let Some(extra) = bwd.grads.get(expected) {
            cx.error_spanned_by(extra.original, msg);
        } else if let Some(last) = bwd.grads.last() {
            cx.error_spanned_by(last.original, msg + &hint);
        } else if let Some(first) = bwd.saved.first() {
            cx.error_spanned_by(first.original, msg + &hint);
        } else {
            cx.error_at(ir::params_end(bwd.original), msg + &hint);
        }
    }
    for g in &bwd.grads {
        let ty = g.ty;
        let ok = if args.materialize_grads() {
            is_tensor_ref(ty)
        } else {
            is_option_tensor_ref(ty)
        };
        if ok {
            continue;
        }
        let msg = if !args.materialize_grads() {
            format!(
                "incoming gradient `{}` must be `Option<&Tensor>` because of `materialize_grads = false`, found `{}`",
                g.ident,
                type_string(ty)
            )
        } else if is_option_tensor_ref(ty) {
            format!(
                "incoming gradient `{}` is `&Tensor` (undefined gradients are materialised as zeros); use `materialize_grads = false` on `{}` to receive `Option<&Tensor>`",
                g.ident,
                fwd.name()
            )
        } else {
            format!(
                "incoming gradient `{}` must be `&Tensor`, found `{}`",
                g.ident,
                type_string(ty)
            )
        };
        cx.error_spanned_by(ty, msg);
    }
}

/// A `Vec<Tensor>` forward: one gradient parameter, a slice with one gradient per output.
fn check_vec_grad_params(cx: &Ctxt, args: &DiffArgs, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    let expected = if args.materialize_grads() {
        "&[Tensor]"
    } else {
        "&[Option<Tensor>]"
    };
    let msg = format!(
        "`#[backward({})]` expects 1 incoming gradient parameter, `grad: {expected}` (one gradient per tensor of the forward's `Vec<Tensor>`), found {}",
        fwd.name(),
        bwd.grads.len()
    );
    match bwd.grads.as_slice() {
        [g] => {
            let ok = if args.materialize_grads() {
                is_tensor_slice_ref(g.ty)
            } else {
                is_slice_ref_of(g.ty, |t| ir::option_inner(t).is_some_and(ir::is_tensor))
            };
            if !ok {
                cx.error_spanned_by(
                    g.ty,
                    format!(
                        "incoming gradient `{}` of a `Vec<Tensor>` forward must be `{expected}`, found `{}`",
                        g.ident,
                        type_string(g.ty)
                    ),
                );
            }
        }
        [] => match bwd.saved.first() {
            Some(first) => cx.error_spanned_by(first.original, msg),
            None => cx.error_at(ir::params_end(bwd.original), msg),
        },
        [_, extra, ..] => cx.error_spanned_by(extra.original, msg),
    }
}

fn check_saved_params(cx: &Ctxt, args: &DiffArgs, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    let mut seen: Vec<Source> = Vec::new();
    for p in &bwd.saved {
        let Some(source) = fwd.resolve(p.ident) else {
            let candidates = fwd
                .params
                .iter()
                .map(|p| p.ident.to_string())
                .chain(fwd.output_names())
                .chain(fwd.residuals.iter().map(|r| r.ident.to_string()));
            cx.error_spanned_by(
                p.ident,
                format!(
                    "no parameter `{}` in `{}`; expected one of {}",
                    p.ident,
                    fwd.name(),
                    backticked(candidates)
                ),
            );
            continue;
        };
        if seen.contains(&source) {
            cx.error_spanned_by(p.ident, format!("`{}` is named twice", p.ident));
            continue;
        }
        seen.push(source);
        let mismatch = |expected: String| {
            cx.error_spanned_by(
                p.ty,
                format!(
                    "type of `{}` must match `{}`: expected {}, found `{}`",
                    p.ident,
                    fwd.name(),
                    expected,
                    type_string(p.ty)
                ),
            );
        };
        check_param_attrs(cx, args, fwd, p, source);
        match source {
            Source::NeedsInputGrad => {
                let n = fwd.tensor_inputs().count();
                let fits = is_bool_slice_ref(p.ty)
                    || (!fwd.has_slices() && bool_array_len(p.ty) == Some(n));
                if !fits {
                    let expected = if fwd.has_slices() {
                        "`&[bool]` (one entry per next edge)".to_string()
                    } else {
                        format!("`[bool; {n}]` (one entry per tensor input) or `&[bool]`")
                    };
                    cx.error_spanned_by(
                        p.ty,
                        format!(
                            "`needs_input_grad` must be {expected}, found `{}`",
                            type_string(p.ty)
                        ),
                    );
                }
            }
            Source::Output(_) if fwd.output.vec => {
                if !is_tensor_slice_ref(p.ty) {
                    mismatch("`&[Tensor]` (the outputs of a `Vec<Tensor>` forward)".into());
                }
            }
            Source::Output(_) => check_tensor_type(cx, fwd, p, false),
            // Like an attribute, a residual's type is rustc's to check (spanned assertions).
            Source::Residual(_) => {}
            Source::Param(i) => {
                let fp = &fwd.params[i];
                match fp.kind {
                    ParamKind::Tensor(_) if fp.optional => {
                        if !is_option_tensor_ref(p.ty) {
                            cx.error_spanned_by(
                                p.ty,
                                format!(
                                    "`{}` is an optional input of `{}`, so the backward receives it as `Option<&Tensor>` (`None` when absent), found `{}`",
                                    p.ident,
                                    fwd.name(),
                                    type_string(p.ty)
                                ),
                            );
                        }
                    }
                    ParamKind::Tensor(_) => check_tensor_type(cx, fwd, p, true),
                    ParamKind::Tensors(_) => {
                        if !is_tensor_slice_ref(p.ty)
                            && !is_slice_ref_of(p.ty, ir::is_input_metadata)
                        {
                            mismatch(
                                "`&[Tensor]` (saves the tensors) or `&[InputMetadata]` (saves their shapes, dtypes and devices)".into(),
                            );
                        }
                    }
                    // An attribute's type is rustc's to check, through spanned assertions in
                    // the expansion: that the node can own it (`Clone + Send + Sync + 'static`,
                    // on the forward's type) and that the backward receives it as it asks (on
                    // the backward's type). Comparing tokens here would reject aliases and
                    // paths (`std::vec::Vec<T>` for `Vec<T>`).
                    ParamKind::Attr => {}
                }
            }
        }
    }
}

/// The type of a backward parameter naming a tensor input (`input`) or a forward output:
/// `&Tensor`, `Option<&Tensor>` with `#[needed_for]`, or (inputs only) `&InputMetadata`.
fn check_tensor_type(cx: &Ctxt, fwd: &DiffFn<'_>, p: &BwParam<'_>, input: bool) {
    let ty = p.ty;
    let ok = if p.needed_for.is_some() {
        is_option_tensor_ref(ty)
    } else {
        is_tensor_ref(ty) || (input && is_input_metadata_ref(ty))
    };
    if ok {
        return;
    }
    let msg = if p.needed_for.is_some() {
        format!(
            "`{}` is saved only when needed (`#[needed_for(..)]`), so it must be `Option<&Tensor>`, found `{}`",
            p.ident,
            type_string(ty)
        )
    } else if is_option_tensor_ref(ty) {
        format!(
            "`{}` is `Option<&Tensor>`: add `#[needed_for(input, ..)]` to save it only when one of those inputs needs a gradient, or take `&Tensor`",
            p.ident
        )
    } else {
        format!(
            "type of `{}` must match `{}`: expected `&Tensor`, found `{}`",
            p.ident,
            fwd.name(),
            type_string(ty)
        )
    };
    cx.error_spanned_by(ty, msg);
}

/// `#[needed_for(..)]` names tensor inputs and goes on tensors; `#[original]` goes on `dirty`
/// inputs.
fn check_param_attrs(
    cx: &Ctxt,
    args: &DiffArgs,
    fwd: &DiffFn<'_>,
    p: &BwParam<'_>,
    source: Source,
) {
    let single_tensor = match source {
        Source::Param(i) => matches!(fwd.params[i].kind, ParamKind::Tensor(_)),
        Source::Output(_) => !fwd.output.vec,
        Source::NeedsInputGrad | Source::Residual(_) => false,
    };
    if let Some(needed) = &p.needed_for {
        if !single_tensor {
            cx.error_spanned_by(
                needed.attr,
                format!(
                    "`#[needed_for(..)]` goes on a saved tensor (`Option<&Tensor>`); `{}` is not one",
                    p.ident
                ),
            );
        }
        let mut seen: Vec<&Ident> = Vec::new();
        for name in &needed.names {
            if fwd.tensor_input(name).is_none() {
                cx.error_spanned_by(
                    name,
                    format!(
                        "`#[needed_for(..)]` names tensor inputs of `{}` (whose gradients need this value); expected one of {}",
                        fwd.name(),
                        backticked(fwd.tensor_inputs().map(|p| p.ident))
                    ),
                );
            }
            duplicate(cx, &mut seen, name, symbol::NEEDED_FOR.as_str());
        }
    }
    if let Some(attr) = p.original_value {
        let dirty =
            matches!(source, Source::Param(_)) && args.dirty().iter().any(|d| *d == *p.ident);
        if !dirty {
            cx.error_spanned_by(
                attr,
                format!(
                    "`#[original]` gives the value a `dirty` input had before `{}` modified it; `{}` is not listed in `dirty(..)`",
                    fwd.name(),
                    p.ident
                ),
            );
        }
    }
}

fn check_return(cx: &Ctxt, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    let inputs: Vec<&ir::Param<'_>> = fwd.tensor_inputs().collect();
    let names: Vec<&Ident> = inputs.iter().map(|p| p.ident).collect();
    let expected = inputs.len();
    let found = bwd.output.grads.len();
    let each = if fwd.has_slices() {
        "`Tensor` or `Option<Tensor>` (`Vec<Tensor>` or `Vec<Option<Tensor>>` for a `&[Tensor]` input)"
    } else {
        "`Tensor` or `Option<Tensor>`"
    };
    let what = if expected == 1 {
        let of = if fwd.has_slices() {
            "`Vec<Tensor>` or `Vec<Option<Tensor>>`"
        } else {
            each
        };
        format!("the gradient for `{}` ({of})", names[0])
    } else {
        format!(
            "a tuple of {expected} gradients, one per tensor input of `{}` ({}), each {each}",
            fwd.name(),
            backticked(&names)
        )
    };
    match bwd.output.original {
        syn::ReturnType::Default => {
            cx.error_at(
                ir::params_end(bwd.original),
                format!("`#[backward({})]` must return {what}", fwd.name()),
            );
            return;
        }
        syn::ReturnType::Type(_, ty) if found != expected => {
            cx.error_spanned_by(
                ty,
                format!(
                    "`#[backward({})]` must return {what}, found {}",
                    fwd.name(),
                    plural(found, "gradient")
                ),
            );
            return;
        }
        syn::ReturnType::Type(..) => {}
    }
    for ((ty, kind), input) in bwd.output.grads.iter().zip(&inputs) {
        let slice = matches!(input.kind, ParamKind::Tensors(_));
        if input.optional {
            if *kind != GradType::OptionTensor {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "the gradient for optional input `{}` must be `Option<Tensor>` (`None` when it is absent), found `{}`",
                        input.ident,
                        type_string(ty)
                    ),
                );
            }
            continue;
        }
        let fits = match kind {
            GradType::Tensor | GradType::OptionTensor => !slice,
            GradType::VecTensor | GradType::VecOptionTensor => slice,
            GradType::Other => false,
        };
        if !fits {
            let expected = if slice {
                "`Vec<Tensor>` or `Vec<Option<Tensor>>` (one gradient per tensor of the slice)"
            } else {
                "`Tensor` or `Option<Tensor>`"
            };
            cx.error_spanned_by(
                ty,
                format!(
                    "the gradient for `{}` must be {expected}, found `{}`",
                    input.ident,
                    type_string(ty)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests;
