//! The nodes that make in-place ops on views correct (PyTorch's `CopySlices` and the regenerated
//! view `grad_fn`, `AsStridedBackward0`), and `ErrorNode`, the grad_fn of a view PyTorch refuses
//! to rebase.
//!
//! With base `b` and view `v`, `v.op_(other)` records the op's node `f` (edges: `v`'s history
//! before the op, `other`) and then (`rebase_view_history`):
//! * `b.grad_fn = CopySlices { f }` with edges `[b's old history, f's other edges...]`: given the
//!   gradient `g` w.r.t. the new `b`, it runs `f` on `g`'s view region; `f`'s result for `v`'s
//!   old value replaces that region of `g` (the gradient w.r.t. the old `b`), the rest of `f`'s
//!   results go to `other`;
//! * every view of `b` whose storage version moved on (`v` itself, its siblings, views taken
//!   before an in-place op on `b`) regenerates its grad_fn when read: an `AsStridedBackward0`
//!   whose edge is `b`'s current history (`tensor/view.rs`).
//!
//! Both are written with differentiable ops (`as_strided`, `as_strided_scatter`), so a
//! `create_graph` pass records them and double backward goes through in-place ops on views.
//! Geometry is in storage coordinates, as PyTorch's `TensorGeometry`: any base whose elements are
//! dense (contiguous, transposed, permuted) works.

use smallvec::smallvec;

use super::{Edge, GradVec, InputMetadata, Node, NodeMeta, NodeRef};
use crate::layout::{Dims, Layout};
use crate::{Error, Result, Tensor};

/// Where a view's elements sit in its base's storage: the base's layout and the view's, both
/// relative to the base's first element (PyTorch's `TensorGeometry` pair of `CopySlices`).
#[derive(Clone, Debug)]
pub(crate) struct StridedGeometry {
    /// The base's shape and strides, offset 0. Dense, in some dimension order.
    pub(crate) base: Layout,
    /// The view's shape, strides and offset from the base's first element.
    pub(crate) view: Layout,
}

impl StridedGeometry {
    /// The geometry of `view` inside `base`.
    ///
    /// # Errors
    ///
    /// When `base`'s elements are not dense (an `expand`ed tensor detached into a base), which
    /// PyTorch's `as_strided` geometry cannot describe either.
    pub(crate) fn of(base: &Tensor, view: &Tensor) -> Result<StridedGeometry> {
        let b = base.layout();
        if !b.is_non_overlapping_and_dense() {
            return Err(Error::msg(
                "an in-place operation through a view of a tensor whose elements overlap (an expanded tensor) is not supported; clone() the base first",
            ));
        }
        let mut v = view.layout().clone();
        v.offset = v
            .offset
            .checked_sub(b.offset)
            .ok_or_else(|| Error::msg("internal error: a view starts before its base"))?;
        Ok(StridedGeometry {
            base: Layout {
                shape: b.shape.clone(),
                strides: b.strides.clone(),
                offset: 0,
            },
            view: v,
        })
    }

    /// The dims along which the view repeats elements (stride 0, size > 1: an `expand`).
    fn repeated_dims(&self) -> Dims {
        self.view
            .shape
            .iter()
            .zip(&self.view.strides)
            .enumerate()
            .filter(|&(_, (&n, &s))| n > 1 && s == 0)
            .map(|(d, _)| d)
            .collect()
    }

    /// Whether the view covers an element of the base more than once.
    pub(crate) fn repeats(&self) -> bool {
        !self.repeated_dims().is_empty()
    }

    /// This geometry with the repeated dims cut to size 1: each element of the base at most once.
    fn without_repeats(&self, repeated: &[usize]) -> StridedGeometry {
        let mut g = self.clone();
        for &d in repeated {
            g.view.shape[d] = 1;
        }
        g
    }

    /// A fresh tensor shaped like the base, laid out in the base's memory order, holding `t`'s
    /// values (PyTorch's `new_empty_strided(base.sizes(), base.strides())` then `copy_`).
    pub(crate) fn base_ordered(&self, t: &Tensor) -> Result<Tensor> {
        let n = self.base.numel();
        let flat = Tensor::filled(&[n], 0.0, t.dtype(), t.device())?;
        let out = flat.reinterpret(self.base.clone());
        out.copy_from(t)?;
        Ok(out)
    }

    /// An alias of `base_ordered`'s elements that the view covers.
    pub(crate) fn region(&self, base_ordered: &Tensor) -> Tensor {
        base_ordered.reinterpret(self.view.clone())
    }

    /// The gradient w.r.t. the base from `grad`, the gradient w.r.t. the view: zeros with `grad`
    /// added at the view's elements (summed where the view repeats one). Differentiable.
    pub(crate) fn scatter_view_grad(&self, grad: &Tensor) -> Result<Tensor> {
        let repeated = self.repeated_dims();
        let (grad, geometry) = if repeated.is_empty() {
            (grad.clone(), self.clone())
        } else {
            let dims: Vec<usize> = repeated.to_vec();
            (grad.sum_dims(&dims, true)?, self.without_repeats(&repeated))
        };
        let zeros = Tensor::filled(self.base.shape.as_slice(), 0.0, grad.dtype(), grad.device())?;
        zeros.as_strided_scatter(&grad, &geometry)
    }
}

/// PyTorch's `CopySlices`: the base's grad_fn after an in-place op on one of its views.
pub(crate) struct CopySlices {
    meta: NodeMeta,
    geometry: StridedGeometry,
    /// The in-place op's node; not part of the graph itself (its edges are mirrored here).
    op: NodeRef,
}

impl CopySlices {
    /// `base_edge`: the base's history before the op; `op`: the op's node, whose first edge is
    /// the view's history before the op.
    pub(crate) fn new(
        base: &Tensor,
        base_edge: Option<Edge>,
        geometry: StridedGeometry,
        op: NodeRef,
    ) -> CopySlices {
        let mut edges: smallvec::SmallVec<[Option<Edge>; 2]> = smallvec![base_edge];
        edges.extend(op.meta().next_edges().iter().skip(1).cloned());
        CopySlices {
            meta: NodeMeta::new(edges, smallvec![InputMetadata::of(base)]),
            geometry,
            op,
        }
    }
}

impl Node for CopySlices {
    fn name(&self) -> &str {
        "CopySlices"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, grads: GradVec) -> Result<GradVec> {
        let n = self.meta.num_outputs();
        let Some(grad) = grads.into_iter().next().flatten() else {
            return Ok(smallvec![None; n]);
        };
        // The op's gradients for the view's region of `grad` (recorded under create_graph).
        let region = grad.as_strided(&self.geometry)?;
        let mut res = self.op.apply(smallvec![Some(region)])?;
        let mut out: GradVec = smallvec![None; n];
        if self.meta.needs_input_grad(0) {
            // The old base's gradient: `grad` outside the region, the op's gradient for the
            // view's old value inside (zeros where the op gives none).
            let inside = match res.first_mut().and_then(Option::take) {
                Some(g) => g,
                None => Tensor::filled(
                    self.geometry.view.shape.as_slice(),
                    0.0,
                    grad.dtype(),
                    grad.device(),
                )?,
            };
            out[0] = Some(grad.as_strided_scatter(&inside, &self.geometry)?);
        }
        for (slot, g) in out.iter_mut().zip(res).skip(1) {
            *slot = g;
        }
        Ok(out)
    }

    fn release_saved(&self) {
        self.op.release_saved();
    }

    fn visit_saved_tensors(&self, visit: &mut dyn FnMut(&str, &super::SavedTensor)) {
        self.op.visit_saved_tensors(visit);
    }
}

/// The grad_fn a view gets when it is regenerated over its base's current history (PyTorch's
/// `AsStridedBackward0`): scatters the view's gradient into zeros shaped like the base.
pub(crate) struct AsStridedBackward {
    meta: NodeMeta,
    geometry: StridedGeometry,
}

impl AsStridedBackward {
    pub(crate) fn new(
        view: &Tensor,
        base_edge: Option<Edge>,
        geometry: StridedGeometry,
    ) -> AsStridedBackward {
        AsStridedBackward {
            meta: NodeMeta::new(smallvec![base_edge], smallvec![InputMetadata::of(view)]),
            geometry,
        }
    }
}

impl Node for AsStridedBackward {
    fn name(&self) -> &str {
        "AsStridedBackward0"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, grads: GradVec) -> Result<GradVec> {
        let Some(grad) = grads.into_iter().next().flatten() else {
            return Ok(smallvec![None]);
        };
        Ok(smallvec![Some(self.geometry.scatter_view_grad(&grad)?)])
    }
}

/// The grad_fn of a view PyTorch refuses to rebase (PyTorch's `Error` node): fails with the
/// error its `grad_fn` read gave, when the engine runs it.
pub(crate) struct ErrorNode {
    meta: NodeMeta,
    message: String,
}

impl ErrorNode {
    pub(crate) fn node(error: Error, t: &Tensor) -> NodeRef {
        let message = match error {
            Error::ViewRebase(m) => m,
            other => other.to_string(),
        };
        NodeRef::new(crate::sync::Arc::new(ErrorNode {
            meta: NodeMeta::new(smallvec![], smallvec![InputMetadata::of(t)]),
            message,
        }))
    }
}

impl Node for ErrorNode {
    fn name(&self) -> &str {
        "Error"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, _grads: GradVec) -> Result<GradVec> {
        Err(Error::ViewRebase(self.message.clone()))
    }
}

/// After an in-place op on the view `view` was recorded (its node is now `view`'s grad_fn), moves
/// the op into the base's history: `base.grad_fn = CopySlices` over the base's gradient edge from
/// before, and `view`'s grad_fn regenerated over it (PyTorch's `rebase_history` for views).
fn rebase_view_history(view: &Tensor, base: &Tensor) -> Result<()> {
    let geometry = StridedGeometry::of(base, view)?;
    let base_edge = base.gradient_edge();
    let op = {
        let meta = view.meta_lock();
        meta.grad_fn.clone()
    };
    let Some(op) = op else {
        return Err(Error::msg(
            "internal error: an in-place op on a view was not recorded",
        ));
    };
    let copy_slices = NodeRef::new(crate::sync::Arc::new(CopySlices::new(
        base, base_edge, geometry, op,
    )));
    base.set_grad_fn(copy_slices, 0);
    // The view's own history is now the base's: mark it stale (the op bumped the version too,
    // unless a custom function's forward wrote without doing so) and regenerate it over
    // CopySlices.
    view.invalidate_view_grad_fn();
    view.grad_fn();
    Ok(())
}

/// After a custom `#[differentiable(dirty(..))]` function modified the view `t` in place and
/// its node was recorded, moves that node into the base's history as built-in in-place ops do
/// (PyTorch's `rebase_history` through `mark_dirty`). A no-op for a tensor that is not a view.
///
/// # Errors
///
/// PyTorch's "If your Function modifies inplace an input that is a view of another Tensor, your
/// Function cannot return more than one Tensor. ..." when the node has several outputs.
#[doc(hidden)]
pub fn rebase_dirty_view(t: &Tensor, node: &NodeRef) -> Result<()> {
    let Some(base) = t.view_base().cloned() else {
        return Ok(());
    };
    if node.meta().num_inputs() != 1 {
        return Err(Error::msg(
            "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change.",
        ));
    }
    rebase_view_history(t, &base)
}

/// After a built-in in-place op on the view `t` recorded `node`, moves the node into the base's
/// history (PyTorch's `rebase_history`, which its generated code calls right after recording,
/// before the op's forward derivative reads the view). A no-op for a tensor that is not a view
/// and for a node that is not `t`'s grad_fn (built for tangents only, with nothing recorded).
///
/// # Errors
///
/// The view's geometry's (a view its base's storage cannot describe).
#[doc(hidden)]
pub fn rebase_inplace_view(t: &Tensor, node: &NodeRef) -> Result<()> {
    let Some(base) = t.view_base().cloned() else {
        return Ok(());
    };
    let recorded =
        t.0.autograd
            .lock()
            .grad_fn
            .as_ref()
            .is_some_and(|g| g.ptr_eq(node));
    if !recorded {
        return Ok(());
    }
    rebase_view_history(t, &base)
}

/// The checks a custom function's dirty input gets after the forward, in PyTorch's order: a leaf
/// that requires grad (PyTorch's `is_leaf()` reads the grad_fn field as it is, so a view made
/// with recording off counts as a leaf, whatever its base's history), then for a view
/// `check_inplace`'s errors for a view that may not be rebased and for a view of a leaf that
/// requires grad.
///
/// # Errors
///
/// [`Error::Message`] ("a leaf Variable that requires grad has been used in an in-place
/// operation."), [`Error::ViewRebase`], [`Error::ViewOfLeafInPlace`].
#[doc(hidden)]
pub fn check_dirty(t: &Tensor) -> Result<()> {
    if t.requires_grad() && t.meta_lock().grad_fn.is_none() {
        return Err(Error::msg(
            "a leaf Variable that requires grad has been used in an in-place operation.",
        ));
    }
    check_dirty_view(t)
}

/// The view part of [`check_dirty`].
fn check_dirty_view(t: &Tensor) -> Result<()> {
    let Some(base) = t.view_base() else {
        return Ok(());
    };
    t.check_view_rebase()?;
    if base.is_leaf() && base.requires_grad() {
        return Err(Error::ViewOfLeafInPlace);
    }
    Ok(())
}

/// What PyTorch's `mark_dirty` does to each dirty input once the forward returned: one more bump
/// of its version counter (`_mark_dirty` calls `bump_version`), recorded or not.
#[doc(hidden)]
pub fn mark_dirty(t: &Tensor) {
    t.0.storage.bump_version();
}
