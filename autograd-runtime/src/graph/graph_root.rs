//! `GraphRoot`: the node that feeds the root gradients when a backward pass has several roots
//! (with one root the engine skips it and seeds the root's own input buffer; B08).

use super::{Edge, GradVec, Node, NodeMeta};
use crate::Result;

pub(crate) struct GraphRoot {
    meta: NodeMeta,
    grads: GradVec,
}

impl GraphRoot {
    /// A root feeding `grads` along `edges`. It takes the next sequence number of this thread, as
    /// every node PyTorch constructs does (only `AccumulateGrad` has `u64::MAX`): a pass with
    /// several roots moves the numbering of later nodes on by one.
    pub(crate) fn new(edges: Vec<Option<Edge>>, grads: GradVec) -> GraphRoot {
        GraphRoot {
            meta: NodeMeta::new(edges.into_iter().collect(), smallvec::smallvec![]),
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
