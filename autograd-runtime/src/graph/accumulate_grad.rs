//! `AccumulateGrad`: the sink node of a leaf that adds incoming gradients into its `.grad` (B16),
//! then runs its post-accumulate-grad hooks (B20).

use smallvec::smallvec;

use super::{GradVec, InputMetadata, Node, NodeMeta};
use crate::layout::Layout;
use crate::sync::{Arc, Mutex};
use crate::{Error, Result, Tensor, is_grad_enabled};

/// Accumulates gradients into one leaf. The leaf holds it weakly; it holds the leaf strongly.
pub(crate) struct AccumulateGrad {
    meta: NodeMeta,
    variable: Tensor,
    /// Serialises accumulation from concurrent backward passes (PyTorch's node mutex).
    lock: Mutex<()>,
}

impl AccumulateGrad {
    pub(crate) fn new(variable: Tensor) -> AccumulateGrad {
        let meta = NodeMeta::with_sequence_nr(
            u64::MAX,
            smallvec![],
            smallvec![InputMetadata::of(&variable)],
        );
        AccumulateGrad {
            meta,
            variable,
            lock: Mutex::new(()),
        }
    }
}

/// Whether the engine may store `grad` itself as `.grad` instead of copying it: nobody else can
/// observe it (one handle — plus the engine's copy for post-hooks, as PyTorch's
/// `1 + has_post_hooks` — sole owner of its storage) and it obeys the layout contract.
fn can_steal(grad: &Tensor, variable: &Tensor, expected_refs: usize) -> bool {
    Arc::strong_count(&grad.0) <= expected_refs
        && Arc::strong_count(&grad.0.storage) == 1
        && grad.layout().offset == 0
        && !grad.is_view()
        && grad.grad_fn().is_none()
        && obeys_layout_contract(grad, variable)
}

/// PyTorch's gradient layout contract: a leaf whose elements are dense (contiguous, transposed,
/// permuted) gets a `.grad` with its own strides; any other leaf a contiguous one.
fn obeys_layout_contract(grad: &Tensor, variable: &Tensor) -> bool {
    let v = variable.layout();
    if !v.is_non_overlapping_and_dense() {
        return grad.is_contiguous();
    }
    let g = grad.layout();
    // Strides of size-1 dims say nothing about the layout, except that a 0 there marks an
    // expanded view (PyTorch's `obeys_layout_contract` refuses those too).
    g.shape
        .iter()
        .zip(g.strides.iter().zip(&v.strides))
        .all(|(&n, (&gs, &vs))| if n == 1 { gs != 0 } else { gs == vs })
        && g.is_non_overlapping_and_dense()
}

/// A copy of `grad` that obeys the layout contract for `variable` (PyTorch's
/// `clone_obey_contract`): with the leaf's strides when its elements are dense, else contiguous.
///
/// Under grad mode (a `create_graph` pass) it is recorded as PyTorch records it, so the new
/// `.grad` has history: for a dense leaf, a fresh tensor with the leaf's sizes and strides into
/// which `grad` is copied (`new_empty_strided(..).copy_(grad)`: `CopyBackwards`), else
/// `grad.clone(contiguous)` (`CloneBackward0`). Either way the `.grad` is not a view.
fn clone_obey_contract(grad: &Tensor, variable: &Tensor) -> Result<Tensor> {
    let v = variable.layout();
    let dense = v.is_non_overlapping_and_dense();
    if is_grad_enabled() {
        if !dense {
            return grad.copy();
        }
        let fresh = Tensor::filled(&[v.numel()], 0.0, variable.dtype(), variable.device())?;
        let fresh = fresh.reinterpret(Layout {
            shape: v.shape.clone(),
            strides: v.strides.clone(),
            offset: 0,
        });
        fresh.copy_(grad)?;
        return Ok(fresh);
    }
    if v.is_contiguous() || !dense {
        return grad.contiguous_data_owned();
    }
    // The leaf's dims from the outermost in memory to the innermost: a contiguous copy of the
    // gradient permuted that way, permuted back, has the leaf's strides.
    let mut order: Vec<usize> = (0..v.shape.len()).collect();
    order.sort_by(|&a, &b| v.strides[b].cmp(&v.strides[a]).then(a.cmp(&b)));
    let mut inverse = vec![0; order.len()];
    for (i, &d) in order.iter().enumerate() {
        inverse[d] = i;
    }
    let out = grad
        .permute(&order)?
        .contiguous_data_owned()?
        .permute(&inverse)?;
    // Not a view of a hidden buffer: the same storage under the permuted layout.
    Ok(out.reinterpret(out.layout().clone()))
}

impl Node for AccumulateGrad {
    fn name(&self) -> &str {
        "AccumulateGrad"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn accumulates_into(&self) -> Option<&Tensor> {
        Some(&self.variable)
    }

    fn apply(&self, mut grads: GradVec) -> Result<GradVec> {
        let Some(new_grad) = grads.get_mut(0).and_then(Option::take) else {
            return Ok(smallvec![]);
        };
        let serialised = self.lock.lock();
        let var = &self.variable;
        let old = {
            let mut meta = var.meta_lock();
            if meta.grad_fn.is_some() {
                return Err(Error::msg(
                    "leaf variable has been moved into the graph interior",
                ));
            }
            if !meta.requires_grad {
                return Ok(smallvec![]);
            }
            meta.grad.take()
        };
        let grad_mode = is_grad_enabled();
        let updated = match old {
            None if !grad_mode
                && can_steal(
                    &new_grad,
                    var,
                    1 + usize::from(self.meta.hooks.has_post_hooks()),
                ) =>
            {
                new_grad
            }
            None => clone_obey_contract(&new_grad, var)?,
            Some(old) if !grad_mode => {
                old.accumulate_in_place(&new_grad)?;
                old
            }
            Some(old) => old.add(&new_grad)?,
        };
        let hooks = {
            let mut meta = var.meta_lock();
            meta.grad = Some(updated);
            meta.leaf_hooks
                .as_ref()
                .map(|h| h.post_accumulate.clone())
                .unwrap_or_default()
        };
        // User hooks run unlocked: one that starts a backward reaching this leaf must not deadlock.
        drop(serialised);
        for (_, hook) in hooks {
            hook(var)?;
        }
        Ok(smallvec![])
    }
}
