//! The engine's public API. The entry points (PyTorch's `torch.autograd.backward` / `grad` and
//! `Tensor.backward`) with their options: argument checks with PyTorch's errors (B12), implicit
//! root gradients, `retain_graph` defaulting to `create_graph` (B02), and result post-processing
//! (B11). And what code running inside a pass may ask of it: `queue_callback`, the current graph
//! task's id and `keep_graph`, `will_engine_execute_node`.

use crate::sync::statics::AtomicBool;

use smallvec::SmallVec;

use super::graph_task::PassOptions;
use super::{EngineInner, per_thread};
use crate::graph::{Edge, GradVec};
use crate::sync::Arc;
use crate::{Error, Result, Tensor};

mod edges;
pub use edges::{GradTarget, backward_edges, grad_edges};

/// Options of [`Tensor::backward_with`] and [`backward`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{BackwardOptions, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let y = x.mul_scalar(3.0)?;
/// y.backward_with(BackwardOptions::new().gradient(Tensor::from_vec(vec![1.0, 0.5], &[2])?))?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![3.0, 1.5]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct BackwardOptions {
    gradient: Option<Tensor>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<Vec<Tensor>>,
}

impl BackwardOptions {
    /// Defaults: implicit gradient (scalar roots only), `retain_graph = create_graph = false`,
    /// accumulate into every leaf.
    pub fn new() -> Self {
        Self::default()
    }

    /// The gradient w.r.t. the root (required for non-scalar roots in `Tensor::backward_with`).
    pub fn gradient(mut self, g: Tensor) -> Self {
        self.gradient = Some(g);
        self
    }

    /// Keep saved tensors so the graph can be backpropagated again (default: `create_graph`).
    pub fn retain_graph(mut self, retain: bool) -> Self {
        self.retain_graph = Some(retain);
        self
    }

    /// Record the backward pass itself, so gradients can be differentiated again.
    pub fn create_graph(mut self, create: bool) -> Self {
        self.create_graph = create;
        self
    }

    /// Accumulate only into these tensors (leaves or non-leaves), leaving other leaves untouched.
    pub fn inputs(mut self, inputs: &[Tensor]) -> Self {
        self.inputs = Some(inputs.to_vec());
        self
    }

    /// The engine's options for this call: `retain_graph` defaults to `create_graph` (B02);
    /// gradients accumulate into the leaves.
    fn pass_options(&self) -> PassOptions {
        PassOptions {
            keep_graph: self.retain_graph.unwrap_or(self.create_graph),
            create_graph: self.create_graph,
            accumulate_grad: true,
        }
    }
}

/// Options of [`grad`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{grad, GradOptions, Tensor};
/// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let unused = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let y = x.mul(&x)?;
/// let g = grad(&[y], &[x, unused], GradOptions::new().allow_unused(true))?;
/// assert_eq!(g[0].as_ref().unwrap().item::<f64>()?, 4.0);
/// assert!(g[1].is_none());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct GradOptions {
    grad_outputs: Vec<Option<Tensor>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: Option<bool>,
    materialize_grads: bool,
    is_grads_batched: bool,
}

impl GradOptions {
    /// Defaults: implicit gradients, no retain, no create_graph, unused inputs are an error.
    pub fn new() -> Self {
        Self::default()
    }

    /// One gradient per output (`None`: ones, for one-element outputs).
    pub fn grad_outputs(mut self, grads: Vec<Option<Tensor>>) -> Self {
        self.grad_outputs = grads;
        self
    }

    /// Keep saved tensors (default: `create_graph`).
    pub fn retain_graph(mut self, retain: bool) -> Self {
        self.retain_graph = Some(retain);
        self
    }

    /// Record the backward pass so the results can be differentiated again (B40).
    pub fn create_graph(mut self, create: bool) -> Self {
        self.create_graph = create;
        self
    }

    /// Return `None` for inputs the outputs do not depend on instead of failing.
    pub fn allow_unused(mut self, allow: bool) -> Self {
        self.allow_unused = Some(allow);
        self
    }

    /// Return zeros instead of `None` for unused inputs (implies `allow_unused`).
    pub fn materialize_grads(mut self, materialize: bool) -> Self {
        self.materialize_grads = materialize;
        self
    }

    /// Treat the first dimension of each `grad_outputs` tensor as a batch: the result is the
    /// batch of vector-Jacobian products, one per row, stacked along dimension 0
    /// (`is_grads_batched`). PyTorch maps one backward pass over the batch with `vmap`; here one
    /// pass runs per row (all but the last retaining the graph), which gives the same values.
    /// Gradients for every output must be given, all with the same batch size.
    ///
    /// # Examples
    ///
    /// The Jacobian of `x ↦ x²` from the rows of the identity:
    ///
    /// ```
    /// use autograd_runtime::{grad, DType, GradOptions, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
    /// let eye = Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], &[3, 3])?;
    /// let jac = grad(&[x.mul(&x)?], &[x],
    ///     GradOptions::new().grad_outputs(vec![Some(eye)]).is_grads_batched(true))?;
    /// let jac = jac[0].as_ref().unwrap();
    /// assert_eq!(jac.shape(), &[3, 3]);
    /// assert_eq!(jac.to_vec::<f64>()?, vec![2.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn is_grads_batched(mut self, batched: bool) -> Self {
        self.is_grads_batched = batched;
        self
    }

    /// The engine's options for this call: `retain_graph` defaults to `create_graph` (B02);
    /// gradients are captured and returned, not accumulated.
    fn pass_options(&self) -> PassOptions {
        PassOptions {
            keep_graph: self.retain_graph.unwrap_or(self.create_graph),
            create_graph: self.create_graph,
            accumulate_grad: false,
        }
    }
}

/// Builds the root gradients: explicit ones are checked against their roots; missing ones are
/// ones for one-element roots (B12).
fn make_grads(roots: &[Tensor], grads: &[Option<Tensor>]) -> Result<GradVec> {
    if !grads.is_empty() && grads.len() != roots.len() {
        return Err(Error::GradCountMismatch {
            tensors: roots.len(),
            grads: grads.len(),
        });
    }
    let mut out = GradVec::with_capacity(roots.len());
    for (i, root) in roots.iter().enumerate() {
        match grads.get(i).cloned().flatten() {
            Some(g) => {
                if g.shape() != root.shape() {
                    return Err(Error::GradShapeMismatch {
                        index: i,
                        grad_shape: g.shape().to_vec(),
                        output_shape: root.shape().to_vec(),
                    });
                }
                out.push(Some(g));
            }
            // As PyTorch's `_make_grads`: only roots that require grad get an implicit gradient;
            // the others fail later with "element i ... does not require grad".
            None if !root.requires_grad() => out.push(None),
            None if root.numel() == 1 => out.push(Some(root.ones_like()?)),
            None => return Err(Error::ImplicitGradNonScalar),
        }
    }
    Ok(out)
}

/// The roots' gradient edges, and their gradients fitted to them as every node's outputs are
/// (PyTorch's `validate_outputs` over the root edges, for one root as for several): another
/// floating dtype is cast, a 0-dim gradient moves to the root's device, any other device is an
/// error.
fn root_edges(roots: &[Tensor], grads: &mut GradVec) -> Result<Vec<Edge>> {
    let edges = roots
        .iter()
        .enumerate()
        .map(|(index, t)| {
            t.try_gradient_edge()?
                .ok_or(Error::DoesNotRequireGrad { index })
        })
        .collect::<Result<Vec<Edge>>>()?;
    for (index, (edge, slot)) in edges.iter().zip(grads.iter_mut()).enumerate() {
        super::evaluate::fit_gradient(slot, edge, index, || None)?;
    }
    Ok(edges)
}

/// Computes the gradients of `tensors` (with `grad_tensors`, one per tensor, `None` meaning ones
/// for one-element tensors; an empty slice means all `None`) and accumulates them into the
/// leaves' `.grad` (`torch.autograd.backward`).
///
/// # Errors
///
/// The argument errors of B12 ([`Error::DoesNotRequireGrad`], [`Error::ImplicitGradNonScalar`],
/// [`Error::GradCountMismatch`], [`Error::GradShapeMismatch`], [`Error::EmptyInputs`], ...),
/// [`Error::ViewRebase`] for a root or an input that is a view of `split`/`chunk` (or one made
/// under `no_grad`) whose base was modified in place since (PyTorch reads its `grad_fn`, which it
/// refuses to regenerate), and any error raised during the pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{backward, BackwardOptions, Tensor};
/// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
/// let y = x.mul(&x)?;
/// let z = x.mul_scalar(2.0)?;
/// backward(&[y, z], &[None, Some(Tensor::scalar(10.0))], BackwardOptions::new())?;
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0 + 20.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    options: BackwardOptions,
) -> Result<()> {
    backward_on(&EngineInner::current(), tensors, grad_tensors, options)
}

pub(crate) fn backward_on(
    engine: &Arc<EngineInner>,
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    options: BackwardOptions,
) -> Result<()> {
    if options.inputs.as_ref().is_some_and(Vec::is_empty) {
        return Err(Error::EmptyInputs { api: "backward" });
    }
    let mut grads = make_grads(tensors, grad_tensors)?;
    let roots = root_edges(tensors, &mut grads)?;
    if options.create_graph {
        warn_backward_create_graph_once();
    }
    let mut outputs = Vec::new();
    if let Some(inputs) = &options.inputs {
        for t in inputs {
            if !t.requires_grad() {
                return Err(Error::RetainGradWithoutRequiresGrad);
            }
            if !t.is_leaf() {
                t.retain_grad()?;
            }
            outputs.push(t.try_gradient_edge()?);
        }
    }
    engine.execute(roots, grads, options.pass_options(), &outputs)?;
    Ok(())
}

/// Computes and returns the gradients of `outputs` w.r.t. `inputs` without touching any `.grad`
/// (`torch.autograd.grad`). Nodes below the inputs do not run (B10).
///
/// # Errors
///
/// [`Error::EmptyInputs`], [`Error::InputDoesNotRequireGrad`], [`Error::UnusedInput`],
/// [`Error::MaterializeGradsWithoutAllowUnused`], the root errors of [`backward`] (an input
/// that is a stale view of `split`/`chunk` is an [`Error::ViewRebase`], as a root is), and any
/// error raised during the pass.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{grad, GradOptions, Tensor};
/// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
/// let y = x.mul(&x)?.mul(&x)?; // x³
/// let dy = grad(&[y], &[x.clone()], GradOptions::new().create_graph(true))?;
/// let dy = dy[0].clone().unwrap();
/// assert_eq!(dy.item::<f64>()?, 27.0); // 3x²
/// let d2y = grad(&[dy], &[x], GradOptions::new())?;
/// assert_eq!(d2y[0].as_ref().unwrap().item::<f64>()?, 18.0); // 6x
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    options: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    grad_on(&EngineInner::current(), outputs, inputs, options)
}

pub(crate) fn grad_on(
    engine: &Arc<EngineInner>,
    outputs: &[Tensor],
    inputs: &[Tensor],
    options: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if options.is_grads_batched {
        let outputs: Vec<GradTarget> = outputs.iter().map(GradTarget::from).collect();
        let inputs: Vec<GradTarget> = inputs.iter().map(GradTarget::from).collect();
        return edges::grad_targets_on(engine, &outputs, &inputs, options);
    }
    if inputs.is_empty() {
        return Err(Error::EmptyInputs { api: "grad" });
    }
    if options.materialize_grads && options.allow_unused == Some(false) {
        return Err(Error::MaterializeGradsWithoutAllowUnused);
    }
    let allow_unused = options.allow_unused.unwrap_or(options.materialize_grads);
    let mut grads = make_grads(outputs, &options.grad_outputs)?;
    let roots = root_edges(outputs, &mut grads)?;
    let mut edges: SmallVec<[Option<Edge>; 4]> = SmallVec::new();
    for t in inputs {
        if !t.requires_grad() {
            return Err(Error::InputDoesNotRequireGrad);
        }
        edges.push(t.try_gradient_edge()?);
    }
    let mut result = engine.execute(roots, grads, options.pass_options(), &edges)?;
    for (index, (slot, input)) in result.iter_mut().zip(inputs).enumerate() {
        if slot.is_none() {
            if options.materialize_grads {
                // PyTorch: `zeros_like(input, requires_grad=True)`, so it can be differentiated.
                *slot = Some(input.zeros_like()?.requires_grad_(true)?);
            } else if !allow_unused {
                return Err(Error::UnusedInput { index });
            }
        }
    }
    Ok(result)
}

/// Queues `callback` to run once after the current backward pass finished all its nodes (B25).
/// Callbacks run in FIFO order; a callback may queue more. An error from a callback becomes the
/// error of the pass.
///
/// # Errors
///
/// [`Error::CallbackOutsideBackward`] when called outside a backward pass.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
/// use autograd_runtime::{queue_callback, Tensor};
/// assert!(queue_callback(|| Ok(())).is_err());
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let y = x.mul_scalar(2.0)?;
/// let ran = Arc::new(AtomicBool::new(false));
/// let r = ran.clone();
/// y.register_hook(move |_g| {
///     let r = r.clone();
///     queue_callback(move || { r.store(true, Ordering::SeqCst); Ok(()) }).unwrap();
///     None
/// })?;
/// y.backward()?;
/// assert!(ran.load(Ordering::SeqCst));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn queue_callback<F>(callback: F) -> Result<()>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    per_thread::with_current_graph_task(|task| match task {
        Some(task) => {
            task.state
                .lock()
                .final_callbacks
                .push_back(Box::new(callback));
            Ok(())
        }
        None => Err(Error::CallbackOutsideBackward),
    })
}

fn warn_backward_create_graph_once() {
    static WARNED: AtomicBool = AtomicBool::new(false);
    crate::warning::warn_once(
        &WARNED,
        "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters to None after use to break the cycle and avoid the leak.",
    );
}

impl Tensor {
    /// Computes the gradient of this one-element tensor w.r.t. the graph leaves and accumulates
    /// it into their `.grad` (frees the graph's saved tensors).
    ///
    /// # Errors
    ///
    /// [`Error::ImplicitGradNonScalar`] for a tensor of more than one element (use
    /// [`Tensor::backward_with`] and a gradient), [`Error::DoesNotRequireGrad`], and any error
    /// raised during the pass.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// x.exp()?.backward()?;
    /// assert!((x.grad().unwrap().item::<f64>()? - 2f64.exp()).abs() < 1e-12);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn backward(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[], BackwardOptions::new())
    }

    /// [`Tensor::backward`] with options: explicit gradient, `retain_graph`, `create_graph`,
    /// `inputs`.
    ///
    /// # Errors
    ///
    /// As [`backward`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{BackwardOptions, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let y = x.mul(&x)?;
    /// y.backward_with(BackwardOptions::new().retain_graph(true))?;
    /// y.backward()?; // the graph was retained
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 8.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn backward_with(&self, options: BackwardOptions) -> Result<()> {
        let grads = [options.gradient.clone()];
        backward(std::slice::from_ref(self), &grads, options)
    }
}

/// The id of the backward pass running on this thread (`None` outside backward), increasing by
/// one per pass (B30).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{current_graph_task_id, Tensor};
/// assert_eq!(current_graph_task_id(), None);
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let seen = Arc::new(Mutex::new(None));
/// let s = seen.clone();
/// x.register_hook(move |_| { *s.lock().unwrap() = current_graph_task_id(); None })?;
/// x.mul_scalar(2.0)?.backward()?;
/// assert!(seen.lock().unwrap().is_some());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn current_graph_task_id() -> Option<u64> {
    per_thread::with_current_graph_task(|t| t.map(|t| t.id))
}

/// Whether the backward pass running on this thread keeps its graph (`retain_graph`), or `None`
/// outside backward (`torch._C._autograd._get_current_graph_task_keep_graph`, B13/B30): each pass
/// sees its own setting, also when several run at once.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{current_graph_task_keep_graph, BackwardOptions, Tensor};
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// x.register_hook(move |_| { s.lock().unwrap().push(current_graph_task_keep_graph()); None })?;
/// let y = x.mul_scalar(2.0)?;
/// y.backward_with(BackwardOptions::new().retain_graph(true))?;
/// y.backward()?;
/// assert_eq!(*seen.lock().unwrap(), vec![Some(true), Some(false)]);
/// assert_eq!(current_graph_task_keep_graph(), None);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn current_graph_task_keep_graph() -> Option<bool> {
    per_thread::with_current_graph_task(|t| t.map(|t| t.options.keep_graph))
}

/// Whether the current backward pass will run `node` (`torch._C._will_engine_execute_node`):
/// it is reachable from the roots and, for `grad()`/`backward(inputs=..)`, needed.
///
/// # Errors
///
/// [`Error::Message`] when called outside a backward pass, or with a leaf's `AccumulateGrad`
/// during `grad()` (PyTorch: "A leaf node was passed to _will_engine_execute_node but we are
/// currently running autograd.grad(). This is currently not supported.").
///
/// # Examples
///
/// ```
/// use autograd_runtime::{will_engine_execute_node, Tensor};
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// assert!(will_engine_execute_node(&x.exp()?.grad_fn().unwrap()).is_err());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn will_engine_execute_node(node: &crate::NodeRef) -> Result<bool> {
    per_thread::with_current_graph_task(|t| match t {
        Some(t) => t.will_execute(node),
        None => Err(Error::msg(
            "_will_engine_execute_node should only be called during the backward pass",
        )),
    })
}

/// Whether a reentrant checkpoint may recompute its region here
/// (`torch.autograd._is_checkpoint_valid()`): `true` outside backward and inside a pass that runs
/// every node it reaches; `false` inside a `grad()` call or a `backward()` given `inputs` — and
/// inside any pass nested in one — since the reentrant `backward()` a checkpoint runs would
/// accumulate into leaves that such a pass must leave alone.
///
/// [`checkpoint`](crate::checkpoint) with `use_reentrant(true)` checks it in its backward.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{grad, is_checkpoint_valid, GradOptions, Tensor};
/// assert!(is_checkpoint_valid());
/// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// let y = x.mul_scalar(2.0)?;
/// y.register_hook(move |_| { s.lock().unwrap().push(is_checkpoint_valid()); None })?;
/// y.exp()?.backward()?;
/// let y = x.mul_scalar(2.0)?;
/// let s = seen.clone();
/// y.register_hook(move |_| { s.lock().unwrap().push(is_checkpoint_valid()); None })?;
/// grad(&[y.exp()?], &[x], GradOptions::new())?;
/// assert_eq!(*seen.lock().unwrap(), vec![true, false]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn is_checkpoint_valid() -> bool {
    per_thread::with_current_graph_task(|t| t.is_none_or(|t| t.checkpoint_valid))
}
