//! Helpers shared by the integration tests: a node whose backward is a closure, for behaviours
//! that need a node to return something no real op returns (a wrong gradient count, dtype or
//! shape, an undefined gradient, an error). Each test crate uses what it needs.
#![allow(
    dead_code,
    reason = "each test crate includes this module and uses a part of it"
)]

use autograd::__private::{record_node, smallvec::SmallVec};
use autograd::graph::{Backward, GradVec, NodeMeta};
use autograd::{Edge, Result, Tensor};

/// A hand-written node (what `#[differentiable]` generates) with a closure as its backward.
struct Custom(Box<dyn Fn(GradVec) -> Result<GradVec> + Send + Sync>);

impl Backward for Custom {
    const NAME: &'static str = "CustomBackward";
    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        (self.0)(grads)
    }
}

/// The edge gradients for `t` flow along (grad_fn, or the leaf's AccumulateGrad).
fn edge_of(t: &Tensor) -> Edge {
    match t.grad_fn() {
        Some(f) => Edge::new(f, t.output_nr()),
        None => t
            .mul_scalar(1.0)
            .unwrap()
            .grad_fn()
            .unwrap()
            .next_functions()[0]
            .clone()
            .unwrap(),
    }
}

/// `out` becomes the output of a custom node over `inputs` whose backward is `f`.
pub(crate) fn custom(
    inputs: &[&Tensor],
    out: Tensor,
    f: impl Fn(GradVec) -> Result<GradVec> + Send + Sync + 'static,
) -> Tensor {
    let edges: SmallVec<[Option<Edge>; 2]> = inputs.iter().map(|t| Some(edge_of(t))).collect();
    let _node = record_node(edges, &[&out], |_| Custom(Box::new(f)));
    out
}
