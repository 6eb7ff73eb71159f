//! The reentrant variant (PyTorch's `CheckpointFunction`): the region runs under `no_grad`; one
//! node saves the inputs and, in the backward, recomputes the region with grad mode on and runs a
//! reentrant `backward()` through it.

use smallvec::SmallVec;

use super::Function;
use super::rng::{Recording, Replay, RngState};
use crate::graph::function::{next_edges, record_node};
use crate::graph::{Backward, GradVec, SavedTensor};
use crate::{BackwardOptions, Error, NodeMeta, Result, Tensor, enable_grad, no_grad};

/// PyTorch's error of `CheckpointFunction.backward` when `_is_checkpoint_valid()` is false.
const NOT_VALID: &str = "When use_reentrant=True, torch.utils.checkpoint is incompatible with \
     .grad() or passing an `inputs` parameter to .backward(). To resolve this error, you can \
     either set use_reentrant=False, or call .backward() without passing the `inputs` argument.";

/// The node of one checkpointed region (PyTorch's `CheckpointFunctionBackward`).
struct CheckpointFunctionBackward {
    function: Function,
    inputs: Vec<SavedTensor>,
    /// The forward's random draws, when `preserve_rng_state`.
    rng: Option<RngState>,
    /// The forward's autocast state, made current again for the recomputation, as PyTorch's.
    autocast: crate::amp::autocast::Captured,
}

pub(super) fn checkpoint(
    function: Function,
    inputs: &[Tensor],
    preserve_rng_state: bool,
) -> Result<Vec<Tensor>> {
    // PyTorch's `check_backward_validity`.
    if !inputs.iter().any(Tensor::requires_grad) {
        crate::warning::warn("None of the inputs have requires_grad=True. Gradients will be None");
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let edges = next_edges(&refs);
    let (outputs, rng) = {
        let _g = no_grad();
        let recording = preserve_rng_state.then(Recording::start);
        let outputs = function(inputs)?;
        (outputs, recording.map(Recording::finish))
    };
    let Some(edges) = edges else {
        return Ok(outputs);
    };
    // An input or a leaf returned as it is gets the node on an alias, not on itself.
    let outputs: Vec<Tensor> = outputs
        .into_iter()
        .map(|t| if t.requires_grad() { t.detach() } else { t })
        .collect();
    let out_refs: Vec<&Tensor> = outputs.iter().collect();
    record_node(edges, &out_refs, |save| CheckpointFunctionBackward {
        function,
        inputs: inputs.iter().map(|t| save.input(t)).collect(),
        rng,
        autocast: crate::amp::autocast::capture(),
    });
    Ok(outputs)
}

impl Backward for CheckpointFunctionBackward {
    const NAME: &'static str = "CheckpointFunctionBackward";
    /// A custom function: it runs even when no gradient is defined (B34).
    const SKIP_IF_NO_GRAD: bool = false;

    fn backward(&self, _meta: &NodeMeta, grads: GradVec) -> Result<GradVec> {
        if !crate::is_checkpoint_valid() {
            return Err(Error::msg(NOT_VALID));
        }
        // Fresh leaves over the saved inputs (PyTorch's `detach_variable`): the recomputed graph
        // ends at them, so the nested pass neither walks nor accumulates into the graph before
        // the region.
        let detached = self
            .inputs
            .iter()
            .map(|saved| {
                let x = saved.get()?;
                let leaf = x.detach();
                if x.requires_grad() {
                    leaf.requires_grad_(true)
                } else {
                    Ok(leaf)
                }
            })
            .collect::<Result<Vec<Tensor>>>()?;
        let outputs = {
            let _replay = self.rng.as_ref().map(Replay::start);
            let _autocast = self.autocast.enter();
            let _g = enable_grad();
            (self.function)(&detached)?
        };
        let (roots, root_grads): (Vec<Tensor>, Vec<Option<Tensor>>) = outputs
            .into_iter()
            .zip(grads)
            .filter(|(out, _)| out.requires_grad())
            .unzip();
        if roots.is_empty() {
            return Err(Error::msg(
                "none of output has requires_grad=True, this checkpoint() is not necessary",
            ));
        }
        // Reentrant: runs to completion before this node returns; the parameters inside the
        // region accumulate their gradients.
        crate::backward(&roots, &root_grads, BackwardOptions::new())?;
        Ok(detached.iter().map(Tensor::grad).collect::<SmallVec<_>>())
    }

    fn release(&self) {
        for saved in &self.inputs {
            saved.release();
        }
    }

    fn visit_saved(&self, visit: &mut dyn FnMut(&str, &SavedTensor)) {
        for saved in &self.inputs {
            visit("saved_tensors", saved);
        }
    }
}
