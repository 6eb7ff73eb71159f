//! What the code `#[derive(Module)]` generates calls (`nn::__private`), and what hand-written
//! containers (`Sequential`, `Vec<M>`, `Box<M>`) share with it: a module's own tensors, then its
//! children's under dotted names, PyTorch's order.

use std::collections::HashSet;
use std::sync::Arc;

use super::Module;
use super::state::join;
use crate::{Result, Tensor};

/// A tensor's identity (the handle's shared allocation): two handles of one tensor (tied
/// weights) have the same.
fn identity(t: &Tensor) -> usize {
    Arc::as_ptr(&t.0) as usize
}

/// `tensors` without the later occurrences of a tensor already listed (PyTorch's
/// `remove_duplicate=True`).
fn dedup(tensors: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    let mut seen = HashSet::new();
    tensors
        .into_iter()
        .filter(|(_, t)| seen.insert(identity(t)))
        .collect()
}

/// A module's own tensors (an absent optional one skipped), then each child's as `of` lists
/// them, prefixed with the child's name; a tensor held twice is listed once.
pub fn named<const N: usize>(
    own: [(&str, Option<&Tensor>); N],
    module: &dyn Module,
    of: fn(&dyn Module) -> Vec<(String, Tensor)>,
) -> Vec<(String, Tensor)> {
    let mut out: Vec<(String, Tensor)> = own
        .into_iter()
        .filter_map(|(name, t)| Some((name.to_owned(), t?.clone())))
        .collect();
    for (child, m) in module.named_children() {
        out.extend(of(m).into_iter().map(|(n, t)| (join(&child, &n), t)));
    }
    dedup(out)
}

/// Calls `f` on a module's own tensors, an absent optional one skipped.
pub fn visit_own<const N: usize>(
    own: [(&str, Option<&mut Tensor>); N],
    f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
) -> Result<()> {
    for (name, t) in own {
        if let Some(t) = t {
            f(name, t)?;
        }
    }
    Ok(())
}

/// Calls `f` on every parameter of the children of `module`, under dotted names.
pub fn visit_children_parameters(
    module: &mut dyn Module,
    f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
) -> Result<()> {
    module.visit_children_mut(&mut |child, m| {
        m.visit_parameters_mut(&mut |n, t| f(&join(child, n), t))
    })
}

/// Calls `f` on every buffer of the children of `module`, under dotted names.
pub fn visit_children_buffers(
    module: &mut dyn Module,
    f: &mut dyn FnMut(&str, &mut Tensor) -> Result<()>,
) -> Result<()> {
    module
        .visit_children_mut(&mut |child, m| m.visit_buffers_mut(&mut |n, t| f(&join(child, n), t)))
}

/// A module's own non-persistent buffer names, then its children's, dotted.
pub fn non_persistent(own: &[&str], module: &dyn Module) -> Vec<String> {
    let mut out: Vec<String> = own.iter().map(|&n| n.to_owned()).collect();
    for (child, m) in module.named_children() {
        out.extend(
            m.non_persistent_buffers()
                .into_iter()
                .map(|n| join(&child, &n)),
        );
    }
    out
}

/// Sets the mode of every child of `module`.
pub fn set_children_training(module: &mut dyn Module, training: bool) {
    // The closure never fails.
    let _ = module.visit_children_mut(&mut |_, m| {
        m.set_training(training);
        Ok(())
    });
}

/// The mode of a module that keeps none of its own: its first child's, or `true`.
pub fn children_training(module: &dyn Module) -> bool {
    module
        .named_children()
        .first()
        .is_none_or(|(_, m)| m.is_training())
}

/// `nn.Module.__repr__`: `name`, its `extra_repr`, and its children.
pub fn repr(name: &str, extra: Option<String>, module: &dyn Module) -> String {
    super::repr::module(
        name,
        extra.as_deref().unwrap_or(""),
        module.named_children(),
    )
}
