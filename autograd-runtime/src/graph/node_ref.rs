//! `NodeRef`: the shared handle to a graph node, whose `Drop` frees arbitrarily deep graphs
//! without recursion.
//!
//! Dropping the last handle to a node drops its edges and saved tensors, which may hold the last
//! handles to the next nodes, and so on: a naive drop of a chain of a million nodes recurses a
//! million frames deep. PyTorch's `deleteNode` moves such children to a heap stack instead. Here
//! every `NodeRef` drop that would free a node goes through a per-thread trampoline: the first one
//! on a thread becomes the *drainer*; drops that happen while it runs (the children) are pushed
//! onto a list the drainer empties in a loop. Stack depth is bounded by two node destructors.

use std::cell::Cell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr;

use super::hooks::{self, HookHandle};
use super::{Edge, Node, NodeMeta};
use crate::sync::Arc;
use crate::{Result, Tensor};

/// A shared handle to a node of the backward graph (what [`Tensor::grad_fn`] returns).
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let x = Tensor::scalar(2.0f64);
/// x.set_requires_grad(true)?;
/// let y = x.mul(&x)?;
/// let f = y.grad_fn().unwrap();
/// assert_eq!(f.name(), "MulBackward0");
/// assert_eq!(f.next_functions().len(), 2);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct NodeRef(ManuallyDrop<Arc<dyn Node>>);

impl NodeRef {
    /// Wraps a freshly created node.
    pub fn new(node: Arc<dyn Node>) -> NodeRef {
        NodeRef(ManuallyDrop::new(node))
    }

    pub(crate) fn arc(&self) -> &Arc<dyn Node> {
        &self.0
    }

    /// The node's name, e.g. `AddBackward0`.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The node's bookkeeping (sequence number, edges, input metadata).
    pub fn meta(&self) -> &NodeMeta {
        self.0.meta()
    }

    /// The next nodes, one per forward input (`None` for inputs that do not require grad), as
    /// PyTorch's `grad_fn.next_functions`.
    pub fn next_functions(&self) -> Vec<Option<Edge>> {
        self.0.meta().next_edges().to_vec()
    }

    /// Whether two handles point to the same node.
    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn addr(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }

    /// Registers a node pre-hook: called with the incoming gradients before the node runs (only
    /// if it runs); returning `Some` replaces them. [`NodeRef::try_register_prehook`] is the form
    /// whose hook can fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f64);
    /// x.set_requires_grad(true)?;
    /// let y = x.copy()?;
    /// y.grad_fn().unwrap().register_prehook(|grads| {
    ///     Some(grads.iter().map(|g| g.as_ref().map(|g| g.mul_scalar(2.0).unwrap())).collect())
    /// });
    /// y.backward()?;
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 2.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn register_prehook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&[Option<Tensor>]) -> Option<Vec<Option<Tensor>>> + Send + Sync + 'static,
    {
        hooks::add_pre_hook(
            self,
            Arc::new(move |grads: &[Option<Tensor>]| Ok(hook(grads))),
        )
    }

    /// [`NodeRef::register_prehook`] for a hook that can fail: an `Err` it returns stops the
    /// backward pass before the node runs and is what `backward()`/`grad()` returns (see
    /// [fallible hooks](crate::graph#fallible-hooks)).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Error, Tensor};
    /// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// let y = x.exp()?;
    /// y.grad_fn().unwrap().try_register_prehook(|grads| {
    ///     let Some(g) = &grads[0] else { return Ok(None) };
    ///     Ok(Some(vec![Some(g.mul_scalar(2.0)?)])) // `?` on the op's error
    /// });
    /// y.backward_with(autograd_runtime::BackwardOptions::new().retain_graph(true))?;
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 2.0 * 1f64.exp());
    ///
    /// let z = x.sin()?;
    /// z.grad_fn().unwrap().try_register_prehook(|_| Err(Error::msg("no gradient for sin today")));
    /// assert_eq!(z.backward().unwrap_err().to_string(), "no gradient for sin today");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn try_register_prehook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync + 'static,
    {
        hooks::add_pre_hook(self, Arc::new(hook))
    }

    /// Registers a node post-hook: called with `(grad_inputs, grad_outputs)` after the node ran,
    /// where `grad_inputs` are its results; returning `Some` replaces them.
    /// [`NodeRef::try_register_hook`] is the form whose hook can fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f64);
    /// x.set_requires_grad(true)?;
    /// let y = x.exp()?;
    /// let calls = Arc::new(AtomicUsize::new(0));
    /// let c = calls.clone();
    /// y.grad_fn().unwrap().register_hook(move |_inputs, _outputs| { c.fetch_add(1, Ordering::SeqCst); None });
    /// y.backward()?;
    /// assert_eq!(calls.load(Ordering::SeqCst), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn register_hook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Option<Vec<Option<Tensor>>>
            + Send
            + Sync
            + 'static,
    {
        hooks::add_post_hook(
            self,
            Arc::new(
                move |inputs: &[Option<Tensor>], outputs: &[Option<Tensor>]| {
                    Ok(hook(inputs, outputs))
                },
            ),
        )
    }

    /// [`NodeRef::register_hook`] for a hook that can fail: an `Err` it returns stops the
    /// backward pass after the node ran and is what `backward()`/`grad()` returns (see
    /// [fallible hooks](crate::graph#fallible-hooks)).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Error, Tensor};
    /// let x = Tensor::scalar(0.0f64).requires_grad_(true)?;
    /// let y = x.sqrt()?; // d/dx sqrt(x) at 0 is infinite
    /// y.grad_fn().unwrap().try_register_hook(|grad_inputs, _grad_outputs| {
    ///     let g = grad_inputs[0].as_ref().map(|g| g.item::<f64>()).transpose()?;
    ///     match g {
    ///         Some(g) if g.is_infinite() => Err(Error::msg("SqrtBackward0 produced an infinite gradient")),
    ///         _ => Ok(None),
    ///     }
    /// });
    /// let err = y.backward().unwrap_err();
    /// assert_eq!(err.to_string(), "SqrtBackward0 produced an infinite gradient");
    /// assert!(x.grad().is_none()); // AccumulateGrad never ran
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn try_register_hook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
            + Send
            + Sync
            + 'static,
    {
        hooks::add_post_hook(self, Arc::new(hook))
    }

    /// Runs the node directly (used by tests and tools; the engine calls `apply` itself).
    ///
    /// # Errors
    ///
    /// Whatever the node's backward returns.
    pub fn apply(&self, grads: super::GradVec) -> Result<super::GradVec> {
        self.0.apply(grads)
    }
}

impl Clone for NodeRef {
    fn clone(&self) -> Self {
        NodeRef(ManuallyDrop::new(Arc::clone(&self.0)))
    }
}

impl std::ops::Deref for NodeRef {
    type Target = dyn Node;
    fn deref(&self) -> &(dyn Node + 'static) {
        &**self.0
    }
}

impl fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0.name())
    }
}

thread_local! {
    /// While this thread drains node drops ([`drop_iteratively`]): the drainer's list of nodes
    /// still to drop, which lives on its stack; null otherwise. A plain pointer in a `Cell`, with
    /// no destructor: a deferred drop costs a load and a push, without the lazy registration
    /// check and the borrow flag a `RefCell<Vec<_>>` needs.
    static DEFERRED_DROPS: Cell<*mut Vec<Arc<dyn Node>>> = const { Cell::new(ptr::null_mut()) };
}

/// Publishes a drainer's list in [`DEFERRED_DROPS`] for as long as it lives; clears it when
/// dropped, on unwinding too, so the pointer never outlives the list.
struct Draining;

impl Draining {
    fn enter(list: *mut Vec<Arc<dyn Node>>) -> Draining {
        DEFERRED_DROPS.with(|d| d.set(list));
        Draining
    }
}

impl Drop for Draining {
    fn drop(&mut self) {
        DEFERRED_DROPS.with(|d| d.set(ptr::null_mut()));
    }
}

impl Drop for NodeRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self.0` is taken exactly once, here, and never touched again.
        let node = unsafe { ManuallyDrop::take(&mut self.0) };
        if Arc::strong_count(&node) > 1 {
            // Not the last handle (or racing with another last handle, which then drains): only
            // the count changes, no destructor runs here.
            return;
        }
        drop_iteratively(node);
    }
}

/// The last handle's drop, out of line so that `NodeRef::drop`'s common case (only a count
/// changes) stays small enough to inline.
#[inline(never)]
fn drop_iteratively(node: Arc<dyn Node>) {
    let list = DEFERRED_DROPS.with(Cell::get);
    if !list.is_null() {
        // SAFETY: the pointer is non-null only while the drainer below runs on this thread (the
        // `Draining` guard clears it before the list dies), so it points to that live list. This
        // push runs inside a drop the drainer started, and the drainer holds no reference into
        // the list across a drop (it only pops through the same pointer between drops), so this
        // is the only access in progress.
        unsafe { (*list).push(node) };
        return;
    }
    // This thread's first last-handle drop: it becomes the drainer.
    let mut pending: Vec<Arc<dyn Node>> = Vec::new();
    let list: *mut Vec<Arc<dyn Node>> = &mut pending;
    let _draining = Draining::enter(list);
    drop(node);
    // SAFETY: `list` points to `pending`, alive until after `_draining` clears the pointer; the
    // reference `pop` takes ends before the popped node drops (and pushes through `list`).
    while let Some(next) = unsafe { (*list).pop() } {
        drop(next);
    }
}
