//! The `# Autograd` section a derived function's rustdoc gains.

use crate::ir::body::Body;
use crate::ir::{DiffFn, ParamKind};

/// The section a derived function's rustdoc gains (as `expand::forward::doc_section` for a
/// hand-written pair): its node, the ops its backward is derived from, its inputs, which values
/// the node may keep and which the forward alone uses, and double differentiability.
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
