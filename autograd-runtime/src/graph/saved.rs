//! `SavedTensor`: a tensor a node keeps for its backward, with the version it had when saved
//! (B13, B14). Saved outputs keep their data but only a weak link to their grad_fn (the node that
//! saves them), so saving a result never creates a reference cycle; unpacked, they come back with
//! that grad_fn, as PyTorch's `SavedVariable::unpack(saved_for)` does. Under saved-tensor hooks
//! (B38) the slot keeps what the pack hook returned instead.

use std::cell::RefCell;

use super::InputMetadata;
use super::saved_hooks::{self, HookPair, Packed};
use crate::sync::{Arc, Mutex, Weak};
use crate::{Edge, Error, Node, NodeRef, Result, Tensor, is_grad_enabled};

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
        /// A saved input without an edge that required grad (a view made with recording off of
        /// a tensor that does): it unpacks as a tensor that requires grad, as PyTorch's
        /// `make_variable(data, requires_grad_)`.
        requires_grad: bool,
    },
    /// The pack hook modified its input in place, in the forward of a node recorded with
    /// [`record_node`](super::function::record_node) (a forward that cannot return the error):
    /// reported when the tensor is used.
    PackModifiedInput,
    /// The pack hook failed, in the forward of a node recorded with `record_node` (a forward that
    /// cannot return the error): its message, returned by every use of the tensor. Boxed: rare.
    PackFailed(Box<PackFailure>),
    /// Freed after the node ran without `retain_graph`.
    Released,
}

/// The error of a failed pack hook, kept in the slot until the saved tensor is used (a forward
/// that cannot return it: see [`SaveContext`]).
struct PackFailure {
    /// The hook's error message.
    message: String,
}

/// PyTorch's `SavedVariable` check: an inference tensor has no version counter, so a later
/// in-place change (in inference mode) could not be detected.
#[inline]
fn check_not_inference(t: &Tensor) -> Result<()> {
    if t.is_inference() {
        return Err(Error::InferenceTensorSaved);
    }
    Ok(())
}

/// Packs `t` with the active hooks, if any (`Ok(None)`: there are none).
///
/// # Errors
///
/// The pack hook's own error ([`try_saved_tensors_hooks`](crate::try_saved_tensors_hooks));
/// [`Error::PackHookModifiedInput`] if the pack hook modified `t` in place (PyTorch checks the
/// version counter around the hook in the `SavedVariable` constructor).
fn pack(t: &Tensor, output: Option<(&Weak<dyn Node>, usize)>) -> Result<Option<State>> {
    let Some(hooks) = saved_hooks::current() else {
        return Ok(None);
    };
    let version = t.version();
    let packed = hooks.pack(t)?;
    if t.version() != version {
        return Err(Error::PackHookModifiedInput);
    }
    let edge = if output.is_none() {
        t.gradient_edge()
    } else {
        None
    };
    let requires_grad = output.is_none() && edge.is_none() && t.requires_grad();
    Ok(Some(State::Hooked {
        packed: Arc::new(packed),
        hooks,
        output: output.map(|(w, nr)| (w.clone(), nr)),
        edge,
        requires_grad,
    }))
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
    ///
    /// # Errors
    ///
    /// [`Error::PackHookModifiedInput`] if a saved-tensor pack hook modified `t` in place;
    /// [`Error::InferenceTensorSaved`] for an inference tensor.
    pub fn input(t: &Tensor) -> Result<SavedTensor> {
        check_not_inference(t)?;
        let state = pack(t, None)?.unwrap_or_else(|| State::Input {
            tensor: t.clone(),
            version: t.version(),
        });
        Ok(SavedTensor::new(state))
    }

    /// Saves a forward input of an op that modifies another input in place, at `version`, the
    /// version it had before the op ran (PyTorch saves inputs before calling the kernel).
    ///
    /// # Errors
    ///
    /// [`Error::PackHookModifiedInput`] if a saved-tensor pack hook modified `t` in place;
    /// [`Error::InferenceTensorSaved`] for an inference tensor.
    pub fn input_at(t: &Tensor, version: u64) -> Result<SavedTensor> {
        check_not_inference(t)?;
        let state = pack(t, None)?.unwrap_or_else(|| State::Input {
            tensor: t.clone(),
            version,
        });
        Ok(SavedTensor::new(state))
    }

    /// Saves output `output_nr` of the node being built; `node` is that node (from
    /// `Arc::new_cyclic`), kept weakly.
    ///
    /// # Errors
    ///
    /// [`Error::PackHookModifiedInput`] if a saved-tensor pack hook modified `t` in place;
    /// [`Error::InferenceTensorSaved`] for an inference tensor.
    pub fn output(t: &Tensor, node: Weak<dyn Node>, output_nr: usize) -> Result<SavedTensor> {
        check_not_inference(t)?;
        let state = pack(t, Some((&node, output_nr)))?.unwrap_or_else(|| State::Output {
            data: t.detach(),
            version: t.version(),
            grad_fn: node,
            output_nr,
        });
        Ok(SavedTensor::new(state))
    }

    /// Runs the pack hook of an output saved under saved-tensor hooks, now that the node it was
    /// saved by is attached: the hook sees the output with that grad_fn (see
    /// [`SaveContext::output`]). A no-op for any other slot.
    ///
    /// # Errors
    ///
    /// The pack hook's error, or [`Error::PackHookModifiedInput`]; the slot then reports it when
    /// used.
    pub(crate) fn finish_pack(&self) -> Result<()> {
        let state = self.state.lock();
        let State::Output {
            data,
            grad_fn,
            output_nr,
            ..
        } = &*state
        else {
            return Ok(());
        };
        let (data, node, nr) = (data.clone(), grad_fn.clone(), *output_nr);
        // The hook is user code: it runs without this slot's lock.
        drop(state);
        let seen = data.detach();
        if let Some(n) = node.upgrade() {
            seen.set_grad_fn(NodeRef::new(n), nr);
        }
        let packed = pack(&seen, Some((&node, nr)));
        drop(seen);
        match packed {
            Ok(Some(hooked)) => *self.state.lock() = hooked,
            // The hooks were gone already: the slot stays an unpacked output.
            Ok(None) => {}
            Err(e) => {
                *self.state.lock() = failed(&e);
                return Err(e);
            }
        }
        Ok(())
    }

    fn new(state: State) -> SavedTensor {
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
    /// A saved input comes back as the tensor that was saved. A saved output comes back with
    /// its history, whatever the grad mode: its grad_fn is the node that saved it (PyTorch's
    /// `SavedVariable::unpack(saved_for)`), so it requires grad, and a backward run with
    /// `create_graph` differentiates through it. Each unpack of an output is a new handle on
    /// the same data and version counter (the slot keeps the node only weakly: no cycle).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?.requires_grad_(true)?;
    /// let y = x.exp()?; // ExpBackward0 saves its result
    /// let node = y.grad_fn().unwrap();
    /// let mut unpacked = None;
    /// node.visit_saved_tensors(&mut |_, saved| unpacked = Some(saved.get()));
    /// let result = unpacked.unwrap()?;
    /// assert!(result.grad_fn().unwrap().ptr_eq(&node) && result.requires_grad());
    /// assert_eq!(result.to_vec::<f64>()?, y.to_vec::<f64>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::BackwardTwice`] after release; [`Error::SavedTensorModified`] if its version
    /// changed; [`Error::PackHookModifiedInput`] if a saved-tensor pack hook modified it; the
    /// error of a failed pack or unpack hook ([`try_saved_tensors_hooks`](crate::try_saved_tensors_hooks)).
    pub fn unpack(&self) -> Result<Option<Tensor>> {
        self.unpack_with(true)
    }

    /// [`SavedTensor::get`] for a built-in op's derivative formula: with grad mode off (a
    /// backward without `create_graph`), a saved output comes back without its grad_fn, which
    /// the formula cannot observe, and the unpack costs no new tensor. Under grad mode it is
    /// [`SavedTensor::get`].
    ///
    /// # Errors
    ///
    /// As [`SavedTensor::unpack`].
    #[doc(hidden)]
    #[inline]
    pub fn get_in_builtin(&self) -> Result<Tensor> {
        self.unpack_with(is_grad_enabled())?
            .ok_or_else(|| Error::msg("internal error: unpacked an empty saved tensor"))
    }

    /// [`SavedTensor::unpack`]; `history`: whether a saved output gets its grad_fn back.
    fn unpack_with(&self, history: bool) -> Result<Option<Tensor>> {
        let state = self.state.lock();
        match &*state {
            State::Empty => Ok(None),
            State::Released => Err(Error::BackwardTwice),
            State::PackModifiedInput => Err(Error::PackHookModifiedInput),
            State::PackFailed(failure) => Err(Error::msg(failure.message.clone())),
            State::Hooked {
                packed,
                hooks,
                output,
                edge,
                requires_grad,
            } => {
                // The unpack hook is user code: run it without holding this slot's lock.
                let (packed, hooks) = (packed.clone(), hooks.clone());
                let (output, edge, requires_grad) = (output.clone(), edge.clone(), *requires_grad);
                drop(state);
                let t = hooks.unpack(&packed)?;
                // The saved tensor's history goes on the hook's data; whatever history the
                // hook's result has of its own (ops it ran under the pass's grad mode) is not the
                // saved tensor's and is dropped, as PyTorch's `SavedVariable::unpack` wraps the
                // unpacked data in a new variable with the saved grad_fn (or grad accumulator).
                match output {
                    // A saved output: with the saving node as its grad_fn.
                    Some((node, nr)) => {
                        if !history {
                            return Ok(Some(t));
                        }
                        let Some(node) = node.upgrade().map(NodeRef::new) else {
                            return Ok(Some(t.detach()));
                        };
                        if t.grad_fn().is_some_and(|f| f.ptr_eq(&node)) && t.output_nr() == nr {
                            return Ok(Some(t));
                        }
                        let alias = t.detach();
                        alias.set_grad_fn(node, nr);
                        Ok(Some(alias))
                    }
                    // A saved input: its history, for a create_graph pass.
                    None if !is_grad_enabled() => Ok(Some(t)),
                    None => match edge {
                        Some(e) => {
                            let same = t.grad_fn().is_some_and(|f| f.ptr_eq(&e.node))
                                && t.output_nr() == e.input_nr;
                            if same {
                                return Ok(Some(t));
                            }
                            let alias = t.detach();
                            alias.set_grad_fn(e.node, e.input_nr);
                            Ok(Some(alias))
                        }
                        None if requires_grad => {
                            let fresh = t.detach();
                            fresh.set_requires_grad(true)?;
                            Ok(Some(fresh))
                        }
                        None if t.requires_grad() => Ok(Some(t.detach())),
                        None => Ok(Some(t)),
                    },
                }
            }
            State::Input { tensor, version } => {
                if tensor.was_detached_in_place() {
                    return Err(Error::SavedTensorDetachedInPlace);
                }
                if tensor.is_view() {
                    // PyTorch reads a saved view's grad_fn first (for the version error's
                    // text), which raises for a view that may not be rebased whose base
                    // changed (one made with recording off, kept by a custom function).
                    tensor.try_gradient_edge()?;
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
                if !history {
                    return Ok(Some(data.clone()));
                }
                let t = data.detach();
                // Forward mode: the output's tangent, which `data` was given (`output_data`).
                crate::forward_ad::carry(data, &t);
                if let Some(node) = grad_fn.upgrade() {
                    t.set_grad_fn(NodeRef::new(node), *output_nr);
                }
                Ok(Some(t))
            }
        }
    }

    /// The data of a saved output number `output_nr` of its node (not unpacked, no check), for
    /// forward mode to give it that output's tangent: `None` for any other slot.
    pub(crate) fn output_data(&self, output_nr: usize) -> Option<Tensor> {
        match &*self.state.lock() {
            State::Output {
                data,
                output_nr: nr,
                ..
            } if *nr == output_nr => Some(data.clone()),
            _ => None,
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
    /// let saved = SavedTensor::input(&t)?;
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

/// What [`record_node`](super::function::record_node)'s `make` receives: saves the tensors of
/// the node being built (PyTorch's `SavedVariable` constructors), and remembers whether a
/// saved-tensor pack hook modified its input, so that
/// [`try_record_node`](super::function::try_record_node) fails before the node is attached to
/// its outputs.
///
/// # Examples
///
/// ```
/// use autograd_runtime::__private::{next_edges, record_node, smallvec::smallvec, GradVec};
/// use autograd_runtime::{graph::Backward, NodeMeta, Result, SavedTensor, Tensor};
///
/// struct Square { x: SavedTensor }
/// impl Backward for Square {
///     const NAME: &'static str = "SquareBackward0";
///     fn backward(&self, _: &NodeMeta, grads: GradVec) -> Result<GradVec> {
///         let (g, x) = (grads[0].as_ref().unwrap(), self.x.get()?);
///         Ok(smallvec![Some(g.mul(&x)?.mul_scalar(2.0)?)])
///     }
/// }
///
/// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
/// let y = { let _g = autograd_runtime::no_grad(); x.mul(&x)? };
/// record_node(next_edges(&[&x]).unwrap(), &[&y], |save| Square { x: save.input(&x) });
/// y.backward()?;
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct SaveContext<'a> {
    /// The node being built, as a weak handle (made only when a saved output asks for it).
    node: &'a dyn Fn() -> Weak<dyn Node>,
    /// The first error a pack hook raised (or its modifying its input); taken by
    /// `try_record_node` once `make` returned.
    failure: RefCell<Option<Error>>,
}

impl<'a> SaveContext<'a> {
    pub(crate) fn new(node: &'a dyn Fn() -> Weak<dyn Node>) -> SaveContext<'a> {
        SaveContext {
            node,
            failure: RefCell::new(None),
        }
    }

    /// The first error of a pack hook while this context saved tensors, if any.
    pub(crate) fn take_failure(&self) -> Option<Error> {
        self.failure.borrow_mut().take()
    }

    /// The node being built, held weakly (a strong handle in the node would be a cycle).
    pub fn node(&self) -> Weak<dyn Node> {
        (self.node)()
    }

    /// [`SavedTensor::input`] for the node being built.
    pub fn input(&self, t: &Tensor) -> SavedTensor {
        self.save(|| SavedTensor::input(t))
    }

    /// [`SavedTensor::input_at`] for the node being built.
    pub fn input_at(&self, t: &Tensor, version: u64) -> SavedTensor {
        self.save(|| SavedTensor::input_at(t, version))
    }

    /// [`SavedTensor::output`] of the node being built, its output `output_nr`.
    ///
    /// Under saved-tensor hooks the pack hook is called once the node is the output's grad_fn
    /// (as PyTorch saves outputs after setting their history), so that it sees the output with
    /// its `grad_fn`: the slot keeps the output as an unpacked one would be until
    /// `finish_output_packs` packs it, after `record_node`.
    pub fn output(&self, t: &Tensor, output_nr: usize) -> SavedTensor {
        if self.failure.borrow().is_some() {
            return self.save(|| SavedTensor::output(t, self.node(), output_nr));
        }
        SavedTensor::new(State::Output {
            data: t.detach(),
            version: t.version(),
            grad_fn: self.node(),
            output_nr,
        })
    }

    /// A tensor the forward computed and kept with `save(..)` (PyTorch's `save_for_backward` of
    /// an intermediate): saved as an input (version-checked, packed by saved-tensor hooks, freed
    /// after backward), or as the output it is, among the node's `outputs`. A view of an output
    /// is kept as a detached alias of the same data and version counter: the view holds its
    /// base, whose grad_fn is this node, and the node holding it would be a reference cycle.
    pub fn residual(&self, t: &Tensor, outputs: &[&Tensor]) -> SavedTensor {
        if let Some(nr) = outputs.iter().rposition(|o| o.is_same(t)) {
            return self.output(t, nr);
        }
        if let Some(base) = t.view_base()
            && outputs.iter().any(|o| o.is_same(base))
        {
            return self.input(&t.detach());
        }
        self.input(t)
    }

    /// The slot `save` makes, or (a pack hook modified its input) one that reports it when
    /// used, noted here. After a failure nothing more is packed: PyTorch stops at the first
    /// `SavedVariable` that raises.
    fn save(&self, save: impl FnOnce() -> Result<SavedTensor>) -> SavedTensor {
        if let Some(e) = &*self.failure.borrow() {
            return SavedTensor::new(failed(e));
        }
        save().unwrap_or_else(|e| {
            let slot = SavedTensor::new(failed(&e));
            *self.failure.borrow_mut() = Some(e);
            slot
        })
    }
}

impl std::fmt::Debug for SaveContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaveContext")
            .field("failed", &self.failure.borrow().is_some())
            .finish_non_exhaustive()
    }
}

/// The state of a slot whose pack hook failed with `e`: reported when the tensor is used.
fn failed(e: &Error) -> State {
    match e {
        Error::PackHookModifiedInput => State::PackModifiedInput,
        other => State::PackFailed(Box::new(PackFailure {
            message: other.to_string(),
        })),
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

/// Integer indices a node keeps for its backward (`index_select`'s index, `max_dim`'s argmax):
/// PyTorch keeps them as a saved tensor, so they are freed with the node's saved tensors, and a
/// second backward through a freed graph fails with [`Error::BackwardTwice`] as it does for
/// tensors. A clone shares the indices but not the release: each node frees its own.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{SavedIndices, Tensor};
/// let saved = SavedIndices::new(&[2, 0]);
/// assert_eq!(&*saved.get()?, &[2, 0]);
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?.requires_grad_(true)?;
/// let y = x.index_select(0, &[2, 0])?.sum()?;
/// y.backward()?;
/// assert!(y.backward().unwrap_err().to_string().starts_with("Trying to backward through the graph a second time"));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct SavedIndices(Mutex<Option<Arc<[usize]>>>);

impl SavedIndices {
    /// Keeps a copy of `indices`.
    pub fn new(indices: &[usize]) -> SavedIndices {
        SavedIndices(Mutex::new(Some(Arc::from(indices))))
    }

    /// The indices.
    ///
    /// # Errors
    ///
    /// [`Error::BackwardTwice`] after the node that kept them was freed.
    pub fn get(&self) -> Result<Arc<[usize]>> {
        self.0.lock().clone().ok_or(Error::BackwardTwice)
    }

    /// Frees the indices: called by the node's release, with its saved tensors (the code
    /// `#[differentiable]` generates calls a method of this name on every saved attribute).
    #[doc(hidden)]
    pub fn __autograd_release(&self) {
        self.0.lock().take();
    }
}

impl Clone for SavedIndices {
    fn clone(&self) -> SavedIndices {
        SavedIndices(Mutex::new(self.0.lock().clone()))
    }
}

impl std::fmt::Debug for SavedIndices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0.lock() {
            Some(i) => f.debug_tuple("SavedIndices").field(&&**i).finish(),
            None => f.write_str("SavedIndices(<released>)"),
        }
    }
}

/// The no-op release of a saved attribute, for every type without one of its own (the code
/// `#[differentiable]` generates calls `field.__autograd_release()`; an inherent method of that
/// name, as [`SavedIndices`] has, is picked first).
#[doc(hidden)]
pub trait ReleaseAttribute {
    /// Does nothing.
    fn __autograd_release(&self) {}
}

impl<T: ?Sized> ReleaseAttribute for T {}
