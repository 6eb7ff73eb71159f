//! Backward hooks: tensor hooks, retains_grad hooks, node pre- and post-hooks, post-accumulate-grad
//! hooks, and the removable [`HookHandle`] (B18–B21).
//! Every hook kind has a fallible `try_` twin: see [the module docs of `graph`](super#fallible-hooks).
//!
//! Hooks on a non-leaf tensor are stored on its `grad_fn` under the tensor's `output_nr`, so a hook
//! registered before an in-place op stays bound to the old node (B21). Hooks on a leaf live in the
//! leaf's autograd metadata and are run by its `AccumulateGrad`.
//!
//! # One way: the graph's hooks build on the tensor
//!
//! `DESIGN.md` puts the graph on a floor above the tensor, and the hooks follow it: this module
//! (with `accumulate_grad.rs`, which runs a leaf's hooks, and `node.rs`, which keeps a node's)
//! names the tensor's autograd state, and `tensor/` names nothing of this module. So the
//! tensor's hook front doors ([`Tensor::register_hook`], [`Tensor::retain_grad`], ...) are
//! defined here, in an `impl Tensor` block; the tensor keeps only the storage of a leaf's hooks
//! (`LeafHooks` and the hook types, in `tensor/autograd_meta.rs`), and moves a retains_grad hook
//! to a new grad_fn through [`NodeMeta`](crate::graph::NodeMeta)'s methods.

use crate::sync::Ordering;
use crate::sync::atomic::AtomicBool;
use crate::sync::statics::AtomicU64;

use super::NodeRef;
use crate::sync::{Arc, Mutex, Weak};
use crate::tensor::{HookId, PostAccumulateHook, TensorHook, TensorImpl};
use crate::{Error, Node, Result, Tensor};

pub(crate) type PreHook =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
pub(crate) type PostHook = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;

fn next_hook_id() -> HookId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Relaxed: only uniqueness matters.
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The hooks of one node. Empty for almost every node, so the lists are boxed lazily and a flag
/// lets the engine skip the lock.
#[derive(Default)]
pub(crate) struct NodeHooks {
    /// Set once the first hook is added; never cleared.
    ///
    /// Relaxed is enough: it is a hint that the lists may be non-empty, and the lists themselves
    /// are read under `lists`' mutex. A backward that must see a hook is ordered after the
    /// registration by program order or by whatever handed the tensor to its thread.
    present: AtomicBool,
    lists: Mutex<Option<Box<HookLists>>>,
}

impl Drop for NodeHooks {
    /// Nearly every node never had a hook: that case is a test of one pointer, inline in the
    /// node's drop (the lists' own drop glue, with its set-up, is out of line).
    #[inline]
    fn drop(&mut self) {
        if let Some(lists) = self.lists.get_mut().take() {
            drop_lists(lists);
        }
    }
}

#[inline(never)]
fn drop_lists(lists: Box<HookLists>) {
    drop(lists);
}

impl std::fmt::Debug for NodeHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeHooks")
            .field("present", &self.present.load(Ordering::Relaxed))
            .finish()
    }
}

#[derive(Default, Clone)]
pub(crate) struct HookLists {
    /// Tensor hooks of non-leaf outputs: `(id, output_nr, hook)`, in registration order.
    pub(crate) tensor_pre: Vec<(HookId, usize, TensorHook)>,
    /// Outputs whose tensor retains its grad: `(output_nr, tensor)`. Weak: the tensor owns the node.
    pub(crate) retains_grad: Vec<(usize, Weak<TensorImpl>)>,
    pub(crate) pre: Vec<(HookId, PreHook)>,
    pub(crate) post: Vec<(HookId, PostHook)>,
}

impl NodeHooks {
    /// A snapshot of the lists, or `None` when the node never had hooks (the fast path). Hooks
    /// run on the snapshot, so they may add or remove hooks without deadlocking.
    #[inline]
    pub(crate) fn snapshot(&self) -> Option<HookLists> {
        if !self.present.load(Ordering::Relaxed) {
            return None;
        }
        self.snapshot_slow()
    }

    /// Whether the node ever had hooks (a `false` answer means [`NodeHooks::snapshot`] is `None`).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        // Relaxed: as in `snapshot`.
        self.present.load(Ordering::Relaxed)
    }

    #[inline(never)]
    fn snapshot_slow(&self) -> Option<HookLists> {
        self.lists.lock().as_deref().cloned()
    }

    /// Whether the node has post-hooks (the engine then keeps a copy of its incoming gradients).
    pub(crate) fn has_post_hooks(&self) -> bool {
        self.present.load(Ordering::Relaxed)
            && self
                .lists
                .lock()
                .as_ref()
                .is_some_and(|l| !l.post.is_empty())
    }

    fn edit<R>(&self, f: impl FnOnce(&mut HookLists) -> R) -> R {
        let mut lists = self.lists.lock();
        let r = f(lists.get_or_insert_with(Default::default));
        self.present.store(true, Ordering::Relaxed);
        r
    }

    pub(crate) fn add_tensor_pre(&self, output_nr: usize, hook: TensorHook) -> HookId {
        let id = next_hook_id();
        self.edit(|l| l.tensor_pre.push((id, output_nr, hook)));
        id
    }

    pub(crate) fn set_retains_grad(&self, output_nr: usize, tensor: Weak<TensorImpl>) {
        self.edit(|l| {
            l.retains_grad.retain(|(nr, _)| *nr != output_nr);
            l.retains_grad.push((output_nr, tensor));
        });
    }

    pub(crate) fn clear_retains_grad(&self, output_nr: usize) {
        self.edit(|l| l.retains_grad.retain(|(nr, _)| *nr != output_nr));
    }

    fn remove(&self, id: HookId) {
        self.edit(|l| {
            l.tensor_pre.retain(|h| h.0 != id);
            l.pre.retain(|h| h.0 != id);
            l.post.retain(|h| h.0 != id);
        });
    }
}

pub(crate) fn add_pre_hook(node: &NodeRef, hook: PreHook) -> HookHandle {
    let id = next_hook_id();
    node.meta().hooks.edit(|l| l.pre.push((id, hook)));
    HookHandle::on_node(node, id)
}

pub(crate) fn add_post_hook(node: &NodeRef, hook: PostHook) -> HookHandle {
    let id = next_hook_id();
    node.meta().hooks.edit(|l| l.post.push((id, hook)));
    HookHandle::on_node(node, id)
}

/// The hook front doors of [`Tensor`]: defined here rather than in `tensor/` so that the
/// dependency between hooks and tensors goes one way (see the module docs).
impl Tensor {
    /// Makes this non-leaf keep its gradient in [`Tensor::grad`] after backward (a no-op on leaves).
    ///
    /// # Errors
    ///
    /// [`Error::RetainGradWithoutRequiresGrad`] if the tensor does not require grad;
    /// [`Error::ViewRebase`] for a view of `split`/`chunk` whose base was modified in place
    /// since (PyTorch reads its `grad_fn`, which it refuses to regenerate; see
    /// [`Tensor::grad_fn`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let h = x.mul_scalar(3.0)?;
    /// h.retain_grad()?;
    /// h.mul(&h)?.backward()?;
    /// assert_eq!(h.grad().unwrap().item::<f64>()?, 12.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::RetainGradWithoutRequiresGrad);
        }
        {
            // PyTorch's C++ `is_leaf()` reads the grad_fn field as it is: a no-op for leaves,
            // and for a view made under `no_grad` (it has no grad_fn of its own); and for a
            // tensor that retains its grad already.
            let meta = self.0.autograd.lock();
            if meta.grad_fn.is_none() || meta.retains_grad {
                return Ok(());
            }
        }
        // Then it reads the grad_fn through its accessor: a stale view's is regenerated, or
        // refused if it may not be.
        let grad_fn = self.try_grad_fn()?;
        let mut meta = self.0.autograd.lock();
        let Some(grad_fn) = grad_fn else {
            return Ok(());
        };
        meta.retains_grad = true;
        let output_nr = meta.output_nr;
        drop(meta);
        grad_fn
            .meta()
            .hooks
            .set_retains_grad(output_nr, Arc::downgrade(&self.0));
        Ok(())
    }

    /// Registers a hook called with this tensor's gradient each time it is computed during
    /// backward; returning `Some(g)` replaces the gradient. Hooks run in registration order.
    /// [`Tensor::try_register_hook`] is the form whose hook can fail.
    ///
    /// # Errors
    ///
    /// [`Error::HookWithoutRequiresGrad`] if the tensor does not require grad;
    /// [`Error::ViewRebase`] for a view of `split`/`chunk`, or one made under `no_grad`, whose
    /// base was modified in place since (as [`Tensor::retain_grad`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// let y = x.mul_scalar(2.0)?;
    /// y.register_hook(|g| Some(g.mul_scalar(3.0).unwrap()))?;
    /// y.backward()?;
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn register_hook<F>(&self, hook: F) -> Result<HookHandle>
    where
        F: Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static,
    {
        self.add_tensor_hook(Arc::new(move |g: &Tensor| Ok(hook(g))))
    }

    /// [`Tensor::register_hook`] for a hook that can fail: an `Err` it returns stops the backward
    /// pass and is what `backward()`/`grad()` returns (see
    /// [fallible hooks](crate::graph#fallible-hooks)).
    ///
    /// # Errors
    ///
    /// [`Error::HookWithoutRequiresGrad`] if the tensor does not require grad;
    /// [`Error::ViewRebase`] for a view of `split`/`chunk`, or one made under `no_grad`, whose
    /// base was modified in place since (as [`Tensor::retain_grad`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Error, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
    /// let y = x.mul_scalar(2.0)?;
    /// // Refuse non-finite gradients; scale the others (`?` works inside the hook).
    /// y.try_register_hook(|g| {
    ///     if g.to_vec::<f64>()?.iter().any(|v| !v.is_finite()) {
    ///         return Err(Error::msg("non-finite gradient"));
    ///     }
    ///     Ok(Some(g.mul_scalar(10.0)?))
    /// })?;
    /// y.sum()?.backward_with(autograd_runtime::BackwardOptions::new().retain_graph(true))?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [20.0, 20.0]);
    ///
    /// let bad = Tensor::from_vec(vec![f64::NAN, 1.0], &[2])?;
    /// let err = y.backward_with(autograd_runtime::BackwardOptions::new().gradient(bad)).unwrap_err();
    /// assert_eq!(err.to_string(), "non-finite gradient");
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [20.0, 20.0]); // the pass stopped
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn try_register_hook<F>(&self, hook: F) -> Result<HookHandle>
    where
        F: Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        self.add_tensor_hook(Arc::new(hook))
    }

    fn add_tensor_hook(&self, hook: TensorHook) -> Result<HookHandle> {
        // A view's hook goes to its current (possibly regenerated) grad_fn; a stale view that
        // may not be regenerated is refused with PyTorch's error, as its `grad_fn` accessor
        // refuses it (a hook on the old node would never run).
        let current = if self.is_view() {
            self.try_grad_fn()?
        } else {
            None
        };
        let mut meta = self.0.autograd.lock();
        match current.or_else(|| meta.grad_fn.clone()) {
            Some(grad_fn) => {
                let output_nr = meta.output_nr;
                drop(meta);
                let id = grad_fn.meta().hooks.add_tensor_pre(output_nr, hook);
                Ok(HookHandle::on_node(&grad_fn, id))
            }
            None if meta.requires_grad => {
                let id = next_hook_id();
                meta.leaf_hooks
                    .get_or_insert_with(Box::default)
                    .tensor
                    .push((id, hook));
                drop(meta);
                Ok(HookHandle::on_tensor(self, id))
            }
            None => Err(Error::HookWithoutRequiresGrad),
        }
    }

    /// Registers a hook called with this leaf after its `.grad` was updated by backward (B20).
    /// [`Tensor::try_register_post_accumulate_grad_hook`] is the form whose hook can fail.
    ///
    /// # Errors
    ///
    /// [`Error::PostAccumulateGradHookOnNonLeaf`] on a non-leaf;
    /// [`Error::HookWithoutRequiresGrad`] if the leaf does not require grad;
    /// [`Error::ViewRebase`] as [`Tensor::register_hook`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// x.register_post_accumulate_grad_hook(|t| {
    ///     // e.g. an optimizer step fused into backward
    ///     assert_eq!(t.grad().unwrap().item::<f64>().unwrap(), 2.0);
    /// })?;
    /// x.mul_scalar(2.0)?.backward()?;
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn register_post_accumulate_grad_hook<F>(&self, hook: F) -> Result<HookHandle>
    where
        F: Fn(&Tensor) + Send + Sync + 'static,
    {
        self.add_post_accumulate_grad_hook(Arc::new(move |t: &Tensor| {
            hook(t);
            Ok(())
        }))
    }

    /// [`Tensor::register_post_accumulate_grad_hook`] for a hook that can fail: an `Err` it
    /// returns stops the backward pass (after this leaf's `.grad` was updated) and is what
    /// `backward()` returns (see [fallible hooks](crate::graph#fallible-hooks)).
    ///
    /// # Errors
    ///
    /// [`Error::PostAccumulateGradHookOnNonLeaf`] on a non-leaf;
    /// [`Error::HookWithoutRequiresGrad`] if the leaf does not require grad;
    /// [`Error::ViewRebase`] as [`Tensor::register_hook`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Error, Tensor};
    /// let x = Tensor::scalar(1.0f64).requires_grad_(true)?;
    /// x.try_register_post_accumulate_grad_hook(|t| {
    ///     let g = t.grad().unwrap().item::<f64>()?;
    ///     if g > 5.0 {
    ///         return Err(Error::msg(format!("gradient {g} exceeds the clip threshold")));
    ///     }
    ///     Ok(())
    /// })?;
    /// x.mul_scalar(2.0)?.backward()?;
    /// let err = x.mul_scalar(4.0)?.backward().unwrap_err();
    /// assert_eq!(err.to_string(), "gradient 6 exceeds the clip threshold");
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0); // accumulated before the hook ran
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn try_register_post_accumulate_grad_hook<F>(&self, hook: F) -> Result<HookHandle>
    where
        F: Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    {
        self.add_post_accumulate_grad_hook(Arc::new(hook))
    }

    fn add_post_accumulate_grad_hook(&self, hook: PostAccumulateHook) -> Result<HookHandle> {
        // A stale view that may not be regenerated: PyTorch's error, from its grad_fn accessor.
        if self.is_view() {
            self.try_grad_fn()?;
        }
        let mut meta = self.0.autograd.lock();
        if meta.grad_fn.is_some() {
            return Err(Error::PostAccumulateGradHookOnNonLeaf);
        }
        if !meta.requires_grad {
            return Err(Error::HookWithoutRequiresGrad);
        }
        let id = next_hook_id();
        meta.leaf_hooks
            .get_or_insert_with(Box::default)
            .post_accumulate
            .push((id, hook));
        drop(meta);
        Ok(HookHandle::on_tensor(self, id))
    }
}

enum HookTarget {
    Node(Weak<dyn Node>),
    Tensor(Weak<TensorImpl>),
}

/// A registered hook; [`HookHandle::remove`] unregisters it. Dropping the handle keeps the hook
/// (unlike an RAII guard), as PyTorch's `RemovableHandle` does.
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let x = Tensor::scalar(1.0f64);
/// x.set_requires_grad(true)?;
/// let h = x.register_hook(|g| Some(g.mul_scalar(10.0).unwrap()))?;
/// h.remove();
/// x.mul_scalar(3.0)?.backward()?;
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 3.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct HookHandle {
    id: HookId,
    target: HookTarget,
}

impl HookHandle {
    pub(crate) fn on_node(node: &NodeRef, id: HookId) -> HookHandle {
        HookHandle {
            id,
            target: HookTarget::Node(Arc::downgrade(node.arc())),
        }
    }

    pub(crate) fn on_tensor(t: &Tensor, id: HookId) -> HookHandle {
        HookHandle {
            id,
            target: HookTarget::Tensor(Arc::downgrade(&t.0)),
        }
    }

    /// Unregisters the hook. Safe to call during a backward pass; a no-op if the node or tensor
    /// is gone.
    pub fn remove(self) {
        match &self.target {
            HookTarget::Node(w) => {
                if let Some(node) = w.upgrade() {
                    node.meta().hooks.remove(self.id);
                }
            }
            HookTarget::Tensor(w) => {
                if let Some(t) = w.upgrade() {
                    let mut meta = t.autograd.lock();
                    if let Some(hooks) = meta.leaf_hooks.as_mut() {
                        hooks.tensor.retain(|h| h.0 != self.id);
                        hooks.post_accumulate.retain(|h| h.0 != self.id);
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for HookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookHandle")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
