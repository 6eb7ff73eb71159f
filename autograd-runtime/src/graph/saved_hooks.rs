//! Saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks`, B38): while a guard is alive,
//! every tensor a node saves is passed to `pack`, and what `pack` returned is passed to `unpack`
//! each time backward needs the tensor — to offload activations, compress them, or count uses.
//! Hooks are per thread; the innermost guard wins.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;

use crate::sync::Arc;
use crate::Tensor;

/// What a pack hook produced, type-erased.
pub(crate) type Packed = Box<dyn Any + Send + Sync>;

/// One registered `(pack, unpack)` pair.
pub(crate) struct HookPair {
    pack: Box<dyn Fn(&Tensor) -> Packed + Send + Sync>,
    unpack: Box<dyn Fn(&Packed) -> Tensor + Send + Sync>,
}

impl HookPair {
    /// Runs the pack hook with hooks disabled (so ops inside it do not pack recursively) and
    /// recording off.
    pub(crate) fn pack(&self, t: &Tensor) -> Packed {
        let _suspended = Suspended::new();
        let _g = crate::no_grad();
        (self.pack)(t)
    }

    /// Runs the unpack hook with hooks disabled.
    pub(crate) fn unpack(&self, packed: &Packed) -> Tensor {
        let _suspended = Suspended::new();
        (self.unpack)(packed)
    }
}

thread_local! {
    static STACK: RefCell<Vec<Arc<HookPair>>> = const { RefCell::new(Vec::new()) };
}

/// The innermost hooks of this thread, if any.
pub(crate) fn current() -> Option<Arc<HookPair>> {
    STACK.with(|s| s.borrow().last().cloned())
}

/// Hides the hook stack while a hook runs.
struct Suspended(Vec<Arc<HookPair>>);

impl Suspended {
    fn new() -> Suspended {
        Suspended(STACK.with(|s| std::mem::take(&mut *s.borrow_mut())))
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        STACK.with(|s| *s.borrow_mut() = std::mem::take(&mut self.0));
    }
}

/// Removes its hooks when dropped. Not `Send`: hooks are per thread.
#[must_use = "the hooks are removed as soon as the guard is dropped"]
pub struct SavedTensorsHooksGuard {
    _not_send: PhantomData<*const ()>,
}

impl Drop for SavedTensorsHooksGuard {
    fn drop(&mut self) {
        STACK.with(|s| s.borrow_mut().pop());
    }
}

impl std::fmt::Debug for SavedTensorsHooksGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedTensorsHooksGuard")
    }
}

/// Installs `pack` / `unpack` for tensors saved on this thread until the guard is dropped (B38).
///
/// `pack` runs once when a node saves a tensor (in the forward pass); `unpack` runs each time the
/// backward uses it. Version checks are skipped for hooked tensors: the hooks own the data.
/// Both run with hooks disabled, `pack` also with recording off.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// use autograd_runtime::{saved_tensors_hooks, Tensor};
/// let packs = Arc::new(AtomicUsize::new(0));
/// let p = packs.clone();
/// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
/// let y = {
///     // "Offload" saved tensors as plain vectors, restore them on use.
///     let _hooks = saved_tensors_hooks(
///         move |t: &Tensor| { p.fetch_add(1, Ordering::SeqCst); (t.to_vec::<f64>().unwrap(), t.shape().to_vec()) },
///         |(v, shape): &(Vec<f64>, Vec<usize>)| Tensor::from_vec(v.clone(), shape).unwrap(),
///     );
///     x.mul(&x)?
/// };
/// assert_eq!(packs.load(Ordering::SeqCst), 2); // MulBackward0 saved both operands
/// y.backward()?;
/// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn saved_tensors_hooks<P, F, G>(pack: F, unpack: G) -> SavedTensorsHooksGuard
where
    P: Any + Send + Sync,
    F: Fn(&Tensor) -> P + Send + Sync + 'static,
    G: Fn(&P) -> Tensor + Send + Sync + 'static,
{
    let pair = HookPair {
        pack: Box::new(move |t| Box::new(pack(t)) as Packed),
        unpack: Box::new(move |p| {
            let p = p
                .downcast_ref::<P>()
                .expect("invariant: a pair's unpack receives what its own pack returned");
            unpack(p)
        }),
    };
    STACK.with(|s| s.borrow_mut().push(Arc::new(pair)));
    SavedTensorsHooksGuard {
        _not_send: PhantomData,
    }
}
