//! `Edge`: where a node sends the gradient for one of its inputs.

use super::NodeRef;

/// The gradient for one forward input goes to input slot `input_nr` of `node` (the input's
/// `grad_fn`, or the `AccumulateGrad` of a leaf).
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let x = Tensor::scalar(1.0f64);
/// x.set_requires_grad(true)?;
/// let y = x.exp()?;
/// let next = y.grad_fn().unwrap().next_functions();
/// assert_eq!(next[0].as_ref().map(|e| (e.node.name().to_string(), e.input_nr)),
///            Some(("AccumulateGrad".to_string(), 0)));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Edge {
    /// The node that receives the gradient.
    pub node: NodeRef,
    /// Which of that node's inputs it is for.
    pub input_nr: usize,
}

impl Edge {
    /// An edge to `node`'s input `input_nr`.
    pub fn new(node: NodeRef, input_nr: usize) -> Edge {
        Edge { node, input_nr }
    }
}
