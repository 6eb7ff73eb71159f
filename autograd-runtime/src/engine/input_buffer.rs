//! `InputBuffer`: sums the gradients a node receives from its consumers, one slot per node input,
//! before the node runs (B05).

use smallvec::SmallVec;

use crate::graph::GradVec;
use crate::{Result, Tensor};

/// Per-slot gradient sums for one not-yet-ready node.
#[derive(Debug, Default)]
pub(crate) struct InputBuffer {
    slots: GradVec,
}

impl InputBuffer {
    #[inline]
    pub(crate) fn new(num_inputs: usize) -> InputBuffer {
        // Up to two slots (nearly every node) written straight into the inline buffer.
        let slots = if num_inputs <= 2 {
            GradVec::from_buf_and_len([None, None], num_inputs)
        } else {
            GradVec::from_elem(None, num_inputs)
        };
        InputBuffer { slots }
    }

    /// A buffer of `num_inputs` slots holding `grad` in slot `pos`: [`InputBuffer::new`] then
    /// [`InputBuffer::add`], for the first gradient (which `add` moves in as it is). Always
    /// inlined: it is a few stores, and a call per node run when LLVM keeps it out of line.
    #[inline(always)]
    pub(crate) fn with_first(num_inputs: usize, pos: usize, grad: Option<Tensor>) -> InputBuffer {
        if pos < num_inputs && num_inputs <= 2 {
            // Written straight into the inline buffer, as `new` does, with the gradient in it.
            let mut slots = [None, None];
            slots[pos] = grad;
            return InputBuffer {
                slots: GradVec::from_buf_and_len(slots, num_inputs),
            };
        }
        let mut buffer = InputBuffer::new(num_inputs);
        buffer.slots[pos] = grad;
        buffer
    }

    /// Adds `grad` into slot `pos`. The first gradient is moved in; later ones are summed, in place
    /// only when this buffer holds the only reference to the accumulated tensor and grad mode is
    /// off (a `create_graph` pass must stay differentiable, and a caller's tensor is never
    /// mutated). Undefined gradients are ignored.
    #[inline]
    pub(crate) fn add(&mut self, pos: usize, grad: Option<Tensor>, grad_mode: bool) -> Result<()> {
        let Some(grad) = grad else { return Ok(()) };
        let slot = &mut self.slots[pos];
        let Some(old) = slot.take() else {
            // The first gradient for this input (on a chain, the only one): moved in.
            *slot = Some(grad);
            return Ok(());
        };
        *slot = Some(sum(old, grad, grad_mode)?);
        Ok(())
    }

    pub(crate) fn into_grads(self) -> GradVec {
        self.slots
    }
}

impl From<SmallVec<[Option<Tensor>; 2]>> for InputBuffer {
    fn from(slots: GradVec) -> Self {
        InputBuffer { slots }
    }
}

/// `old + grad`, written into whichever of the two nothing else references (out of line: the
/// common case, a first gradient, never gets here).
#[inline(never)]
fn sum(old: Tensor, grad: Tensor, grad_mode: bool) -> Result<Tensor> {
    if !grad_mode && old.is_uniquely_owned() {
        old.accumulate_in_place(&grad)?;
        Ok(old)
    } else if !grad_mode && grad.is_uniquely_owned() {
        grad.accumulate_in_place(&old)?;
        Ok(grad)
    } else {
        old.add(&grad)
    }
}
