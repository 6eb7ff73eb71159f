//! The non-reentrant variant (PyTorch's `_checkpoint_without_reentrant_generator`): the region is
//! recorded as usual, under saved-tensor hooks whose pack keeps a *holder* (an empty box) instead
//! of the tensor. The first unpack of a holder in a backward pass recomputes the region (with
//! grad mode on and the forward's random draws) under hooks that put each recomputed tensor into
//! the holder saved at the same position in the forward; each unpack then takes its tensor out.
//!
//! Lifetimes (PyTorch's rules 4 and 6): a holder lives as long as the saved tensor that packed it
//! (until its node ran without `retain_graph`); a recomputed tensor lives in its holder until it
//! is unpacked, once per pass, so it is freed as soon as the node that needed it used it. The
//! frame (the region's inputs, function and draws) is held by the hooks of the region's saved
//! tensors and holds the holders weakly: no cycle.
//!
//! Not done: PyTorch's early stop (the recomputation runs the whole region, not just up to the
//! last tensor needed) and `debug=True`'s operator logs.

use std::collections::{HashMap, HashSet};

use super::Function;
use super::rng::{Recording, Replay, RngState};
use crate::graph::SavedTensor;
use crate::sync::atomic::{AtomicBool, AtomicUsize};
use crate::sync::statics::AtomicU64;
use crate::sync::{Arc, Mutex, Ordering, Weak};
use crate::{DType, Device, Error, Result, Tensor, enable_grad, is_grad_enabled};

/// What the determinism check compares (PyTorch's `_default_meta_extractor`).
#[derive(Clone, Debug, PartialEq)]
struct TensorMeta {
    shape: Vec<usize>,
    dtype: DType,
    device: Device,
}

impl TensorMeta {
    fn of(t: &Tensor) -> TensorMeta {
        TensorMeta {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            device: t.device(),
        }
    }
}

impl std::fmt::Display for TensorMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{'shape': {:?}, 'dtype': {}, 'device': {}}}",
            self.shape, self.dtype, self.device
        )
    }
}

/// What a saved tensor of the region keeps: per pass (graph task id), the recomputed tensor until
/// it is unpacked (`None` afterwards).
#[derive(Default)]
struct Holder {
    recomputed: Mutex<HashMap<u64, Option<Tensor>>>,
}

/// One checkpointed region (PyTorch's `_CheckpointFrame`).
struct Frame {
    function: Function,
    /// The region's inputs, saved as a node saves its inputs (packed by the hooks around the
    /// region, if any: an enclosing checkpoint recomputes them).
    inputs: Vec<SavedTensor>,
    /// The forward's random draws (set once the forward returned), when `preserve_rng_state`.
    rng: Mutex<Option<RngState>>,
    /// The forward's autocast state, made current again for the recomputation, as PyTorch's.
    autocast: crate::amp::autocast::Captured,
    /// The holders packed in the forward, in order, held weakly: a holder goes with its node.
    holders: Mutex<Vec<Weak<Holder>>>,
    /// What each packed tensor looked like, for the determinism check (empty when it is off).
    metadata: Mutex<Vec<TensorMeta>>,
    determinism_check: bool,
    /// The passes (graph task ids) that recomputed the region already.
    recomputed_in: Mutex<HashSet<u64>>,
    /// Set when the forward returned: before that, a backward inside the region may recompute
    /// fewer tensors than exist (PyTorch's `forward_completed`).
    forward_completed: AtomicBool,
}

pub(super) fn checkpoint(
    function: Function,
    inputs: &[Tensor],
    preserve_rng_state: bool,
    determinism_check: bool,
) -> Result<Vec<Tensor>> {
    if !is_grad_enabled() {
        // Nothing is recorded: nothing to recompute (PyTorch returns before installing hooks).
        return function(inputs);
    }
    let saved_inputs = inputs
        .iter()
        .map(SavedTensor::input)
        .collect::<Result<Vec<_>>>()?;
    let frame = Arc::new(Frame {
        function,
        inputs: saved_inputs,
        rng: Mutex::new(None),
        autocast: crate::amp::autocast::capture(),
        holders: Mutex::new(Vec::new()),
        metadata: Mutex::new(Vec::new()),
        determinism_check,
        recomputed_in: Mutex::new(HashSet::new()),
        forward_completed: AtomicBool::new(false),
    });
    let outputs = {
        let (pack_frame, unpack_frame) = (frame.clone(), frame.clone());
        let _hooks = crate::try_saved_tensors_hooks(
            move |t: &Tensor| Ok(pack_frame.pack(t)),
            move |holder: &Arc<Holder>| unpack_frame.unpack(holder),
        );
        let recording = preserve_rng_state.then(Recording::start);
        let outputs = (frame.function)(inputs)?;
        *frame.rng.lock() = recording.map(Recording::finish);
        outputs
    };
    // Relaxed: read by unpacks, which run after the forward returned on this thread or reach
    // another thread through the engine's queues (a mutex orders this store before them).
    frame.forward_completed.store(true, Ordering::Relaxed);
    Ok(outputs)
}

/// Ids for unpacks outside any backward pass: each recomputes (PyTorch's `uuid4()` there), so
/// they count down from the top, away from graph task ids.
fn unpack_outside_backward_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(u64::MAX);
    // Relaxed: only uniqueness matters.
    NEXT.fetch_sub(1, Ordering::Relaxed)
}

impl Frame {
    /// The forward's pack hook: a new holder, remembered weakly in order.
    fn pack(&self, t: &Tensor) -> Arc<Holder> {
        let holder = Arc::new(Holder::default());
        self.holders.lock().push(Arc::downgrade(&holder));
        if self.determinism_check {
            self.metadata.lock().push(TensorMeta::of(t));
        }
        holder
    }

    /// The forward's unpack hook: recomputes the region once per pass, then takes the holder's
    /// tensor out.
    fn unpack(self: &Arc<Self>, holder: &Arc<Holder>) -> Result<Tensor> {
        let gid = crate::current_graph_task_id().unwrap_or_else(unpack_outside_backward_id);
        let done = self.recomputed_in.lock().contains(&gid);
        if !done {
            self.recompute(gid)?;
            self.recomputed_in.lock().insert(gid);
            self.check_recomputed(gid)?;
        }
        let mut recomputed = holder.recomputed.lock();
        match recomputed.get_mut(&gid) {
            Some(slot) => slot.take().ok_or_else(|| {
                Error::msg(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was \
                     already unpacked once. If you are calling ctx.saved_tensors in backward, make \
                     sure to do so only once. Otherwise please open an issue with details on your \
                     use case.",
                )
            }),
            None => Err(Error::msg(
                "Something went unexpectedly wrong in activation checkpoint. Please report this \
                 bug by filing an issue to PyTorch.",
            )),
        }
    }

    /// Runs the region again, under hooks that fill the holders for pass `gid` (PyTorch's
    /// `_recomputation_hook`). The unpack hook that calls this runs with the hooks stack hidden,
    /// so checkpoints around this one play no part (rule 3); checkpoints inside it are recorded
    /// again, as in the forward.
    fn recompute(self: &Arc<Self>, gid: u64) -> Result<()> {
        let inputs = self
            .inputs
            .iter()
            .map(SavedTensor::get)
            .collect::<Result<Vec<_>>>()?;
        let count = Arc::new(AtomicUsize::new(0));
        let frame = Arc::downgrade(self);
        let counted = count.clone();
        let _hooks = crate::try_saved_tensors_hooks(
            move |t: &Tensor| {
                // Relaxed: the hooks run on this thread, one at a time.
                let index = counted.fetch_add(1, Ordering::Relaxed);
                // Always a new handle (PyTorch detaches what requires grad): a saved output is
                // packed before its node is attached to it, so keeping the output's own handle
                // would give it that node as grad_fn: node → saved tensor → node, a cycle.
                let t = t.detach();
                let Some(frame) = frame.upgrade() else {
                    return Ok(t);
                };
                let holder = frame.holders.lock().get(index).cloned();
                match holder {
                    // Freed since the forward (its node ran already): nothing to fill.
                    Some(weak) => {
                        if let Some(holder) = weak.upgrade() {
                            holder.recomputed.lock().insert(gid, Some(t.clone()));
                        }
                    }
                    None if frame.forward_completed.load(Ordering::Relaxed) => {
                        return Err(Error::msg(
                            "torch.utils.checkpoint: trying to save more tensors during \
                             recomputation than during the original forward pass.",
                        ));
                    }
                    // A backward inside the region, before its forward returned.
                    None => {}
                }
                // The recomputed graph is differentiable too (rule 6).
                Ok(t)
            },
            |t: &Tensor| Ok(t.clone()),
        );
        let rng = self.rng.lock().clone();
        let _replay = rng.as_ref().map(Replay::start);
        let _autocast = self.autocast.enter();
        let _g = enable_grad();
        (self.function)(&inputs)?;
        let saved = count.load(Ordering::Relaxed);
        let expected = self.holders.lock().len();
        if saved != expected && self.forward_completed.load(Ordering::Relaxed) {
            return Err(Error::msg(format!(
                "torch.utils.checkpoint: A different number of tensors was saved during the \
                 original forward and recomputation.\nNumber of tensors saved during forward: \
                 {expected}\nNumber of tensors saved during recomputation: {saved}."
            )));
        }
        Ok(())
    }

    /// PyTorch's `check_recomputed_tensors_match`: the recomputed tensors look like the saved
    /// ones.
    fn check_recomputed(&self, gid: u64) -> Result<()> {
        if !self.determinism_check {
            return Ok(());
        }
        let holders = self.holders.lock().clone();
        let metadata = self.metadata.lock().clone();
        let mut mismatched = String::new();
        for (index, (weak, saved)) in holders.iter().zip(&metadata).enumerate() {
            let Some(holder) = weak.upgrade() else {
                continue;
            };
            let recomputed = holder.recomputed.lock();
            let Some(Some(t)) = recomputed.get(&gid) else {
                continue;
            };
            let now = TensorMeta::of(t);
            if now != *saved {
                mismatched.push_str(&format!(
                    "tensor at position {index}:\nsaved metadata: {saved}\nrecomputed metadata: \
                     {now}\n"
                ));
            }
        }
        if mismatched.is_empty() {
            return Ok(());
        }
        Err(Error::msg(format!(
            "torch.utils.checkpoint: Recomputed values for the following tensors have different \
             metadata than during the forward pass.\n{mismatched}."
        )))
    }
}
