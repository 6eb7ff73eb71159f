//! The `Node` trait every backward function implements, and `NodeMeta`, the bookkeeping the engine
//! needs from every node (sequence number, topological number, next edges, input metadata, hooks).

use std::cell::Cell;

use smallvec::SmallVec;

use super::hooks::NodeHooks;
use super::{Edge, SavedTensor};
use crate::layout::Dims;
use crate::sync::atomic::{AtomicU32, AtomicU64};
use crate::sync::{Arc, Ordering, Weak};
use crate::tensor::TensorImpl;
use crate::{DType, Device, Result, Tensor};

/// The gradients flowing into or out of one node: one slot per input/output, `None` where the
/// gradient is undefined (PyTorch's undefined tensor). Inline up to two slots (no allocation).
pub type GradVec = SmallVec<[Option<Tensor>; 2]>;

/// A function of the backward graph (PyTorch's `torch::autograd::Node`).
///
/// A node's *inputs* are the gradients w.r.t. the outputs of the forward op that created it; its
/// *outputs* are the gradients w.r.t. that op's inputs, sent along [`NodeMeta::next_edges`].
/// Nodes are made by `#[differentiable]` (through [`FunctionNode`](crate::graph::FunctionNode));
/// hand-written implementations are engine-internal (`AccumulateGrad`, `GraphRoot`).
pub trait Node: Send + Sync + 'static {
    /// The node's name as PyTorch prints it, e.g. `MulBackward0`.
    fn name(&self) -> &str;

    /// The engine's bookkeeping for this node.
    fn meta(&self) -> &NodeMeta;

    /// Computes the gradients w.r.t. the forward inputs from those w.r.t. the forward outputs.
    ///
    /// # Errors
    ///
    /// Any error stops the backward pass and reaches the caller of `backward()`/`grad()` unchanged.
    fn apply(&self, grads: GradVec) -> Result<GradVec>;

    /// Frees saved tensors after the node ran without `retain_graph` (PyTorch's
    /// `release_variables`). Later use of a released tensor fails with
    /// [`Error::BackwardTwice`](crate::Error::BackwardTwice).
    fn release_saved(&self) {}

    /// Calls `visit` with each tensor the node saved for its backward, under the name its
    /// backward gives it (`x`, `result`, ...; `name[i]` for the tensors of a list). Tools such as
    /// [`viz::to_dot`](crate::viz::to_dot) use it; nodes that save no tensor keep the default,
    /// which visits nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
    /// let y = x.exp()?; // ExpBackward0 saves its output
    /// let mut saved = Vec::new();
    /// y.grad_fn().unwrap().visit_saved_tensors(&mut |name, t| {
    ///     let md = t.metadata().unwrap();
    ///     saved.push((name.to_string(), md.shape().to_vec()));
    /// });
    /// assert_eq!(saved, [("result".to_string(), vec![2])]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    fn visit_saved_tensors(&self, visit: &mut dyn FnMut(&str, &SavedTensor)) {
        let _ = visit;
    }

    /// For `AccumulateGrad`: the leaf it accumulates into (whose tensor hooks it runs).
    #[doc(hidden)]
    fn accumulates_into(&self) -> Option<&Tensor> {
        None
    }
}

/// Shape, dtype and device of one node input (a forward output), used to validate and
/// sum-reduce the gradients other nodes send to it, and to create zeros for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputMetadata {
    pub(crate) shape: Dims,
    pub(crate) dtype: DType,
    pub(crate) device: Device,
}

impl InputMetadata {
    /// Metadata describing `t`.
    pub fn of(t: &Tensor) -> InputMetadata {
        InputMetadata {
            shape: t.shape_dims(),
            dtype: t.dtype(),
            device: t.device(),
        }
    }

    /// The expected gradient shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The expected gradient dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The expected gradient device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Zeros of this shape, dtype and device (for materialising undefined gradients).
    ///
    /// # Errors
    ///
    /// A device error (out of memory) for a tensor in device memory.
    pub fn zeros(&self) -> crate::Result<Tensor> {
        Tensor::filled(&self.shape, 0.0, self.dtype, self.device)
    }
}

thread_local! {
    /// PyTorch's per-thread sequence counter: later forward ops get larger numbers and so run
    /// earlier in backward.
    static NEXT_SEQUENCE_NR: Cell<u64> = const { Cell::new(0) };
}

/// A node's scratch space for the engine's graph walk (`engine/dependencies.rs`): the node's
/// dense index in the one walk that holds the engine's slot lock (`WALK_SLOTS` there), valid when
/// the epoch is that walk's. Every `NodeMeta` has one. Defined here, beside the node that owns
/// it, so that the graph does not import the engine; only that walk reads or writes it.
#[derive(Debug)]
pub(crate) struct WalkSlot {
    index: AtomicU32,
    /// The epoch of the walk that wrote `index` (0: none yet; no walk has epoch 0).
    epoch: AtomicU64,
}

impl WalkSlot {
    /// A slot no walk has written.
    pub(crate) fn new() -> WalkSlot {
        WalkSlot {
            index: AtomicU32::new(0),
            epoch: AtomicU64::new(0),
        }
    }

    /// The index written by the walk of `epoch`, if that walk wrote one.
    #[inline]
    pub(crate) fn get(&self, epoch: u64) -> Option<u32> {
        // Relaxed: only the walk holding the engine's WALK_SLOTS touches the slots; its Acquire
        // on that lock orders these accesses after the previous holder's.
        (self.epoch.load(Ordering::Relaxed) == epoch).then(|| self.index.load(Ordering::Relaxed))
    }

    /// Records `index` as this node's index in the walk of `epoch`.
    #[inline]
    pub(crate) fn set(&self, index: u32, epoch: u64) {
        // Relaxed: see `get`.
        self.index.store(index, Ordering::Relaxed);
        self.epoch.store(epoch, Ordering::Relaxed);
    }
}

/// The engine's bookkeeping for one node.
#[derive(Debug)]
pub struct NodeMeta {
    /// Order among ready nodes (larger first). Atomic only so tests can reorder (B04).
    sequence_nr: AtomicU64,
    /// Longest path to a leaf (AccumulateGrad = 0); fixed at creation. Used to prune the graph
    /// walk for `grad()`/`backward(inputs=..)` (B09).
    topological_nr: u64,
    /// Where each output gradient goes; `None` for inputs that do not require grad.
    next_edges: SmallVec<[Option<Edge>; 2]>,
    /// One entry per node input (forward output).
    input_metadata: SmallVec<[InputMetadata; 1]>,
    /// Tensor pre-hooks, retains_grad hooks, node pre- and post-hooks.
    pub(crate) hooks: NodeHooks,
    /// The engine's scratch space for its graph walk (`engine::dependencies`).
    pub(crate) walk_slot: WalkSlot,
    /// Where the forward op was called and which node's backward called it, recorded only in
    /// anomaly mode (B23).
    anomaly: Option<Arc<crate::anomaly::AnomalyMetadata>>,
}

impl NodeMeta {
    /// Bookkeeping for a new node: takes the next sequence number of this thread and derives the
    /// topological number from the edges.
    #[inline]
    pub fn new(
        next_edges: SmallVec<[Option<Edge>; 2]>,
        input_metadata: SmallVec<[InputMetadata; 1]>,
    ) -> NodeMeta {
        let seq = NEXT_SEQUENCE_NR.with(|c| {
            let v = c.get();
            c.set(v + 1);
            v
        });
        NodeMeta::with_sequence_nr(seq, next_edges, input_metadata)
    }

    #[inline]
    pub(crate) fn with_sequence_nr(
        sequence_nr: u64,
        next_edges: SmallVec<[Option<Edge>; 2]>,
        input_metadata: SmallVec<[InputMetadata; 1]>,
    ) -> NodeMeta {
        let topological_nr = next_edges
            .iter()
            .flatten()
            .map(|e| e.node.meta().topological_nr + 1)
            .max()
            .unwrap_or(0);
        NodeMeta {
            sequence_nr: AtomicU64::new(sequence_nr),
            topological_nr,
            next_edges,
            input_metadata,
            hooks: NodeHooks::default(),
            walk_slot: WalkSlot::new(),
            anomaly: crate::is_anomaly_enabled()
                .then(|| Arc::new(crate::anomaly::AnomalyMetadata::capture())),
        }
    }

    /// Makes `tensor`, this node's output `output_nr`, retain its gradient (its retains_grad
    /// hook). For the tensor's autograd state when it gives the tensor this node as grad_fn, so
    /// that `tensor/` need not name the hooks (see `graph/hooks.rs`).
    pub(crate) fn set_retains_grad(&self, output_nr: usize, tensor: Weak<TensorImpl>) {
        self.hooks.set_retains_grad(output_nr, tensor);
    }

    /// Drops the retains_grad hook of output `output_nr` (its tensor got another grad_fn).
    pub(crate) fn clear_retains_grad(&self, output_nr: usize) {
        self.hooks.clear_retains_grad(output_nr);
    }

    /// The node's sequence number (creation order on its thread; `u64::MAX` for AccumulateGrad).
    pub fn sequence_nr(&self) -> u64 {
        // Relaxed: an ordering hint read by the engine; set only by tests before backward starts.
        self.sequence_nr.load(Ordering::Relaxed)
    }

    /// Overrides the sequence number (PyTorch's `_set_sequence_nr`), to test scheduling order.
    pub fn set_sequence_nr(&self, nr: u64) {
        // Relaxed: see `sequence_nr`.
        self.sequence_nr.store(nr, Ordering::Relaxed);
    }

    /// Length of the longest path from this node to a leaf.
    pub fn topological_nr(&self) -> u64 {
        self.topological_nr
    }

    /// Where each output gradient goes.
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next_edges
    }

    /// Number of outputs (gradients this node returns).
    pub fn num_outputs(&self) -> usize {
        self.next_edges.len()
    }

    /// Number of inputs (gradients this node receives).
    pub fn num_inputs(&self) -> usize {
        self.input_metadata.len()
    }

    /// The metadata of every input.
    pub(crate) fn input_metadata_all(&self) -> &[InputMetadata] {
        &self.input_metadata
    }

    /// Metadata of input `i`.
    pub fn input_metadata(&self, i: usize) -> &InputMetadata {
        &self.input_metadata[i]
    }

    /// The device whose queue runs this node: that of its first non-CPU input, else the CPU
    /// (PyTorch's `Node::device()`).
    pub fn device(&self) -> Device {
        match self.input_metadata.as_slice() {
            // One input (nearly every node; the engine asks for every node it hands a gradient
            // to): its device, whichever it is.
            [m] => m.device,
            all => all
                .iter()
                .map(|m| m.device)
                .find(|d| !d.is_cpu())
                .unwrap_or(Device::Cpu),
        }
    }

    /// The backtrace of the forward call that created this node, if anomaly mode was on.
    pub fn forward_trace(&self) -> Option<&std::backtrace::Backtrace> {
        self.anomaly
            .as_deref()
            .map(crate::anomaly::AnomalyMetadata::trace)
    }

    /// What anomaly mode recorded when this node was created (its forward trace and parent).
    pub(crate) fn anomaly_metadata(&self) -> Option<&Arc<crate::anomaly::AnomalyMetadata>> {
        self.anomaly.as_ref()
    }

    /// Whether output `i` goes anywhere (PyTorch's `should_compute_output` without exec_info):
    /// backward code may skip computing gradients nobody receives.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.next_edges.get(i).is_some_and(Option::is_some)
    }

    /// Whether output `i` is wanted by the pass running this node (PyTorch's
    /// `task_should_compute_output`): it goes somewhere ([`NodeMeta::needs_input_grad`]) and,
    /// in a selective pass (`grad()`, `backward(inputs=..)`), to a node that pass runs. The
    /// backwards the macros generate for built-in ops and derived functions skip the others;
    /// a hand-written custom backward sees [`NodeMeta::needs_input_grad`], as PyTorch's
    /// `ctx.needs_input_grad` does not depend on the pass either.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{grad, GradOptions, Tensor};
    /// let a = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let b = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// let y = a.mul(&b)?;
    /// // Outside a pass, every output with an edge is wanted.
    /// assert!(y.grad_fn().unwrap().meta().should_compute_output(1));
    /// // `grad` w.r.t. `a` alone: MulBackward0 computes a's gradient only.
    /// let g = grad(&[y], &[a], GradOptions::new())?;
    /// assert_eq!(g[0].as_ref().unwrap().item::<f64>()?, 3.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn should_compute_output(&self, i: usize) -> bool {
        self.needs_input_grad(i) && crate::engine::per_thread::should_compute_output(i)
    }
}
