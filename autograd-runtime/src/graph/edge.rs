//! `Edge`: where a node sends the gradient for one of its inputs.

use super::NodeRef;
use crate::{Error, Result, Tensor};

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

/// The gradient edge of `t` (`torch.autograd.graph.get_gradient_edge`): its `grad_fn` and output
/// number, or a leaf's `AccumulateGrad` and 0. It can be given to
/// [`grad_edges`](crate::grad_edges) and [`backward_edges`](crate::backward_edges) as an input
/// or a root in place of `t` (B39), and keeps naming that node after `t` changes (an in-place
/// op gives `t` a new `grad_fn`) or is dropped.
///
/// # Errors
///
/// [`Error::NoGradientEdge`] if `t` does not require grad; [`Error::ViewRebase`] for a view whose
/// `grad_fn` may not be regenerated (see [`Tensor::grad_fn`]).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{grad, grad_edges, graph::get_gradient_edge, GradOptions, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let edge = get_gradient_edge(&x)?;
/// assert_eq!((edge.node.name(), edge.input_nr), ("AccumulateGrad", 0));
/// let out = x.mul(&x)?.sum()?;
/// let by_edge = grad_edges(&[out.clone().into()], &[edge.into()], GradOptions::new().retain_graph(true))?;
/// let by_tensor = grad(&[out], &[x], GradOptions::new())?;
/// assert_eq!(by_edge[0].as_ref().unwrap().to_vec::<f64>()?, vec![2.0, 4.0]);
/// assert_eq!(by_tensor[0].as_ref().unwrap().to_vec::<f64>()?, vec![2.0, 4.0]);
/// assert!(get_gradient_edge(&Tensor::scalar(1.0f64)).is_err());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn get_gradient_edge(t: &Tensor) -> Result<Edge> {
    if !t.requires_grad() {
        return Err(Error::NoGradientEdge);
    }
    t.try_gradient_edge()?.ok_or(Error::NoGradientEdge)
}
