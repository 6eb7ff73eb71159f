//! Tangents on tensors, and what the code `#[differentiable]` generates calls to propagate them
//! for built-in ops: [`dual_edges`] and [`record_dual`] (the tangent through the op's backward,
//! see the module docs of `forward_ad`); `custom.rs` has what a `#[jvp]` calls.

use smallvec::SmallVec;

use super::level;
use crate::graph::function::{attach_ref, build_node};
use crate::graph::{Backward, Edge, GradVec, Node, NodeMeta, NodeRef, SaveContext};
use crate::layout::Layout;
use crate::sync::Arc;
use crate::sync::statics::OnceLock;
use crate::{Error, GradOptions, Result, Tensor};

/// A tensor's tangent, with the level generation it was set under.
pub(crate) struct ForwardGrad {
    pub(super) generation: u64,
    tangent: Tangent,
}

pub(super) enum Tangent {
    Value(Tensor),
    /// None, and none derived from a base: a view that is not a forward view (the primal
    /// [`unpack_dual`](super::unpack_dual) returns, PyTorch's `_fw_primal`).
    Absent,
    /// The op that made this tensor could not compute its tangent (a custom function without a
    /// `#[jvp]` whose forward cannot return our error): reported when the tangent is read.
    Failed(Failure),
}

#[derive(Clone)]
pub(super) enum Failure {
    CustomJvp,
    /// An op's tangent computation failed where its forward cannot return the error.
    Op(Arc<str>),
}

impl Failure {
    fn error(&self) -> Error {
        match self {
            Failure::CustomJvp => Error::CustomFunctionJvp,
            Failure::Op(message) => Error::msg(message),
        }
    }
}

/// `t`'s tangent at level `generation`. A view without a tangent of its own sees its base's,
/// as PyTorch's `AutogradMeta::fw_grad` gives a view the view of its base's tangent: a view
/// taken before its base got a tangent (an in-place op with a dual operand) has one after.
pub(super) fn tangent_at(t: &Tensor, generation: u64) -> Result<Option<Tensor>> {
    if let Some(own) = own_tangent(t, generation) {
        return own;
    }
    let Some(base) = t.view_base() else {
        return Ok(None);
    };
    let Some(Ok(Some(base_tangent))) = own_tangent(base, generation) else {
        return Ok(None);
    };
    let derived = view_of(t, base, &base_tangent);
    if let Some(d) = &derived {
        set_tangent(t, d.clone(), generation);
    }
    Ok(derived)
}

/// `t`'s own tangent slot at level `generation`: `None` when it has none (nothing was set, or
/// under another level).
fn own_tangent(t: &Tensor, generation: u64) -> Option<Result<Option<Tensor>>> {
    let meta = t.0.autograd.lock();
    match meta.forward_grad.as_deref() {
        Some(ForwardGrad {
            generation: g,
            tangent,
        }) if *g == generation => Some(match tangent {
            Tangent::Value(t) => Ok(Some(t.clone())),
            Tangent::Absent => Ok(None),
            Tangent::Failed(f) => Err(f.error()),
        }),
        _ => None,
    }
}

/// Marks `t`, a view, as having no tangent at level `generation`, whatever its base's.
pub(super) fn set_absent(t: &Tensor, generation: u64) {
    set(t, Tangent::Absent, generation);
}

/// Sets `t`'s tangent at level `generation`.
pub(super) fn set_tangent(t: &Tensor, tangent: Tensor, generation: u64) {
    set(t, Tangent::Value(tangent), generation);
}

pub(super) fn set(t: &Tensor, tangent: Tangent, generation: u64) {
    let old =
        t.0.autograd
            .lock()
            .forward_grad
            .replace(Box::new(ForwardGrad {
                generation,
                tangent,
            }));
    // Dropped unlocked: an old tangent may be the last handle of a graph.
    drop(old);
    level::register(t);
}

/// The tangents of `inputs` at the open level, one per input.
fn input_tangents<'a>(
    inputs: impl Iterator<Item = Option<&'a Tensor>>,
    generation: u64,
) -> Result<SmallVec<[Option<Tensor>; 2]>> {
    inputs
        .map(|t| t.map_or(Ok(None), |t| tangent_at(t, generation)))
        .collect()
}

/// An entry of the input list the generated code passes: `&Tensor`, or `Option<&Tensor>` for
/// optional inputs.
#[doc(hidden)]
pub trait InputRef {
    fn tensor(&self) -> Option<&Tensor>;
}

impl InputRef for &Tensor {
    #[inline(always)]
    fn tensor(&self) -> Option<&Tensor> {
        Some(self)
    }
}

impl InputRef for Option<&Tensor> {
    #[inline(always)]
    fn tensor(&self) -> Option<&Tensor> {
        *self
    }
}

type Edges = SmallVec<[Option<Edge>; 2]>;

/// What a built-in op called on dual inputs carries from its edges to its recording.
#[doc(hidden)]
#[derive(Debug)]
pub struct DualCall {
    /// The op's tensor inputs, one per edge.
    inputs: SmallVec<[Option<Tensor>; 2]>,
    /// Their tangents.
    tangents: SmallVec<[Option<Tensor>; 2]>,
    /// The edges made only so that the backward computes a tangent's product (an input with a
    /// tangent that does not require grad); the recorded node has none there.
    sinks: SmallVec<[bool; 2]>,
    /// Whether a node is recorded (some input requires grad and grad mode is on): otherwise
    /// the node is built for the tangents only, and made no output's grad_fn.
    attach: bool,
    generation: u64,
}

/// A built-in op's next edges when forward mode is `engaged` (see
/// [`engaged`](super::engaged)): when an input carries a tangent, the edges get one for every
/// such input (to a sink, where it does not require grad), so that the node saves what the
/// tangent needs and the op goes on to [`record_dual`] even when nothing is recorded.
///
/// # Errors
///
/// The error an earlier op left in an input's tangent slot.
#[doc(hidden)]
#[inline(always)]
pub fn dual_edges<T: InputRef>(
    edges: Option<Edges>,
    engaged: bool,
    inputs: &[T],
) -> Result<(Option<Edges>, Option<Box<DualCall>>)> {
    if !engaged {
        return Ok((edges, None));
    }
    dual_edges_engaged(edges, inputs)
}

#[inline(never)]
fn dual_edges_engaged<T: InputRef>(
    edges: Option<Edges>,
    inputs: &[T],
) -> Result<(Option<Edges>, Option<Box<DualCall>>)> {
    let Some(generation) = level::current() else {
        return Ok((edges, None));
    };
    let tangents = input_tangents(inputs.iter().map(InputRef::tensor), generation)?;
    if tangents.iter().all(Option::is_none) {
        return Ok((edges, None));
    }
    let attach = edges.is_some();
    let mut edges = edges.unwrap_or_else(|| inputs.iter().map(|_| None).collect());
    let sinks: SmallVec<[bool; 2]> = edges
        .iter_mut()
        .zip(&tangents)
        .map(|(e, t)| {
            let sink = e.is_none() && t.is_some();
            if sink {
                *e = Some(Edge::new(sink_node(), 0));
            }
            sink
        })
        .collect();
    let call = DualCall {
        inputs: inputs.iter().map(|t| t.tensor().cloned()).collect(),
        tangents,
        sinks,
        attach,
        generation,
    };
    Ok((Some(edges), Some(Box::new(call))))
}

/// Records a built-in op's node as [`record_node`](crate::graph::function::record_node) does
/// when a node is to be recorded (otherwise builds it for the tangents only), then sets the
/// tangents of `outputs`.
///
/// # Errors
///
/// For a `fallible` forward (one that returns `Result`): a saved-tensor pack hook's failure, as
/// [`try_record_node`](crate::graph::function::try_record_node), or the failure of the op's
/// backward run for the tangents (an op whose backward cannot be differentiated). Otherwise
/// neither: the tangent failure is left in the outputs' tangent slots, reported when read.
#[doc(hidden)]
pub fn record_dual<B: Backward>(
    edges: Edges,
    outputs: &[&Tensor],
    make: impl FnOnce(&SaveContext<'_>) -> B,
    dual: Box<DualCall>,
    fallible: bool,
) -> Result<NodeRef> {
    let real: Edges = edges
        .iter()
        .zip(&dual.sinks)
        .map(|(e, sink)| if *sink { None } else { e.clone() })
        .collect();
    let (node, failure) = build_node(real, outputs, make);
    if let (Some(e), true) = (failure, fallible) {
        return Err(e);
    }
    // Only the node's construction and its backward depend on `B`: the rest is one function for
    // every op, not one copy per op (these were a tenth of the crate's code before optimisation,
    // by `cargo llvm-lines`).
    let erased = NodeRef::new(node.clone());
    let backward = |edges: Edges, grads: GradVec| node.backward_with_edges(edges, grads);
    finish_dual(erased, &backward, edges, outputs, &dual, fallible)
}

/// [`record_dual`] after the node is built: the tangents its rule does not give, through its
/// `backward` (before the node is attached), then the node attached when the op records, and
/// the outputs' tangents set (the views' first, the computed ones for the rest).
fn finish_dual(
    node: NodeRef,
    backward: &dyn Fn(Edges, GradVec) -> Result<GradVec>,
    edges: Edges,
    outputs: &[&Tensor],
    dual: &DualCall,
    fallible: bool,
) -> Result<NodeRef> {
    let mut tangents = view_tangents(outputs, dual);
    let computed = if needs_products(outputs, &tangents) {
        through_backward(backward, node.name(), edges, outputs, dual).map(Some)
    } else {
        Ok(None)
    };
    let node = if dual.attach {
        attach_ref(node, outputs)
    } else {
        node
    };
    match computed {
        Ok(computed) => {
            for (slot, c) in tangents.iter_mut().zip(computed.into_iter().flatten()) {
                if slot.is_none() {
                    *slot = c;
                }
            }
        }
        Err(e) => return fail(e, fallible, outputs, dual.generation).map(|()| node),
    }
    match set_output_tangents(outputs, tangents, dual) {
        Ok(()) => {
            if dual.attach {
                share_with_saved(outputs, dual.generation);
            }
            Ok(node)
        }
        Err(e) => fail(e, fallible, outputs, dual.generation).map(|()| node),
    }
}

/// Gives the outputs' tangents to the slots of their grad_fn that saved them (a saved output
/// keeps a detached alias of its data, which the tangent set after the node was recorded does
/// not reach), as PyTorch's `SavedVariable` keeps an output's forward grad: a backward pass run
/// on dual tensors (forward over reverse, a forward-mode Hessian) then sees the tangent of a
/// saved result (`exp`'s, `tanh`'s, `softmax`'s).
pub(super) fn share_with_saved(outputs: &[&Tensor], generation: u64) {
    for out in outputs {
        // The grad_fn as set, read without regenerating a view's.
        let (node, nr) = {
            let meta = out.0.autograd.lock();
            (meta.grad_fn.clone(), meta.output_nr)
        };
        let Some(node) = node else { continue };
        let Ok(Some(tangent)) = tangent_at(out, generation) else {
            continue;
        };
        node.visit_saved_tensors(&mut |_, saved| {
            if let Some(data) = saved.output_data(nr) {
                set_tangent(&data, tangent.clone(), generation);
            }
        });
    }
}

/// A tangent computation's failure: returned for a fallible forward, left in the outputs'
/// tangent slots otherwise.
fn fail(e: Error, fallible: bool, outputs: &[&Tensor], generation: u64) -> Result<()> {
    if fallible {
        return Err(e);
    }
    let failure = Failure::Op(e.to_string().into());
    for out in outputs {
        set(out, Tangent::Failed(failure.clone()), generation);
    }
    Ok(())
}

/// Whether some floating output still needs its tangent computed.
fn needs_products(outputs: &[&Tensor], tangents: &[Option<Tensor>]) -> bool {
    outputs
        .iter()
        .zip(tangents)
        .any(|(o, t)| t.is_none() && o.dtype().is_floating_point())
}

/// For each output that is a view of an input whose tangent has that input's layout: the same
/// view of the tangent (PyTorch's view tangents, so that an in-place op on either side is seen
/// by the other).
fn view_tangents(outputs: &[&Tensor], dual: &DualCall) -> Vec<Option<Tensor>> {
    outputs
        .iter()
        .map(|out| {
            if !out.is_view() || !out.dtype().is_floating_point() {
                return None;
            }
            dual.inputs
                .iter()
                .zip(&dual.tangents)
                .find_map(|(x, t)| match (x, t) {
                    (Some(x), Some(t)) if !x.is_same(out) => view_of(out, x, t),
                    _ => None,
                })
        })
        .collect()
}

/// `out`'s geometry applied to `t`, the tangent of `x`, when `out` views `x`'s storage within
/// `x`'s elements and `t` has `x`'s layout (so `t`'s storage holds every element the view
/// reaches).
fn view_of(out: &Tensor, x: &Tensor, t: &Tensor) -> Option<Tensor> {
    if !out.shares_storage(x) || t.layout() != x.layout() || t.dtype() != out.dtype() {
        return None;
    }
    let (lo, hi) = span(out.layout())?;
    let (xlo, xhi) = span(x.layout())?;
    (lo >= xlo && hi <= xhi).then(|| t.alias_with_layout(out.layout().clone()))
}

/// The first and last storage positions a layout reaches; `None` for no element.
fn span(layout: &Layout) -> Option<(usize, usize)> {
    if layout.shape.contains(&0) {
        return None;
    }
    let reach: usize = layout
        .shape
        .iter()
        .zip(layout.strides.iter())
        .map(|(n, s)| (n - 1) * s)
        .sum();
    Some((layout.offset, layout.offset + reach))
}

/// The tangents of `outputs` through the op's backward: with zero gradients `g` that require
/// grad, `v = backward(g)` is linear in `g`, and the gradient of `Σ ⟨v_i, t_i⟩` w.r.t. `g` is
/// `J·t`. Runs with tangent propagation suspended (the backward's own ops must not propagate
/// the saved inputs' tangents) and grad mode on; recorded further (`create_graph`) when a
/// tangent or an input requires grad, so that the tangent can be differentiated backward.
fn through_backward(
    backward: &dyn Fn(Edges, GradVec) -> Result<GradVec>,
    name: &str,
    edges: Edges,
    outputs: &[&Tensor],
    dual: &DualCall,
) -> Result<Vec<Option<Tensor>>> {
    let _suspended = super::suspend();
    let _grad = crate::enable_grad();
    let mut seeds = Vec::with_capacity(outputs.len());
    let mut grads = GradVec::with_capacity(outputs.len());
    for out in outputs {
        let zeros = out.zeros_like()?;
        if out.dtype().is_floating_point() {
            let seed = zeros.requires_grad_(true)?;
            seeds.push(Some(seed.clone()));
            grads.push(Some(seed));
        } else {
            seeds.push(None);
            grads.push(Some(zeros));
        }
    }
    let vjps = backward(edges.clone(), grads)?;
    let (mut products, mut directions) = (Vec::new(), Vec::new());
    let (mut recorded, mut unrecorded) = (Vec::new(), Vec::new());
    for (i, ((v, t), x)) in vjps
        .iter()
        .zip(&dual.tangents)
        .zip(&dual.inputs)
        .enumerate()
    {
        let (Some(v), Some(t), Some(x)) = (v, t, x) else {
            continue;
        };
        if !v.requires_grad() {
            unrecorded.push(i);
            continue;
        }
        recorded.push(i);
        // The engine reduces a gradient to its input's shape when it validates a node's
        // outputs (`validate_outputs`); here the node's result is used directly.
        let v = if v.shape() == x.shape() {
            v.clone()
        } else {
            v.sum_to_shape(x.shape())?
        };
        directions.push(Some(t.to_dtype(v.dtype())?));
        products.push(v);
    }
    let every_seed: Vec<bool> = seeds.iter().map(Option::is_some).collect();
    // A gradient computed without recording is a constant (zero) or the backward's escape.
    if !unrecorded.is_empty()
        && backward_depends(backward, &edges, outputs, &every_seed, &unrecorded)?
    {
        return Err(not_implemented(name));
    }
    let live: Vec<Tensor> = seeds.iter().flatten().cloned().collect();
    let mut tangents: Vec<Option<Tensor>> = vec![None; outputs.len()];
    if !products.is_empty() && !live.is_empty() {
        let create_graph = dual
            .tangents
            .iter()
            .chain(&dual.inputs)
            .flatten()
            .any(Tensor::requires_grad);
        let options = GradOptions::new()
            .grad_outputs(directions)
            .allow_unused(true)
            .create_graph(create_graph);
        let mut jvps = crate::grad(&products, &live, options)
            .map_err(|e| match e {
                // The backward is `once_differentiable` and its error node was reached.
                Error::OnceDifferentiable => not_implemented(name),
                e => e,
            })?
            .into_iter();
        for (slot, seed) in tangents.iter_mut().zip(&seeds) {
            if seed.is_some() {
                *slot = jvps.next().flatten();
            }
        }
        // A seed no product reaches: the recorded gradients do not depend on it, and the
        // backward's results must not either (a `once_differentiable` backward's results
        // hang from an error node without a path to the seeds).
        let unreached: Vec<bool> = (seeds.iter().zip(&tangents))
            .map(|(seed, t)| seed.is_some() && t.is_none())
            .collect();
        if unreached.contains(&true)
            && backward_depends(backward, &edges, outputs, &unreached, &recorded)?
        {
            return Err(not_implemented(name));
        }
    }
    // An output no product reaches has a zero tangent (`sign`, a comparison's mask).
    for (slot, out) in tangents.iter_mut().zip(outputs) {
        if slot.is_none() && out.dtype().is_floating_point() {
            let _no_grad = crate::no_grad();
            *slot = Some(out.zeros_like()?);
        }
    }
    // Where the backward hands its gradient on unchanged (`clone()`'s), the engine returns the
    // direction itself: the output's tangent would be the input's, and an in-place op on the
    // output (or on a view of it) would change the input's tangent too. A copy, as PyTorch's
    // `clone` formula makes one.
    for slot in tangents.iter_mut() {
        if let Some(t) = slot
            && dual.tangents.iter().flatten().any(|d| t.shares_storage(d))
        {
            *slot = Some(t.copy()?);
        }
    }
    Ok(tangents)
}

/// Whether the backward's results for the inputs `inputs` depend on the incoming gradients of
/// the outputs `seeds` marks: run again, unrecorded, with ones for those gradients and zeros
/// for the others (a linear backward gives zeros exactly where it does not depend on them).
/// Asked only where the recorded run showed no dependence: a result computed without
/// recording, or a seed no result reaches. A dependence there is one the recorded run lost
/// (a kernel, `no_grad`, `once_differentiable`): the backward cannot be differentiated, and
/// the double-vjp trick has no tangent to give; none means a constant, as `sign`'s zero.
fn backward_depends(
    backward: &dyn Fn(Edges, GradVec) -> Result<GradVec>,
    edges: &Edges,
    outputs: &[&Tensor],
    seeds: &[bool],
    inputs: &[usize],
) -> Result<bool> {
    let _no_grad = crate::no_grad();
    let grads = (outputs.iter().zip(seeds))
        .map(|(out, &seed)| {
            if seed && out.dtype().is_floating_point() {
                out.ones_like().map(Some)
            } else {
                out.zeros_like().map(Some)
            }
        })
        .collect::<Result<GradVec>>()?;
    let vjps = backward(edges.clone(), grads)?;
    for &i in inputs {
        if let Some(Some(v)) = vjps.get(i) {
            let magnitude = v.abs()?.sum()?.to_dtype(crate::DType::F64)?.item::<f64>()?;
            // NaN counts as not zero.
            if magnitude != 0.0 {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// PyTorch's error for an op without a forward derivative, named after its node
/// (`MaxBackwardBackward0`: `max_backward`).
fn not_implemented(node: &str) -> Error {
    let stem = node.trim_end_matches(|c: char| c.is_ascii_digit());
    let stem = stem.strip_suffix("Backward").unwrap_or(stem);
    let mut op = String::with_capacity(stem.len() + 4);
    for (i, c) in stem.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                op.push('_');
            }
            op.push(c.to_ascii_lowercase());
        } else {
            op.push(c);
        }
    }
    Error::ForwardAdNotImplemented { op }
}

/// Gives each output its tangent. An output that is one of the inputs (an in-place op) writes
/// the new tangent into the input's tangent, so that views of that tangent see it.
fn set_output_tangents(
    outputs: &[&Tensor],
    tangents: Vec<Option<Tensor>>,
    dual: &DualCall,
) -> Result<()> {
    for (out, tangent) in outputs.iter().zip(tangents) {
        let Some(tangent) = tangent else {
            continue;
        };
        let old = dual
            .inputs
            .iter()
            .position(|x| x.as_ref().is_some_and(|x| x.is_same(out)))
            .and_then(|i| dual.tangents[i].as_ref());
        match old {
            Some(old) if old.shape() == tangent.shape() && old.dtype() == tangent.dtype() => {
                let _suspended = super::suspend();
                old.copy_(&tangent)?;
            }
            Some(_) => set_tangent(out, tangent, dual.generation),
            None if dual.inputs.iter().flatten().any(|x| x.is_same(out)) => {
                let tangent = through_view_base(out, tangent, dual.generation)?;
                set_tangent(out, tangent, dual.generation);
            }
            None => set_tangent(out, tangent, dual.generation),
        }
    }
    Ok(())
}

/// The tangent an in-place op gives `out`, which had none: when `out` is a view of a base
/// without a tangent either, the base gets one (zeros) and `out` the same view of it, holding
/// `tangent`'s values, so that the base sees the change as its values do (PyTorch's
/// `set_fw_grad` for an in-place op on a view); otherwise `tangent` itself.
fn through_view_base(out: &Tensor, tangent: Tensor, generation: u64) -> Result<Tensor> {
    let Some(base) = out.view_base() else {
        return Ok(tangent);
    };
    if !base.dtype().is_floating_point()
        || own_tangent(base, generation).is_some()
        || tangent.dtype() != out.dtype()
    {
        return Ok(tangent);
    }
    let _suspended = super::suspend();
    let zeros = {
        let _no_grad = crate::no_grad();
        base.zeros_like()?
    };
    if zeros.layout() != base.layout() {
        return Ok(tangent);
    }
    let Some(view) = view_of(out, base, &zeros) else {
        return Ok(tangent);
    };
    view.copy_(&tangent)?;
    set_tangent(base, zeros, generation);
    Ok(view)
}

/// The tangent an in-place op built-in with a `#[jvp]` leaves on `out`, the tensor it modified,
/// from `new`, the rule's: written into `old`, `out`'s tangent before the op, where the two
/// have one shape and dtype (so that the views of that tangent see it, as PyTorch's in-place
/// formulas `self_t.op_(..)`); without an old tangent, through `out`'s base when it is a view
/// (see `through_view_base`); `new` otherwise. As `set_output_tangents` does for the others.
///
/// # Errors
///
/// The copy's (a tangent whose elements overlap).
pub(crate) fn in_place_tangent(out: &Tensor, old: Option<&Tensor>, new: Tensor) -> Result<Tensor> {
    match old {
        Some(old) if old.is_same(&new) => Ok(new),
        Some(old) if old.shape() == new.shape() && old.dtype() == new.dtype() => {
            old.copy_(&new)?;
            Ok(old.clone())
        }
        Some(_) => Ok(new),
        None => match level::current() {
            Some(generation) => through_view_base(out, new, generation),
            None => Ok(new),
        },
    }
}

/// The node sink edges lead to: never run (its edges exist only while an op computes its
/// tangents, on a node no pass reaches through them).
struct TangentSink {
    meta: NodeMeta,
}

impl Node for TangentSink {
    fn name(&self) -> &str {
        "TangentSink"
    }

    fn meta(&self) -> &NodeMeta {
        &self.meta
    }

    fn apply(&self, _grads: GradVec) -> Result<GradVec> {
        Ok(GradVec::new())
    }
}

fn sink_node() -> NodeRef {
    static SINK: OnceLock<NodeRef> = OnceLock::new();
    SINK.get_or_init(|| {
        NodeRef::new(Arc::new(TangentSink {
            meta: NodeMeta::new(SmallVec::new(), SmallVec::new()),
        }))
    })
    .clone()
}
