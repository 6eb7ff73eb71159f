//! Backward hooks: tensor hooks, retains_grad hooks, node pre- and post-hooks, post-accumulate-grad
//! hooks, and the removable [`HookHandle`] (B18–B21).
//! Every hook kind has a fallible `try_` twin: see [the module docs of `graph`](super#fallible-hooks).
//!
//! Hooks on a non-leaf tensor are stored on its `grad_fn` under the tensor's `output_nr`, so a hook
//! registered before an in-place op stays bound to the old node (B21). Hooks on a leaf live in the
//! leaf's autograd metadata and are run by its `AccumulateGrad`.

use crate::sync::Ordering;
use crate::sync::atomic::AtomicBool;
use crate::sync::statics::AtomicU64;

use super::NodeRef;
use crate::sync::{Arc, Mutex, Weak};
use crate::tensor::TensorImpl;
use crate::{Node, Result, Tensor};

pub(crate) type TensorHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
pub(crate) type PreHook =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
pub(crate) type PostHook = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;
pub(crate) type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// Identifies one registered hook (unique per process).
pub(crate) type HookId = u64;

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

/// Leaf-tensor hooks, kept in the leaf's autograd metadata.
#[derive(Default, Clone)]
pub(crate) struct LeafHooks {
    pub(crate) tensor: Vec<(HookId, TensorHook)>,
    pub(crate) post_accumulate: Vec<(HookId, PostAccumulateHook)>,
}

impl LeafHooks {
    pub(crate) fn add_tensor(&mut self, hook: TensorHook) -> HookId {
        let id = next_hook_id();
        self.tensor.push((id, hook));
        id
    }

    pub(crate) fn add_post_accumulate(&mut self, hook: PostAccumulateHook) -> HookId {
        let id = next_hook_id();
        self.post_accumulate.push((id, hook));
        id
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
