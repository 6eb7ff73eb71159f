//! `CopySlices`: the node an in-place op on a view leaves on the view's *base* (PyTorch's
//! `CopySlices`), and `ViewOfBaseBackward`, the view's new grad_fn. Together they rebase the
//! history so gradients w.r.t. the base see the in-place op applied to the region the view covers.
//!
//! With base `b` (contiguous) and view `v = view(b)`, `v.op_(other)` records the op's node `f`
//! (edges: `v`'s old history, `other`) and then:
//! * `b.grad_fn = CopySlices { f }` with edges `[b's old history, f's other edges...]`: given the
//!   gradient `g` w.r.t. the new `b`, it runs `f` on `g[view region]`; the result for `v`'s old
//!   value goes back into that region of a copy of `g` (the gradient w.r.t. the old `b`), the rest
//!   of `f`'s results go to `other`;
//! * `v.grad_fn = ViewOfBaseBackward` with an edge to `(CopySlices, 0)`: it scatters `v`'s
//!   gradient into zeros shaped like `b`.

use smallvec::smallvec;

use super::{Edge, GradVec, InputMetadata, Node, NodeMeta, NodeRef};
use crate::tensor::layout::Layout;
use crate::{Error, Result, Tensor};

/// Where a view sits inside its (contiguous) base, in the base's element coordinates.
#[derive(Clone, Debug)]
pub(crate) struct ViewGeometry {
    pub(crate) base_shape: Vec<usize>,
    /// The view's layout relative to a contiguous tensor of `base_shape` at offset 0.
    pub(crate) view: Layout,
}

impl ViewGeometry {
    /// The geometry of `view` inside `base`, if `base` is contiguous (the only case supported).
    pub(crate) fn of(base: &Tensor, view: &Tensor) -> Option<ViewGeometry> {
        if !base.is_contiguous() {
            return None;
        }
        let mut layout = view.layout().clone();
        layout.offset = layout.offset.checked_sub(base.layout().offset)?;
        Some(ViewGeometry {
            base_shape: base.shape().to_vec(),
            view: layout,
        })
    }

    /// A contiguous copy of `grad` (shaped like the base) and an alias of its view region.
    fn split(&self, grad: &Tensor) -> Result<(Tensor, Tensor)> {
        let whole = grad.contiguous_data_owned()?;
        let region = whole.alias_with_layout(self.view.clone());
        Ok((whole, region))
    }
}

pub(crate) struct CopySlices {
    meta: NodeMeta,
    geometry: ViewGeometry,
    /// The in-place op's node; not part of the graph itself (its edges are mirrored here).
    op: NodeRef,
}

impl CopySlices {
    /// `base_edge`: the base's history before the op; `op`: the op's node, whose first edge is
    /// the view's old history.
    pub(crate) fn new(
        base: &Tensor,
        base_edge: Option<Edge>,
        geometry: ViewGeometry,
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
        if crate::is_grad_enabled() {
            return Err(Error::msg(
                "double backward through an in-place operation on a view (CopySlices) is not supported yet",
            ));
        }
        let (whole, region) = self.geometry.split(&grad)?;
        let mut res = self
            .op
            .apply(smallvec![Some(region.contiguous_data_owned()?)])?;
        let for_view = res.first_mut().and_then(Option::take);
        // The old base's gradient: g outside the region, the op's gradient for the view inside.
        match for_view {
            Some(g) => region.copy_from(&g)?,
            None => region.fill_untracked(0.0)?,
        }
        let mut out: GradVec = smallvec![Some(whole)];
        out.extend(res.into_iter().skip(1));
        out.resize(n, None);
        Ok(out)
    }

    fn release_saved(&self) {
        self.op.release_saved();
    }

    fn visit_saved_tensors(&self, visit: &mut dyn FnMut(&str, &super::SavedTensor)) {
        self.op.visit_saved_tensors(visit);
    }
}

/// The grad_fn of a view after an in-place op on it: scatters the view's gradient into zeros
/// shaped like the base and sends it to the base's `CopySlices`.
pub(crate) struct ViewOfBaseBackward {
    meta: NodeMeta,
    geometry: ViewGeometry,
}

impl ViewOfBaseBackward {
    pub(crate) fn new(
        view: &Tensor,
        copy_slices: NodeRef,
        geometry: ViewGeometry,
    ) -> ViewOfBaseBackward {
        ViewOfBaseBackward {
            meta: NodeMeta::new(
                smallvec![Some(Edge::new(copy_slices, 0))],
                smallvec![InputMetadata::of(view)],
            ),
            geometry,
        }
    }
}

impl Node for ViewOfBaseBackward {
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
        if crate::is_grad_enabled() {
            return Err(Error::msg(
                "double backward through an in-place operation on a view (CopySlices) is not supported yet",
            ));
        }
        let zeros = Tensor::zeros(&self.geometry.base_shape, grad.dtype())?.to(grad.device())?;
        let (whole, region) = self.geometry.split(&zeros)?;
        region.copy_from(&grad)?;
        Ok(smallvec![Some(whole)])
    }
}

/// After an in-place op on the view `view` was recorded (its node is now `view`'s grad_fn),
/// moves the op into the base's history: `base.grad_fn = CopySlices`, `view.grad_fn =
/// ViewOfBaseBackward` (PyTorch's `rebase_history` for views). `base_edge` is the base's gradient
/// edge from before the op.
pub(crate) fn rebase_view_history(
    view: &Tensor,
    base: &Tensor,
    base_edge: Option<Edge>,
    geometry: ViewGeometry,
) {
    let op = view
        .grad_fn()
        .expect("invariant: the in-place op was just recorded on the view");
    let copy_slices = NodeRef::new(crate::sync::Arc::new(CopySlices::new(
        base,
        base_edge,
        geometry.clone(),
        op,
    )));
    base.set_grad_fn(copy_slices.clone(), 0);
    let view_fn = ViewOfBaseBackward::new(view, copy_slices, geometry);
    view.set_grad_fn(NodeRef::new(crate::sync::Arc::new(view_fn)), 0);
}
