//! Rules that relate parts of the DSL to each other: options against the forward's parameters and
//! outputs, and a backward against its forward (gradient counts, names and types).

use syn::visit::Visit;
use syn::{Ident, Type};

use crate::attr::{backticked, DiffArgs};
use crate::ctxt::Ctxt;
use crate::ir::{
    self, is_option_tensor_ref, is_tensor_ref, type_string, BackwardFn, DiffFn, GradType,
    ParamKind, Source,
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
    for name in args.dirty() {
        let is_input = fwd.tensor_inputs().any(|p| *p.ident == *name);
        if !is_input {
            cx.error_spanned_by(
                name,
                format!(
                    "`dirty(..)` names the tensor inputs that `{}` modifies in place; expected one of {}",
                    fwd.name(),
                    backticked(fwd.tensor_inputs().map(|p| p.ident))
                ),
            );
        }
        duplicate(cx, &mut seen, name, symbol::DIRTY.as_str());
    }
    if let Some(dirty) = &args.dirty {
        if !fwd.output.fallible && cx.is_ok() {
            cx.error_at(
                dirty.keyword,
                format!(
                    "`dirty(..)` needs `{}` to return a `Result`: modifying a leaf that requires grad in place is an error",
                    fwd.name()
                ),
            );
        }
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
    check_saved_params(cx, fwd, bwd);
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

fn check_saved_params(cx: &Ctxt, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    let mut seen: Vec<Source> = Vec::new();
    for p in &bwd.saved {
        let Some(source) = fwd.resolve(p.ident) else {
            let candidates = fwd
                .params
                .iter()
                .map(|p| p.ident.to_string())
                .chain(fwd.output_names());
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
        match source {
            Source::Output(_) => {
                if !is_tensor_ref(p.ty) {
                    mismatch("`&Tensor`".into());
                }
            }
            Source::Param(i) => {
                let fp = &fwd.params[i];
                match fp.kind {
                    ParamKind::Tensor(_) => {
                        if !is_tensor_ref(p.ty) {
                            mismatch("`&Tensor`".into());
                        }
                    }
                    ParamKind::Attr => {
                        if borrows(fp.ty) {
                            cx.error_spanned_by(
                                p.ident,
                                format!(
                                    "`{}` cannot be saved for the backward pass: its type `{}` in `{}` borrows; make that parameter an owned type",
                                    p.ident,
                                    type_string(fp.ty),
                                    fwd.name()
                                ),
                            );
                        } else if attr_access(fp.ty, p.ty).is_none() {
                            let t = type_string(fp.ty);
                            mismatch(format!("`{t}` (or `&{t}`)"));
                        }
                    }
                }
            }
        }
    }
}

/// How a backward receives a saved attribute of forward type `forward`: `Some(false)` by value
/// (a clone), `Some(true)` by reference, `None` if `backward` fits neither.
pub(crate) fn attr_access(forward: &Type, backward: &Type) -> Option<bool> {
    if backward == forward {
        return Some(false);
    }
    match backward {
        Type::Reference(r)
            if r.mutability.is_none() && r.lifetime.is_none() && *r.elem == *forward =>
        {
            Some(true)
        }
        _ => None,
    }
}

/// The type holds a reference or a lifetime, so a node cannot own it.
fn borrows(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_type_reference(&mut self, _: &'ast syn::TypeReference) {
            self.0 = true;
        }
        fn visit_lifetime(&mut self, _: &'ast syn::Lifetime) {
            self.0 = true;
        }
    }
    let mut f = Finder(false);
    f.visit_type(ty);
    f.0
}

fn check_return(cx: &Ctxt, fwd: &DiffFn<'_>, bwd: &BackwardFn<'_>) {
    let inputs: Vec<&Ident> = fwd.tensor_inputs().map(|p| p.ident).collect();
    let expected = inputs.len();
    let found = bwd.output.grads.len();
    let what = if expected == 1 {
        format!(
            "the gradient for `{}` (`Tensor` or `Option<Tensor>`)",
            inputs[0]
        )
    } else {
        format!(
            "a tuple of {expected} gradients, one per tensor input of `{}` ({}), each `Tensor` or `Option<Tensor>`",
            fwd.name(),
            backticked(&inputs)
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
        if *kind == GradType::Other {
            cx.error_spanned_by(
                ty,
                format!(
                    "the gradient for `{input}` must be `Tensor` or `Option<Tensor>`, found `{}`",
                    type_string(ty)
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests;
