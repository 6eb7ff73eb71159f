//! `SavedTensor`: a tensor a node keeps for its backward, with the version it had when saved
//! (B13, B14). Saved outputs keep their data but only a weak link to their grad_fn (the node that
//! saves them), so saving a result never creates a reference cycle. Under saved-tensor hooks
//! (B38) the slot keeps what the pack hook returned instead.

use super::saved_hooks::{self, HookPair, Packed};
use super::InputMetadata;
use crate::sync::{Arc, Mutex, Weak};
use crate::{is_grad_enabled, Edge, Error, Node, NodeRef, Result, Tensor};

enum State {
    /// Nothing was saved (an optional input that was absent).
    Empty,
    /// A forward input, kept whole (its grad_fn is an earlier node: no cycle).
    Input { tensor: Tensor, version: u64 },
    /// An output of the saving node: data only, plus a weak link back to the node.
    Output {
        data: Tensor,
        version: u64,
        grad_fn: Weak<dyn Node>,
        output_nr: usize,
    },
    /// Packed by a saved-tensor hook; `output` is set for a saved output of the saving node,
    /// `edge` for a saved input that requires grad (its grad_fn, or a leaf's AccumulateGrad):
    /// the unpacked tensor takes that history, as PyTorch's unpacked `SavedVariable` does.
    Hooked {
        packed: Arc<Packed>,
        hooks: Arc<HookPair>,
        output: Option<(Weak<dyn Node>, usize)>,
        edge: Option<Edge>,
    },
    /// The pack hook modified its input in place; reported when the tensor is used.
    PackModifiedInput,
    /// The pack hook failed: its error, returned by the first use of the tensor (later uses get
    /// its message). Boxed: rare, and an `Error` would make every saved tensor larger.
    PackFailed(Box<PackFailure>),
    /// Freed after the node ran without `retain_graph`.
    Released,
}

/// The error of a failed pack hook, kept until the saved tensor is used.
struct PackFailure {
    /// Taken by the first use.
    error: Option<Error>,
    /// Its message, for later uses.
    message: String,
}

/// Packs `t` with the active hooks, if any.
fn pack(t: &Tensor, output: Option<(&Weak<dyn Node>, usize)>) -> Option<State> {
    let hooks = saved_hooks::current()?;
    let version = t.version();
    let packed = match hooks.pack(t) {
        Ok(packed) => packed,
        Err(error) => {
            return Some(State::PackFailed(Box::new(PackFailure {
                message: error.to_string(),
                error: Some(error),
            })))
        }
    };
    if t.version() != version {
        return Some(State::PackModifiedInput);
    }
    let edge = if output.is_none() {
        t.gradient_edge()
    } else {
        None
    };
    Some(State::Hooked {
        packed: Arc::new(packed),
        hooks,
        output: output.map(|(w, nr)| (w.clone(), nr)),
        edge,
    })
}

/// A tensor saved for backward, checked against in-place modification when unpacked.
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
/// let b = a.add_scalar(1.0)?;   // b is a non-leaf
/// let c = b.mul(&b)?.sum()?;    // MulBackward0 saves b
/// b.add_(&Tensor::from_vec(vec![1.0f32; 3], &[3])?)?; // modifies b in place
/// let err = c.backward().unwrap_err();
/// assert!(err.to_string().starts_with(
///     "one of the variables needed for gradient computation has been modified by an inplace operation: \
///      [f32 [3]], which is output 0 of Add, is at version 1; expected version 0 instead."));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct SavedTensor {
    state: Mutex<State>,
}

impl SavedTensor {
    /// Saves a forward input of the node being built.
    pub fn input(t: &Tensor) -> SavedTensor {
        let state = pack(t, None).unwrap_or_else(|| State::Input {
            tensor: t.clone(),
            version: t.version(),
        });
        SavedTensor {
            state: Mutex::new(state),
        }
    }

    /// Saves a forward input of an op that modifies another input in place, at `version`, the
    /// version it had before the op ran (PyTorch saves inputs before calling the kernel).
    pub fn input_at(t: &Tensor, version: u64) -> SavedTensor {
        let state = pack(t, None).unwrap_or_else(|| State::Input {
            tensor: t.clone(),
            version,
        });
        SavedTensor {
            state: Mutex::new(state),
        }
    }

    /// Saves output `output_nr` of the node being built; `node` is that node (from
    /// `Arc::new_cyclic`), kept weakly.
    pub fn output(t: &Tensor, node: Weak<dyn Node>, output_nr: usize) -> SavedTensor {
        let state = pack(t, Some((&node, output_nr))).unwrap_or_else(|| State::Output {
            data: t.detach(),
            version: t.version(),
            grad_fn: node,
            output_nr,
        });
        SavedTensor {
            state: Mutex::new(state),
        }
    }

    /// A slot that holds nothing (unpacks to `None`).
    pub fn empty() -> SavedTensor {
        SavedTensor {
            state: Mutex::new(State::Empty),
        }
    }

    /// The saved tensor, after checking it was not modified in place since it was saved.
    ///
    /// Under grad mode (a backward with `create_graph`), a saved output is re-attached to its
    /// node so that the backward formula is itself differentiable.
    ///
    /// # Errors
    ///
    /// [`Error::BackwardTwice`] after release; [`Error::SavedTensorModified`] if its version
    /// changed; [`Error::PackHookModifiedInput`] if a saved-tensor pack hook modified it; the
    /// error of a failed pack or unpack hook ([`try_saved_tensors_hooks`](crate::try_saved_tensors_hooks)).
    pub fn unpack(&self) -> Result<Option<Tensor>> {
        let mut state = self.state.lock();
        match &mut *state {
            State::Empty => Ok(None),
            State::Released => Err(Error::BackwardTwice),
            State::PackModifiedInput => Err(Error::PackHookModifiedInput),
            State::PackFailed(failure) => Err(failure
                .error
                .take()
                .unwrap_or_else(|| Error::msg(failure.message.clone()))),
            State::Hooked {
                packed,
                hooks,
                output,
                edge,
            } => {
                // The unpack hook is user code: run it without holding this slot's lock.
                let (packed, hooks) = (packed.clone(), hooks.clone());
                let history = match output {
                    Some((node, nr)) => node.upgrade().map(|n| (NodeRef::new(n), *nr)),
                    None => edge.as_ref().map(|e| (e.node.clone(), e.input_nr)),
                };
                drop(state);
                let t = hooks.unpack(&packed)?;
                if !is_grad_enabled() {
                    return Ok(Some(t));
                }
                // Re-attach the history the saved tensor had, so a create_graph pass
                // differentiates through it. Whatever history the hook's result has of its own
                // (ops it ran under the pass's grad mode) is not the saved tensor's and is
                // dropped, as PyTorch's `SavedVariable::unpack` wraps the unpacked data in a new
                // variable with the saved grad_fn (or grad accumulator).
                match history {
                    Some((node, nr)) => {
                        let same =
                            t.grad_fn().is_some_and(|f| f.ptr_eq(&node)) && t.output_nr() == nr;
                        if same {
                            return Ok(Some(t));
                        }
                        let alias = t.detach();
                        alias.set_grad_fn(node, nr);
                        Ok(Some(alias))
                    }
                    None if t.requires_grad() => Ok(Some(t.detach())),
                    None => Ok(Some(t)),
                }
            }
            State::Input { tensor, version } => {
                if tensor.was_detached_in_place() {
                    return Err(Error::SavedTensorDetachedInPlace);
                }
                check_version(tensor, *version, None)?;
                Ok(Some(tensor.clone()))
            }
            State::Output {
                data,
                version,
                grad_fn,
                output_nr,
            } => {
                check_version(data, *version, Some((grad_fn, *output_nr)))?;
                if !is_grad_enabled() {
                    return Ok(Some(data.clone()));
                }
                let t = data.detach();
                if let Some(node) = grad_fn.upgrade() {
                    t.set_grad_fn(NodeRef::new(node), *output_nr);
                }
                Ok(Some(t))
            }
        }
    }

    /// Like [`SavedTensor::unpack`] for slots that always hold a tensor.
    ///
    /// # Errors
    ///
    /// As [`SavedTensor::unpack`]; an empty slot is reported as an internal error.
    pub fn get(&self) -> Result<Tensor> {
        self.unpack()?
            .ok_or_else(|| Error::msg("internal error: unpacked an empty saved tensor"))
    }

    /// Shape, dtype and device of the saved tensor, read without unpacking it: no version check,
    /// no unpack hook. `None` when the slot holds no tensor (empty, released after backward, or
    /// packed by [`saved_tensors_hooks`](crate::saved_tensors_hooks) into a value of the hook's
    /// own).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, SavedTensor, Tensor};
    /// let t = Tensor::zeros(&[2, 3], DType::F32)?;
    /// let saved = SavedTensor::input(&t);
    /// let md = saved.metadata().unwrap();
    /// assert_eq!((md.shape(), md.dtype()), (&[2, 3][..], DType::F32));
    /// saved.release();
    /// assert!(saved.metadata().is_none());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn metadata(&self) -> Option<InputMetadata> {
        match &*self.state.lock() {
            State::Input { tensor, .. } => Some(InputMetadata::of(tensor)),
            State::Output { data, .. } => Some(InputMetadata::of(data)),
            State::Empty
            | State::Hooked { .. }
            | State::PackModifiedInput
            | State::PackFailed(_)
            | State::Released => None,
        }
    }

    /// What the slot holds, in a word or two (for `Debug` and graph pictures).
    pub(crate) fn state_name(&self) -> &'static str {
        match &*self.state.lock() {
            State::Empty => "empty",
            State::Input { .. } => "input",
            State::Output { .. } => "output",
            State::Hooked { .. } => "packed by hooks",
            State::PackModifiedInput => "invalid (pack hook modified it)",
            State::PackFailed(_) => "invalid (pack hook failed)",
            State::Released => "released",
        }
    }

    /// Frees the tensor (PyTorch's `reset_data`); later unpacks fail with `BackwardTwice`.
    pub fn release(&self) {
        let old = std::mem::replace(&mut *self.state.lock(), State::Released);
        if matches!(old, State::Empty) {
            *self.state.lock() = State::Empty;
        }
    }
}

/// Checks the version; `saved_by` names the node (and output) for a saved output, whose data
/// alias has no grad_fn of its own.
fn check_version(t: &Tensor, saved: u64, saved_by: Option<(&Weak<dyn Node>, usize)>) -> Result<()> {
    let current = t.version();
    if current == saved {
        return Ok(());
    }
    let output_of = match saved_by {
        Some((node, nr)) => node
            .upgrade()
            .map(|n| (nr, crate::error::short_node_name(n.name()))),
        None => t
            .grad_fn()
            .map(|f| (t.output_nr(), crate::error::short_node_name(f.name()))),
    };
    Err(Error::SavedTensorModified {
        tensor: format!("[{} {:?}]", t.dtype(), t.shape()),
        output_of,
        saved_version: saved,
        current_version: current,
        anomaly: crate::is_anomaly_enabled(),
    })
}

impl std::fmt::Debug for SavedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SavedTensor")
            .field(&self.state_name())
            .finish()
    }
}
