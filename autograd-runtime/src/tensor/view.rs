//! Differentiable views, as PyTorch's `DifferentiableViewMeta`/`ViewInfo`: a view knows its base
//! (the root tensor whose storage it aliases), the version of that storage when its `grad_fn` was
//! last set (`attr_version`), and how it was created (`CreationMeta`). Reading the `grad_fn` of a
//! view whose storage changed since then regenerates it over the base's *current* history, as an
//! `AsStridedBackward0` node (PyTorch's `VariableHooks::grad_fn`): that is how a view taken before
//! an in-place op on its base, or on a sibling view, sees the modification.
//!
//! Only a non-view tensor's fields are read on the hot path: every function here starts from
//! `TensorImpl::view`, which is `None` for them.

use super::{AutogradMeta, Tensor};
use crate::graph::copy_slices::{AsStridedBackward, StridedGeometry};
use crate::graph::{Edge, NodeRef};
use crate::sync::Mutex;
use crate::{Error, Result};

/// How a view was created, which decides whether it may be modified in place (PyTorch's
/// `CreationMeta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CreationMeta {
    /// An ordinary view made with grad mode on (or not a view at all).
    #[default]
    Default,
    /// One of several views returned by one op (`split`, `chunk`): refused in place.
    MultiOutput,
    /// Made with grad mode off: refused in place when the op is recorded.
    NoGradMode,
    /// Returned by a custom function's forward (a view made there, or an input returned as
    /// is): refused in place, and refused once its base changed, since the view+inplace logic
    /// would replace the custom backward (PyTorch's `IN_CUSTOM_FUNCTION`).
    InCustomFunction,
    /// Made in inference mode (of a normal tensor): refused in place when the op is recorded.
    InferenceMode,
}

impl CreationMeta {
    /// PyTorch's `propagate_creation_meta`: a view of a view keeps the stricter kind.
    pub(crate) fn propagate(parent: CreationMeta, new: CreationMeta) -> CreationMeta {
        if new == CreationMeta::Default {
            parent
        } else {
            new
        }
    }

    /// The creation kind of a view made now by an op returning one view (`multi = false`) or
    /// several.
    pub(crate) fn for_new_view(multi: bool) -> CreationMeta {
        let modes = crate::grad_mode::state();
        if modes.inference() {
            CreationMeta::InferenceMode
        } else if !modes.grad() {
            CreationMeta::NoGradMode
        } else if multi {
            CreationMeta::MultiOutput
        } else {
            CreationMeta::Default
        }
    }
}

/// What a view knows beyond an ordinary tensor (PyTorch's `ViewInfo` plus the view fields of
/// `DifferentiableViewMeta`).
pub(crate) struct ViewInfo {
    /// The root tensor whose storage the view aliases (never a view itself).
    pub(crate) base: Tensor,
    /// Changed together with the view's `grad_fn`, while its autograd lock is held; this inner
    /// lock is a leaf (nothing else is locked while it is held).
    state: Mutex<ViewState>,
}

/// The part of a view's state that changes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewState {
    /// The storage version when `grad_fn` was last set (PyTorch's `attr_version`).
    pub(crate) attr_version: u64,
    pub(crate) creation: CreationMeta,
}

impl ViewInfo {
    /// An ordinary view of `base` whose grad_fn is current at storage version `version`.
    pub(crate) fn new(base: Tensor, version: u64) -> ViewInfo {
        ViewInfo {
            base,
            state: Mutex::new(ViewState {
                attr_version: version,
                creation: CreationMeta::Default,
            }),
        }
    }

    pub(crate) fn state(&self) -> ViewState {
        *self.state.lock()
    }

    fn update(&self, f: impl FnOnce(&mut ViewState)) {
        f(&mut self.state.lock());
    }
}

impl Tensor {
    /// Marks this fresh view as made by an op that returns one view (`multi = false`) or several,
    /// under the current grad mode, from `parent` (the op's input): PyTorch's `as_view` creation
    /// meta. Called by the public view methods, which know the caller's grad mode (the op's
    /// forward itself runs with recording off).
    pub(crate) fn set_view_creation(&self, parent: &Tensor, multi: bool) {
        let Some(view) = &self.0.view else {
            return;
        };
        let parent_kind = parent
            .0
            .view
            .as_ref()
            .map_or(CreationMeta::Default, |v| v.state().creation);
        let kind = CreationMeta::propagate(parent_kind, CreationMeta::for_new_view(multi));
        let _meta = self.0.autograd.lock();
        view.update(|s| s.creation = kind);
    }

    /// A view of this tensor with its own geometry (PyTorch's `view_as(self)`), made under the
    /// current grad mode: what a custom function returns for an input it returns as is, so that
    /// the node can be attached to the result without touching the input's history.
    pub(crate) fn view_as_self(&self) -> Tensor {
        let view = self.alias_with_layout(self.0.layout.clone());
        view.set_view_creation(self, false);
        view
    }

    /// Marks this output of a custom function, if it is a view, as created there (`multi`: one of
    /// several differentiable outputs, PyTorch's `MULTI_OUTPUT_NODE` then), with its grad_fn
    /// current at today's version: PyTorch's `set_gradient_edge` and the creation meta
    /// `_process_backward_mode_ad` sets.
    pub(crate) fn mark_custom_function_view(&self, multi: bool) {
        let Some(view) = &self.0.view else {
            return;
        };
        let _meta = self.0.autograd.lock();
        let version = self.version();
        view.update(|s| {
            s.attr_version = version;
            s.creation = if multi {
                CreationMeta::MultiOutput
            } else {
                CreationMeta::InCustomFunction
            };
        });
    }

    /// Marks this view's grad_fn as out of date, so that the next read regenerates it.
    pub(crate) fn invalidate_view_grad_fn(&self) {
        if let Some(view) = &self.0.view {
            let _meta = self.0.autograd.lock();
            let stale = self.version().wrapping_sub(1);
            view.update(|s| s.attr_version = stale);
        }
    }

    /// The grad_fn of a view, regenerated if its storage changed since it was set. `Err` is
    /// PyTorch's error for a view that may not be rebased (multi-output, no-grad); the caller
    /// holds `meta`, this view's lock (the base's lock is taken inside: a base is never a view,
    /// so the order view → base never reverses).
    pub(crate) fn view_grad_fn_locked(
        &self,
        view: &ViewInfo,
        meta: &mut AutogradMeta,
    ) -> Result<Option<NodeRef>> {
        let base = &view.base;
        if meta.grad_fn.is_none() && !base.requires_grad() {
            return Ok(None);
        }
        let current = self.version();
        let state = view.state();
        if state.attr_version == current {
            return Ok(meta.grad_fn.clone());
        }
        // An indirect rebase: the base or another view of it was modified in place.
        if state.creation != CreationMeta::Default {
            return Err(view_rebase_error(meta, state.creation, true));
        }
        let geometry = StridedGeometry::of(base, self)?;
        let node = AsStridedBackward::new(self, base.gradient_edge(), geometry);
        let node = NodeRef::new(crate::sync::Arc::new(node));
        let old = meta.grad_fn.replace(node.clone());
        let old_nr = std::mem::replace(&mut meta.output_nr, 0);
        view.update(|s| s.attr_version = current);
        if meta.retains_grad {
            // The retains_grad hook moves to the new grad_fn (PyTorch's
            // `update_tensor_hooks_on_new_gradfn`); other hooks stay with the old node.
            if let Some(old) = old {
                old.meta().clear_retains_grad(old_nr);
            }
            node.meta()
                .set_retains_grad(0, crate::sync::Arc::downgrade(&self.0));
        }
        Ok(Some(node))
    }

    /// PyTorch's `handle_view_on_rebase` for a direct in-place op on this view: `Err` unless
    /// it was created as an ordinary view.
    pub(crate) fn check_view_rebase(&self) -> Result<()> {
        let Some(view) = &self.0.view else {
            return Ok(());
        };
        let meta = self.0.autograd.lock();
        let creation = view.state().creation;
        if creation == CreationMeta::Default {
            return Ok(());
        }
        Err(view_rebase_error(&meta, creation, false))
    }

    /// The grad_fn as PyTorch's `grad_fn` accessor reads it: a view's regenerated if stale, or
    /// PyTorch's error for a stale view that may not be rebased (what `register_hook`,
    /// `retain_grad` and the hooks' other front doors report, as PyTorch's do).
    pub(crate) fn try_grad_fn(&self) -> Result<Option<NodeRef>> {
        let mut meta = self.0.autograd.lock();
        match &self.0.view {
            None => Ok(meta.grad_fn.clone()),
            Some(view) => self.view_grad_fn_locked(view, &mut meta),
        }
    }

    /// The gradient edge, or PyTorch's error for a stale view that may not be rebased.
    pub(crate) fn try_gradient_edge(&self) -> Result<Option<Edge>> {
        let mut meta = self.0.autograd.lock();
        if let Some(view) = &self.0.view {
            if let Some(f) = self.view_grad_fn_locked(view, &mut meta)? {
                return Ok(Some(Edge::new(f, meta.output_nr)));
            }
        } else if let Some(f) = &meta.grad_fn {
            return Ok(Some(Edge::new(f.clone(), meta.output_nr)));
        }
        if !meta.requires_grad {
            return Ok(None);
        }
        Ok(Some(Edge::new(self.grad_accumulator_locked(&mut meta), 0)))
    }
}

/// PyTorch's `handle_view_on_rebase` message.
fn view_rebase_error(meta: &AutogradMeta, creation: CreationMeta, indirect: bool) -> Error {
    let modified = if indirect {
        "its base or another view of its base has been"
    } else {
        "is being"
    };
    let mode = if creation == CreationMeta::InferenceMode {
        format!("inference mode and {modified} modified inplace in normal mode.")
    } else {
        format!("no_grad mode and {modified} modified inplace with grad mode enabled.")
    };
    // PyTorch words a view with a grad_fn as "a view of a view which was created in .. mode"
    // only for the no_grad and inference kinds.
    let of_a_view = matches!(
        creation,
        CreationMeta::NoGradMode | CreationMeta::InferenceMode
    );
    let mut msg = match &meta.grad_fn {
        Some(f) if !of_a_view => format!(
            "Output {} of {} is a view and {modified} modified inplace.",
            meta.output_nr,
            crate::error::short_node_name(f.name())
        ),
        Some(f) => format!(
            "Output {} of {} is a view of a view which was created in {mode}",
            meta.output_nr,
            crate::error::short_node_name(f.name())
        ),
        None => format!("A view was created in {mode}"),
    };
    match creation {
        CreationMeta::MultiOutput => msg.push_str(
            " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.",
        ),
        CreationMeta::NoGradMode => msg.push_str(
            " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
        ),
        CreationMeta::InCustomFunction => msg.push_str(
            " This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
        ),
        CreationMeta::InferenceMode => msg.push_str(
            " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
        ),
        CreationMeta::Default => {}
    }
    Error::ViewRebase(msg)
}
