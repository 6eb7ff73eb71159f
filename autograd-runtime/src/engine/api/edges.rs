//! `grad()` and `backward()` over gradient edges (B39) and with batched gradients
//! (`is_grads_batched`): PyTorch's `torch.autograd.grad` / `backward` accept a
//! `torch.autograd.graph.GradientEdge` wherever they accept a tensor, as a root or as an input;
//! here [`GradTarget`] is either. A child of `api.rs`: it shares that file's options and checks.

use smallvec::SmallVec;

use super::super::EngineInner;
use super::{BackwardOptions, GradOptions, make_grads};
use crate::graph::{Edge, GradVec};
use crate::sync::Arc;
use crate::{Error, Result, Tensor};

/// A root or an input of [`grad_edges`] and [`backward_edges`]: a tensor, or a gradient edge
/// (PyTorch's `GradientEdge`, from [`get_gradient_edge`](crate::graph::get_gradient_edge) or
/// [`Edge::new`]). An edge names a node and one of its inputs, whatever happens to the tensor
/// it was taken from afterwards (an in-place op gives the tensor a new `grad_fn`; the edge keeps
/// the old one, and keeps the graph below it alive).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{GradTarget, Tensor};
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let edge = autograd_runtime::graph::get_gradient_edge(&x)?;
/// let targets: [GradTarget; 2] = [x.clone().into(), edge.into()];
/// assert!(matches!(targets[1], GradTarget::Edge(_)));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum GradTarget {
    /// A tensor: its gradient edge when the pass starts (its `grad_fn`, or a leaf's
    /// `AccumulateGrad`), with the tensor's own checks (it must require grad).
    Tensor(Tensor),
    /// An input of a node.
    Edge(Edge),
}

impl From<Tensor> for GradTarget {
    fn from(t: Tensor) -> GradTarget {
        GradTarget::Tensor(t)
    }
}

impl From<&Tensor> for GradTarget {
    fn from(t: &Tensor) -> GradTarget {
        GradTarget::Tensor(t.clone())
    }
}

impl From<Edge> for GradTarget {
    fn from(e: Edge) -> GradTarget {
        GradTarget::Edge(e)
    }
}

impl From<&Edge> for GradTarget {
    fn from(e: &Edge) -> GradTarget {
        GradTarget::Edge(e.clone())
    }
}

/// `edge`'s input metadata, or an error for an input number the node does not have.
fn edge_metadata(edge: &Edge) -> Result<&crate::graph::InputMetadata> {
    let meta = edge.node.meta();
    if edge.input_nr >= meta.num_inputs() {
        return Err(Error::InvalidArgument(format!(
            "GradientEdge input_nr {} is out of range for {}, which has {} inputs",
            edge.input_nr,
            edge.node.name(),
            meta.num_inputs()
        )));
    }
    Ok(meta.input_metadata(edge.input_nr))
}

/// PyTorch's `_make_grads` over tensors and edges: tensors as [`make_grads`]; an edge's explicit
/// gradient is checked against the shape of the node input it names, a missing one is ones of
/// that shape when it has one element.
fn make_target_grads(roots: &[GradTarget], grads: &[Option<Tensor>]) -> Result<GradVec> {
    if !grads.is_empty() && grads.len() != roots.len() {
        return Err(Error::GradCountMismatch {
            tensors: roots.len(),
            grads: grads.len(),
        });
    }
    let mut out = GradVec::with_capacity(roots.len());
    for (i, root) in roots.iter().enumerate() {
        let grad = grads.get(i).cloned().flatten();
        match root {
            GradTarget::Tensor(t) => {
                let g = make_grads(std::slice::from_ref(t), &[grad]).map_err(|e| match e {
                    // `make_grads` saw one root: the position is this one.
                    Error::GradShapeMismatch {
                        grad_shape,
                        output_shape,
                        ..
                    } => Error::GradShapeMismatch {
                        index: i,
                        grad_shape,
                        output_shape,
                    },
                    e => e,
                })?;
                out.extend(g);
            }
            GradTarget::Edge(edge) => {
                let md = edge_metadata(edge)?;
                match grad {
                    Some(g) => {
                        check_grad_shape(Some(&g), md.shape(), i)?;
                        out.push(Some(g));
                    }
                    None if md.shape().iter().all(|&n| n == 1) => {
                        out.push(Some(Tensor::filled(
                            md.shape(),
                            1.0,
                            md.dtype(),
                            md.device(),
                        )?));
                    }
                    None => return Err(Error::ImplicitGradNonScalar),
                }
            }
        }
    }
    Ok(out)
}

fn check_grad_shape(grad: Option<&Tensor>, shape: &[usize], index: usize) -> Result<()> {
    match grad {
        Some(g) if g.shape() != shape => Err(Error::GradShapeMismatch {
            index,
            grad_shape: g.shape().to_vec(),
            output_shape: shape.to_vec(),
        }),
        _ => Ok(()),
    }
}

/// The roots' edges, their gradients fitted to them (see `api::root_edges`).
fn target_root_edges(roots: &[GradTarget], grads: &mut GradVec) -> Result<Vec<Edge>> {
    let edges = roots
        .iter()
        .enumerate()
        .map(|(index, r)| match r {
            GradTarget::Tensor(t) => t.gradient_edge().ok_or(Error::DoesNotRequireGrad { index }),
            GradTarget::Edge(e) => Ok(e.clone()),
        })
        .collect::<Result<Vec<Edge>>>()?;
    for (index, (edge, slot)) in edges.iter().zip(grads.iter_mut()).enumerate() {
        crate::engine::evaluate::fit_gradient(slot, edge, index, || None)?;
    }
    Ok(edges)
}

/// [`grad`](crate::grad) over tensors and gradient edges (`torch.autograd.grad` given
/// `GradientEdge`s): `outputs` are the roots, `inputs` what to differentiate with respect to. An
/// edge as input captures the gradient flowing into that node input; an edge as root starts
/// there, with `grad_outputs`' gradient for it (checked against the shape of the node input), or
/// ones where that input has one element. `is_grads_batched` works as in [`grad`](crate::grad),
/// for tensor roots (PyTorch refuses edges: "Batched grads are not supported with
/// GradientEdge").
///
/// # Errors
///
/// Those of [`grad`](crate::grad);
/// [`Error::MaterializeGradsWithEdge`] when `materialize_grads` would have to make zeros for an
/// edge input the outputs do not reach (an edge has no tensor to take the shape of);
/// [`Error::InvalidArgument`] for an edge naming an input its node does not have.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{grad_edges, graph::get_gradient_edge, GradOptions, GradTarget, Tensor};
/// // test_grad_to_node_inplace: the edge keeps the history x had when it was taken.
/// let x = Tensor::from_vec(vec![0.3f64, 0.7], &[2])?.requires_grad_(true)?.copy()?;
/// let x_edge = get_gradient_edge(&x)?;
/// x.mul_(&Tensor::scalar(2.0f64))?;
/// let g = grad_edges(&[x.sum()?.into()], &[x_edge.into(), x.into()], GradOptions::new())?;
/// assert_eq!(g[0].as_ref().unwrap().to_vec::<f64>()?, vec![2.0, 2.0]); // d/dx_old
/// assert_eq!(g[1].as_ref().unwrap().to_vec::<f64>()?, vec![1.0, 1.0]); // d/dx_new
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn grad_edges(
    outputs: &[GradTarget],
    inputs: &[GradTarget],
    options: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    grad_targets_on(&EngineInner::current(), outputs, inputs, options)
}

pub(crate) fn grad_targets_on(
    engine: &Arc<EngineInner>,
    outputs: &[GradTarget],
    inputs: &[GradTarget],
    options: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if inputs.is_empty() {
        return Err(Error::EmptyInputs { api: "grad" });
    }
    if options.materialize_grads && options.allow_unused == Some(false) {
        return Err(Error::MaterializeGradsWithoutAllowUnused);
    }
    let allow_unused = options.allow_unused.unwrap_or(options.materialize_grads);
    let mut result = if options.is_grads_batched {
        batched(engine, outputs, inputs, &options)?
    } else {
        let mut grads = make_target_grads(outputs, &options.grad_outputs)?;
        let roots = target_root_edges(outputs, &mut grads)?;
        let edges = input_edges(inputs)?;
        engine.execute(roots, grads, options.pass_options(), &edges)?
    };
    if options.materialize_grads
        && result
            .iter()
            .zip(inputs)
            .any(|(r, i)| r.is_none() && matches!(i, GradTarget::Edge(_)))
    {
        return Err(Error::MaterializeGradsWithEdge);
    }
    for (index, (slot, input)) in result.iter_mut().zip(inputs).enumerate() {
        if slot.is_none() {
            if let (true, GradTarget::Tensor(input)) = (options.materialize_grads, input) {
                // PyTorch: `zeros_like(input, requires_grad=True)` (also when batched: the
                // zeros have the input's shape, without a batch dimension).
                *slot = Some(input.zeros_like()?.requires_grad_(true)?);
            } else if !allow_unused {
                return Err(Error::UnusedInput { index });
            }
        }
    }
    Ok(result)
}

/// The edges `grad()` captures at: a tensor input must require grad.
fn input_edges(inputs: &[GradTarget]) -> Result<SmallVec<[Option<Edge>; 4]>> {
    inputs
        .iter()
        .map(|i| match i {
            GradTarget::Tensor(t) if !t.requires_grad() => Err(Error::InputDoesNotRequireGrad),
            GradTarget::Tensor(t) => Ok(t.gradient_edge()),
            GradTarget::Edge(e) => edge_metadata(e).map(|_| Some(e.clone())),
        })
        .collect()
}

/// `is_grads_batched`: one pass per row of the batched gradients (PyTorch maps one pass over
/// the batch with `vmap`), each result row stacked along dimension 0. Every pass but the last
/// retains the graph; the last one keeps it as `retain_graph` says.
fn batched(
    engine: &Arc<EngineInner>,
    outputs: &[GradTarget],
    inputs: &[GradTarget],
    options: &GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if outputs.iter().any(|o| matches!(o, GradTarget::Edge(_))) {
        return Err(Error::msg(
            "Batched grads are not supported with GradientEdge",
        ));
    }
    let roots: Vec<Tensor> = outputs
        .iter()
        .filter_map(|o| match o {
            GradTarget::Tensor(t) => Some(t.clone()),
            GradTarget::Edge(_) => None,
        })
        .collect();
    let batched = make_batched_grads(&roots, &options.grad_outputs)?;
    let batch = batch_size(&batched)?;
    if batch == 0 {
        return Err(Error::InvalidArgument(
            "index 0 is out of bounds for dimension 0 with size 0".into(),
        ));
    }
    let edges = input_edges(inputs)?;
    let mut rows: Vec<Vec<Option<Tensor>>> = Vec::with_capacity(batch);
    for b in 0..batch {
        let mut grads: GradVec = batched
            .iter()
            .map(|g| g.as_ref().map(|g| g.select(0, b)).transpose())
            .collect::<Result<_>>()?;
        let root_edges = super::root_edges(&roots, &mut grads)?;
        let mut pass = options.pass_options();
        if b + 1 < batch {
            pass.keep_graph = true;
        }
        rows.push(engine.execute(root_edges, grads, pass, &edges)?);
    }
    (0..inputs.len())
        .map(|k| {
            let column: Option<Vec<Tensor>> = rows.iter().map(|r| r[k].clone()).collect();
            column.map(|c| Tensor::stack(&c, 0)).transpose()
        })
        .collect()
}

/// PyTorch's `_make_grads` with `is_grads_batched`: each gradient's first dimension is the
/// batch, the rest must be its output's shape; a missing gradient of a one-element output is a
/// ones tensor of the output's shape, which has no dimension to map over.
fn make_batched_grads(roots: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    if !grads.is_empty() && grads.len() != roots.len() {
        return Err(Error::GradCountMismatch {
            tensors: roots.len(),
            grads: grads.len(),
        });
    }
    let mut out = Vec::with_capacity(roots.len());
    for (i, root) in roots.iter().enumerate() {
        match grads.get(i).cloned().flatten() {
            Some(g) => {
                if g.ndim() == 0 {
                    return Err(Error::InvalidArgument(
                        "invalid index of a 0-dim tensor. Use `Tensor::item` to convert a 0-dim tensor to a number".into(),
                    ));
                }
                if g.shape()[1..] != *root.shape() {
                    // The shape torch 2.15 prints for the gradient drops two leading
                    // dimensions: its `_calculate_shape` takes `grad[0].shape[1:]`.
                    return Err(Error::BatchedGradShapeMismatch {
                        index: i,
                        grad_shape: g.shape().get(2..).unwrap_or_default().to_vec(),
                        output_shape: root.shape().to_vec(),
                    });
                }
                out.push(Some(g));
            }
            None => {
                // An implicit gradient (one-element roots only) has no batch dimension: vmap
                // refuses it, as PyTorch's does.
                make_grads(std::slice::from_ref(root), &[None])?;
                if root.requires_grad() {
                    return Err(Error::InvalidArgument(
                        "vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that input is a Tensor of dimensionality 0 so expected in_dim to satisfy 0 <= in_dim < 0.".into(),
                    ));
                }
                out.push(None);
            }
        }
    }
    Ok(out)
}

/// The common batch size of the batched gradients (PyTorch's vmap check).
fn batch_size(grads: &[Option<Tensor>]) -> Result<usize> {
    let sizes: Vec<usize> = grads.iter().flatten().map(|g| g.shape()[0]).collect();
    match sizes.first() {
        None => Err(Error::InvalidArgument(
            "vmap(vjp, in_dims=0, ...)(<inputs>): at least one input must be a Tensor to map over"
                .into(),
        )),
        Some(&b) if sizes.iter().all(|&s| s == b) => Ok(b),
        Some(_) => Err(Error::InvalidArgument(format!(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes:?} for the mapped dimension"
        ))),
    }
}

/// [`backward`](crate::backward) over tensors and gradient edges (`torch.autograd.backward`
/// given `GradientEdge`s): `roots` start the pass (an edge with `grad_tensors`' gradient for it,
/// or ones where its node input has one element), and `inputs`, when given, restrict it as
/// [`BackwardOptions::inputs`] does; an edge there makes its node run without accumulating
/// anything (it has no tensor whose `.grad` to fill). [`BackwardOptions::inputs`] adds to
/// `inputs`.
///
/// # Errors
///
/// Those of [`backward`](crate::backward);
/// [`Error::InvalidArgument`] for an edge naming an input its node does not have.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{backward_edges, graph::get_gradient_edge, BackwardOptions, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let tmp = x.sin()?.cos()?.sum()?;
/// let out = tmp.exp()?;
/// let edge = get_gradient_edge(&tmp)?; // a root: backward from `tmp` with gradient 1
/// drop(tmp);
/// backward_edges(&[edge.into()], &[], BackwardOptions::new(), &[])?;
/// let want: Vec<f64> = [1.0f64, 2.0].iter().map(|x| -x.sin().sin() * x.cos()).collect();
/// let got = x.grad().unwrap().to_vec::<f64>()?;
/// assert!((got[0] - want[0]).abs() < 1e-12 && (got[1] - want[1]).abs() < 1e-12);
/// # drop(out);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn backward_edges(
    roots: &[GradTarget],
    grad_tensors: &[Option<Tensor>],
    options: BackwardOptions,
    inputs: &[GradTarget],
) -> Result<()> {
    backward_targets_on(
        &EngineInner::current(),
        roots,
        grad_tensors,
        options,
        inputs,
    )
}

pub(crate) fn backward_targets_on(
    engine: &Arc<EngineInner>,
    roots: &[GradTarget],
    grad_tensors: &[Option<Tensor>],
    options: BackwardOptions,
    inputs: &[GradTarget],
) -> Result<()> {
    let mut all_inputs: Vec<GradTarget> = inputs.to_vec();
    if let Some(tensors) = &options.inputs {
        if tensors.is_empty() && inputs.is_empty() {
            return Err(Error::EmptyInputs { api: "backward" });
        }
        all_inputs.extend(tensors.iter().map(GradTarget::from));
    }
    let mut grads = make_target_grads(roots, grad_tensors)?;
    let root_edges = target_root_edges(roots, &mut grads)?;
    if options.create_graph {
        super::warn_backward_create_graph_once();
    }
    let mut outputs = Vec::with_capacity(all_inputs.len());
    for input in &all_inputs {
        match input {
            GradTarget::Tensor(t) => {
                if !t.requires_grad() {
                    return Err(Error::RetainGradWithoutRequiresGrad);
                }
                if !t.is_leaf() {
                    t.retain_grad()?;
                }
                outputs.push(t.gradient_edge());
            }
            GradTarget::Edge(e) => {
                edge_metadata(e)?;
                outputs.push(Some(e.clone()));
            }
        }
    }
    engine.execute(root_edges, grads, options.pass_options(), &outputs)?;
    Ok(())
}
