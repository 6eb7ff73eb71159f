//! `GraphRoot`: the node that feeds the root gradients when a backward pass has several roots
//! (with one root the engine skips it and seeds the root's own input buffer; B08).

use super::{Edge, GradVec, Node, NodeMeta};
use crate::Result;

pub(crate) struct GraphRoot {
    meta: NodeMeta,
    grads: GradVec,
}

impl GraphRoot {
    pub(crate) fn new(edges: Vec<Option<Edge>>, grads: GradVec) -> GraphRoot {
        GraphRoot {
            meta: NodeMeta::with_sequence_nr(
                u64::MAX,
                edges.into_iter().collect(),
                smallvec::smallvec![],
            ),
            grads,
        }
    }
}

impl Node for GraphRoot {
    fn name(&self) -> &str {
        "GraphRoot"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, _grads: GradVec) -> Result<GradVec> {
        Ok(self.grads.clone())
    }
}
