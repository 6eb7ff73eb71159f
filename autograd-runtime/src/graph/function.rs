//! `FunctionNode<B>`: the one node type behind every differentiable op. An op supplies a
//! [`Backward`] (its saved state and gradient formula); this file supplies the rest: the
//! `NodeMeta`, undefined-gradient handling, release of saved tensors, and [`next_edges`] /
//! [`record_node`] / [`try_record_node`], which wire a new node into the graph (next edges from
//! the inputs, grad_fn on the outputs). They are called by the code `#[differentiable]`
//! generates.

use smallvec::SmallVec;

use super::saved_hooks;
use super::{Edge, GradVec, InputMetadata, Node, NodeMeta, NodeRef, SaveContext, SavedTensor};
use crate::grad_mode::is_recording;
use crate::sync::{Arc, Weak};
use crate::{Result, Tensor};

/// The gradient formula and saved state of one differentiable op.
///
/// Implemented by the code `#[differentiable]`/`#[backward]` generate — for the runtime's own ops
/// as for users' functions.
pub trait Backward: Send + Sync + 'static {
    /// The node name, e.g. `MulBackward0`.
    const NAME: &'static str;

    /// Built-in ops return undefined gradients without running when every incoming gradient is
    /// undefined (PyTorch's `any_grad_defined` check); custom functions run anyway (B34).
    const SKIP_IF_NO_GRAD: bool = true;

    /// Undefined incoming gradients are replaced by zeros before `backward` runs (B34).
    const MATERIALIZE_GRADS: bool = true;

    /// Gradients w.r.t. the forward inputs (one per next edge) from those w.r.t. the outputs.
    ///
    /// # Errors
    ///
    /// Any error stops the backward pass and reaches the caller.
    fn backward(&self, meta: &NodeMeta, grads: GradVec) -> Result<GradVec>;

    /// Frees saved tensors (called after the node ran without `retain_graph`).
    fn release(&self) {}

    /// Calls `visit` with each saved tensor and its name (see [`Node::visit_saved_tensors`]).
    fn visit_saved(&self, visit: &mut dyn FnMut(&str, &SavedTensor)) {
        let _ = visit;
    }

    /// The node name; [`Backward::NAME`] unless one formula serves several ops (in-place ops
    /// are named after their out-of-place op, as in PyTorch).
    fn name(&self) -> &'static str {
        Self::NAME
    }
}

/// A graph node built from a [`Backward`].
pub struct FunctionNode<B> {
    meta: NodeMeta,
    backward: B,
}

impl<B: Backward> Node for FunctionNode<B> {
    fn name(&self) -> &str {
        self.backward.name()
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, mut grads: GradVec) -> Result<GradVec> {
        // One defined gradient (nearly every node): nothing to skip or to materialise.
        if !matches!(grads.as_slice(), [Some(_)])
            && let Some(skipped) = prepare_grads(
                &self.meta,
                &mut grads,
                B::SKIP_IF_NO_GRAD,
                B::MATERIALIZE_GRADS,
            )?
        {
            return Ok(skipped);
        }
        self.backward.backward(&self.meta, grads)
    }

    fn release_saved(&self) {
        self.backward.release();
    }

    fn visit_saved_tensors(&self, visit: &mut dyn FnMut(&str, &SavedTensor)) {
        self.backward.visit_saved(visit);
    }
}

/// The incoming gradients of a node whose slots are not exactly one defined gradient: `Some`
/// (the node's all-`None` result) when none is defined and the backward skips (`skip`),
/// otherwise the undefined slots filled with zeros when it materialises them (`materialize`).
/// Not generic: one copy for every node type.
#[inline(never)]
fn prepare_grads(
    meta: &NodeMeta,
    grads: &mut GradVec,
    skip: bool,
    materialize: bool,
) -> Result<Option<GradVec>> {
    // One pass over the gradients answers both questions.
    let slots = grads.as_mut_slice();
    let defined = slots.iter().filter(|g| g.is_some()).count();
    if skip && defined == 0 {
        return Ok(Some(smallvec::smallvec![None; meta.num_outputs()]));
    }
    if materialize && defined < slots.len() {
        for (i, g) in slots.iter_mut().enumerate() {
            if g.is_none() {
                *g = Some(meta.input_metadata(i).zeros()?);
            }
        }
    }
    Ok(None)
}

impl<B: Backward> FunctionNode<B> {
    /// Runs this node's backward as if its next edges were `edges` (same outputs), outside any
    /// pass: forward-mode AD computes an op's tangents through it (`forward_ad/`), with edges
    /// for the inputs that carry a tangent, whether or not they require grad. `grads` are all
    /// defined.
    pub(crate) fn backward_with_edges(
        &self,
        edges: SmallVec<[Option<Edge>; 2]>,
        grads: GradVec,
    ) -> Result<GradVec> {
        let meta = NodeMeta::new(
            edges,
            self.meta.input_metadata_all().iter().cloned().collect(),
        );
        let _unmasked = crate::engine::per_thread::OutputMask::clear();
        self.backward.backward(&meta, grads)
    }
}

impl<B> std::fmt::Debug for FunctionNode<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionNode")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// The incoming gradients of a node with `N` inputs, moved out of `grads` (what the backward
/// `#[differentiable]` generates starts with). Missing slots are `None`. When `grads` holds no
/// more than `N` slots inline, nothing is left in it and it is forgotten instead of going through
/// `SmallVec`'s out-of-line `Drop` (a call and a loop per node run); the gradients themselves
/// drop with the returned array, inline.
#[doc(hidden)]
#[inline]
pub fn take_grads<const N: usize>(mut grads: GradVec) -> [Option<Tensor>; N] {
    let taken = std::array::from_fn(|i| grads.get_mut(i).and_then(Option::take));
    if !grads.spilled() && grads.len() <= N {
        // Every slot was taken above (all are `None`) and nothing is on the heap.
        std::mem::forget(grads);
    }
    taken
}

/// The next edges for a node over `inputs`, or `None` when nothing must be recorded (grad mode
/// off or inference mode on, or no input requires grad).
#[doc(hidden)]
#[inline]
pub fn next_edges(inputs: &[&Tensor]) -> Option<SmallVec<[Option<Edge>; 2]>> {
    if !is_recording() {
        return None;
    }
    let edges = gradient_edges(inputs);
    // A view made under `no_grad` requires grad through its base without an edge (see
    // `view_edge`).
    let record = edges.iter().any(Option::is_some)
        || inputs.iter().any(|t| t.is_view() && t.requires_grad());
    (record && first_normal_or_any(inputs)).then_some(edges)
}

/// Whether some input is not an inference tensor. An op over inference tensors alone is never
/// recorded, even outside inference mode and when one of them requires grad (PyTorch gives
/// inference tensors no autograd dispatch keys); one that mixes them with a normal tensor is.
/// Asked only once an op would record. The first input is nearly always normal: that one load is
/// all the recorded op's own code holds (more code there costs more than the check, e.g. LLVM
/// then copies the new node into its allocation instead of building it there).
#[inline(always)]
fn first_normal_or_any(inputs: &[&Tensor]) -> bool {
    match inputs.first() {
        Some(t) if !t.is_inference() => true,
        _ => any_normal(inputs.iter().copied()),
    }
}

/// [`first_normal_or_any`] past the first input (out of line: rare).
#[cold]
#[inline(never)]
fn any_normal<'a>(mut inputs: impl Iterator<Item = &'a Tensor>) -> bool {
    inputs.any(|t| !t.is_inference())
}

/// The gradient edges of `inputs`, one per input. One or two inputs (nearly every op) are written
/// straight into the inline buffer: `collect` costs about 45 instructions more per recorded op.
#[inline(always)]
fn gradient_edges(inputs: &[&Tensor]) -> SmallVec<[Option<Edge>; 2]> {
    match inputs {
        [a] => SmallVec::from_buf_and_len([a.gradient_edge(), None], 1),
        [a, b] => SmallVec::from_buf([a.gradient_edge(), b.gradient_edge()]),
        _ => inputs.iter().map(|t| t.gradient_edge()).collect(),
    }
}

/// [`next_edges`] that fails at once, with PyTorch's error, on a view that may not be rebased
/// (`next_edges` leaves that error to the backward pass): what built-in ops call, since PyTorch
/// raises it when the op reads the view's `grad_fn`.
///
/// # Errors
///
/// [`crate::Error::ViewRebase`].
#[doc(hidden)]
#[inline(always)] // on every recorded op's path: keep it in the op's own code as `next_edges` was
pub fn try_next_edges(inputs: &[&Tensor]) -> Result<Option<SmallVec<[Option<Edge>; 2]>>> {
    if !is_recording() {
        return Ok(None);
    }
    if inputs.iter().any(|t| t.is_view()) {
        return try_next_edges_of_views(inputs);
    }
    // No view: what `next_edges` does (no view state to read).
    let edges = gradient_edges(inputs);
    let record = edges.iter().any(Option::is_some) && first_normal_or_any(inputs);
    Ok(record.then_some(edges))
}

/// [`try_next_edges`] when an input is a view (out of line: graphs without views never call it).
#[inline(never)]
fn try_next_edges_of_views(inputs: &[&Tensor]) -> Result<Option<SmallVec<[Option<Edge>; 2]>>> {
    edges_checked(inputs.iter().map(|t| Some(*t)))
}

/// The edges of `inputs` (`None`: an absent optional input), views' checked; `Ok(None)` when
/// nothing is to be recorded.
fn edges_checked<'a>(
    inputs: impl ExactSizeIterator<Item = Option<&'a Tensor>>,
) -> Result<Option<SmallVec<[Option<Edge>; 2]>>> {
    let mut edges: SmallVec<[Option<Edge>; 2]> = SmallVec::with_capacity(inputs.len());
    let mut record = false;
    let mut normal = false;
    for t in inputs {
        let edge = match t {
            Some(t) if t.is_view() => view_edge(t, &mut record)?,
            Some(t) => t.gradient_edge(),
            None => None,
        };
        normal |= t.is_some_and(|t| !t.is_inference());
        record |= edge.is_some();
        edges.push(edge);
    }
    Ok((record && normal).then_some(edges))
}

/// A view's gradient edge; sets `record` when the view requires grad without having an edge
/// (one made under `no_grad` of a base that requires grad): PyTorch records the op then (its
/// result requires grad) with an empty edge for that input.
fn view_edge(t: &Tensor, record: &mut bool) -> Result<Option<Edge>> {
    let edge = t.try_gradient_edge()?;
    if edge.is_none() && t.requires_grad() {
        *record = true;
    }
    Ok(edge)
}

/// [`try_next_edges`] over inputs some of which may be absent.
///
/// # Errors
///
/// As [`try_next_edges`].
#[doc(hidden)]
#[inline]
pub fn try_next_edges_opt(
    inputs: &[Option<&Tensor>],
) -> Result<Option<SmallVec<[Option<Edge>; 2]>>> {
    if !is_recording() {
        return Ok(None);
    }
    edges_checked(inputs.iter().copied())
}

/// [`next_edges`] over inputs some of which may be absent (`Option<&Tensor>` parameters): an
/// absent input gets a `None` edge, as one that does not require grad.
#[doc(hidden)]
#[inline]
pub fn next_edges_opt(inputs: &[Option<&Tensor>]) -> Option<SmallVec<[Option<Edge>; 2]>> {
    if !is_recording() {
        return None;
    }
    let edges: SmallVec<[Option<Edge>; 2]> = inputs
        .iter()
        .map(|t| t.and_then(Tensor::gradient_edge))
        .collect();
    let record = (edges.iter().any(Option::is_some)
        || inputs
            .iter()
            .any(|t| t.is_some_and(|t| t.is_view() && t.requires_grad())))
        && any_normal(inputs.iter().flatten().copied());
    record.then_some(edges)
}

/// Creates the node for an op whose outputs are `outputs` and makes it their grad_fn. `make`
/// builds the saved state through a [`SaveContext`], whose weak handle on the node (for saving
/// outputs) is made only when asked for: a node that saves no output costs no weak count
/// update.
///
/// A saved-tensor pack hook that modifies its input in place is reported when the backward
/// uses that tensor: for a forward that cannot return the error. [`try_record_node`] reports it
/// at once.
#[doc(hidden)]
#[inline]
pub fn record_node<B: Backward>(
    edges: SmallVec<[Option<Edge>; 2]>,
    outputs: &[&Tensor],
    make: impl FnOnce(&SaveContext<'_>) -> B,
) -> NodeRef {
    let (node, _failure) = build_node(edges, outputs, make);
    attach(node, outputs)
}

/// [`record_node`] that fails, as PyTorch does in the forward, when a saved-tensor pack hook
/// modified its input in place or failed (a [`try_saved_tensors_hooks`](crate::try_saved_tensors_hooks)
/// hook's error); the outputs are then left as they are.
///
/// # Errors
///
/// [`crate::Error::PackHookModifiedInput`].
#[doc(hidden)]
#[inline]
pub fn try_record_node<B: Backward>(
    edges: SmallVec<[Option<Edge>; 2]>,
    outputs: &[&Tensor],
    make: impl FnOnce(&SaveContext<'_>) -> B,
) -> Result<NodeRef> {
    let (node, failure) = build_node(edges, outputs, make);
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(attach(node, outputs))
}

/// After [`record_node`] of a node that saves outputs: under saved-tensor hooks, packs them now
/// that the node is their grad_fn, so that the pack hook sees each with its `grad_fn`, as
/// PyTorch saves outputs after setting their history (see [`SaveContext::output`]). The code
/// `#[differentiable]` generates calls it for nodes that save an output; without hooks it is one
/// thread-local load.
///
/// # Errors
///
/// The first pack hook's error (the slot reports it too, when used).
#[doc(hidden)]
#[inline]
pub fn finish_output_packs(node: &NodeRef) -> Result<()> {
    if !saved_hooks::has_hooks() {
        return Ok(());
    }
    finish_packs(node)
}

/// [`finish_output_packs`] under hooks: every slot saved as an output is packed.
#[inline(never)]
fn finish_packs(node: &NodeRef) -> Result<()> {
    let mut first = None;
    node.visit_saved_tensors(&mut |_, saved| {
        if let Err(e) = saved.finish_pack() {
            first.get_or_insert(e);
        }
    });
    first.map_or(Ok(()), Err)
}

/// The node over `outputs`, and whether a pack hook modified its input while `make` saved.
/// Always inlined, for the reason given in the body.
#[inline(always)]
pub(crate) fn build_node<B: Backward>(
    edges: SmallVec<[Option<Edge>; 2]>,
    outputs: &[&Tensor],
    make: impl FnOnce(&SaveContext<'_>) -> B,
) -> (Arc<FunctionNode<B>>, Option<crate::Error>) {
    // One output (nearly every op): written straight into the inline buffer, as the edges are.
    let input_metadata = match outputs {
        [t] => SmallVec::from_buf([InputMetadata::of(t)]),
        _ => outputs.iter().map(|t| InputMetadata::of(t)).collect(),
    };
    let mut failure = None;
    let node: Arc<FunctionNode<B>> = Arc::new_cyclic(|weak: &Weak<FunctionNode<B>>| {
        let weak_self = || -> Weak<dyn Node> { weak.clone() };
        let save = SaveContext::new(&weak_self);
        let backward = make(&save);
        failure = save.take_failure();
        FunctionNode {
            // Built here rather than moved in: LLVM then writes it in place instead of copying
            // it (a `memcpy` per recorded op, depending on its inlining choices).
            meta: NodeMeta::new(edges, input_metadata),
            backward,
        }
    });
    (node, failure)
}

/// Makes `node` the grad_fn of each output, output `i` of it.
#[inline]
pub(crate) fn attach<B: Backward>(node: Arc<FunctionNode<B>>, outputs: &[&Tensor]) -> NodeRef {
    attach_ref(NodeRef::new(node), outputs)
}

/// [`attach`] of a node already type-erased: one copy for every op.
#[inline]
pub(crate) fn attach_ref(node: NodeRef, outputs: &[&Tensor]) -> NodeRef {
    for (i, t) in outputs.iter().enumerate() {
        t.set_grad_fn(node.clone(), i);
    }
    node
}

/// One output of a custom function's forward, made what PyTorch's `_process_backward_mode_ad`
/// makes of it before the node is attached: `input` (the output is one of the forward's inputs,
/// returned as is), `dirty` (an input the forward modified in place, returned itself) and
/// `differentiable` (a node is recorded and the output is not marked non-differentiable).
///
/// - An input returned as is becomes a view of itself, made with recording off, so that the node
///   can be attached to it (or, unrecorded, so that it is not the caller's handle); one that
///   requires grad and is not differentiable here (`no_grad`, or no input requires grad)
///   becomes a detached alias, so that no gradient escapes.
/// - A tensor that requires grad and is not a view (a captured tensor with history) becomes a
///   detached alias: its own history stays as it is.
/// - Everything else (fresh results, views made in the forward, dirty inputs) is kept.
///
/// [`mark_custom_outputs`] finishes the job once the node is attached.
#[doc(hidden)]
pub fn custom_output(out: Tensor, input: bool, dirty: bool, differentiable: bool) -> Tensor {
    let processed = process_custom_output(&out, input, dirty, differentiable);
    if !processed.is_same(&out) {
        // A derived function's output carries the tangent its body's ops computed.
        crate::forward_ad::carry(&out, &processed);
    }
    processed
}

fn process_custom_output(out: &Tensor, input: bool, dirty: bool, differentiable: bool) -> Tensor {
    let out = out.clone();
    if dirty {
        return if !differentiable && out.requires_grad() {
            out.detach()
        } else {
            out
        };
    }
    let requires_grad = out.requires_grad();
    if input {
        if !differentiable && requires_grad {
            return out.detach();
        }
        let _no_grad = crate::no_grad();
        return out.view_as_self();
    }
    if requires_grad && !out.is_view() {
        return out.detach();
    }
    out
}

/// After a custom function's node is attached (or none was recorded): each output that is a
/// view, other than a dirty input, is marked as created in a custom function, so that an
/// in-place op on it, or a use after its base changed, raises PyTorch's error instead of
/// rewriting the custom backward; with several differentiable outputs every view is marked as
/// one of a multi-output node. `dirty[i]`: output `i` is a dirty input.
#[doc(hidden)]
pub fn mark_custom_outputs(outputs: &[&Tensor], dirty: &[bool], differentiable: usize) {
    let multi = differentiable > 1;
    for (i, t) in outputs.iter().enumerate() {
        if dirty.get(i).copied().unwrap_or(false) && !multi {
            continue;
        }
        t.mark_custom_function_view(multi);
    }
}

/// The error type of a forward's `Result` (for the code `#[differentiable]` generates, which
/// names the forward's return type through an alias).
#[doc(hidden)]
pub trait ForwardResult {
    /// `E` of `Result<T, E>`.
    type Error;
}

impl<T, E> ForwardResult for std::result::Result<T, E> {
    type Error = E;
}

/// Converts an [`crate::Error`] into a forward's error type `E` when `E: From<Error>`, and
/// gives it back otherwise, chosen at compile time by method resolution
/// (`(&&ErrorProbe::<E>::new()).convert_error(e)`: the `&ErrorProbe` impl, whose method takes
/// `&&ErrorProbe` and is bound by `From`, is found first; the `ErrorProbe` one after auto-deref). A custom function whose error type does
/// not come from ours cannot return the engine's errors from its forward, which then reach the
/// caller at backward instead.
#[doc(hidden)]
#[derive(Debug)]
pub struct ErrorProbe<E>(std::marker::PhantomData<E>);

impl<E> ErrorProbe<E> {
    /// The probe for `E`.
    pub fn new() -> ErrorProbe<E> {
        ErrorProbe(std::marker::PhantomData)
    }
}

impl<E> Default for ErrorProbe<E> {
    fn default() -> ErrorProbe<E> {
        ErrorProbe::new()
    }
}

/// [`ErrorProbe`] for an error type that converts from ours.
#[doc(hidden)]
pub trait ConvertsError<E> {
    /// `Ok(e.into())`.
    ///
    /// # Errors
    ///
    /// Never.
    fn convert_error(&self, e: crate::Error) -> std::result::Result<E, crate::Error>;
}

impl<E: From<crate::Error>> ConvertsError<E> for &ErrorProbe<E> {
    fn convert_error(&self, e: crate::Error) -> std::result::Result<E, crate::Error> {
        Ok(E::from(e))
    }
}

/// [`ErrorProbe`] for any other error type.
#[doc(hidden)]
pub trait KeepsError<E> {
    /// `Err(e)`: the error cannot be returned as an `E`.
    ///
    /// # Errors
    ///
    /// Always: `e` itself.
    fn convert_error(&self, e: crate::Error) -> std::result::Result<E, crate::Error>;
}

impl<E> KeepsError<E> for ErrorProbe<E> {
    fn convert_error(&self, e: crate::Error) -> std::result::Result<E, crate::Error> {
        Err(e)
    }
}
