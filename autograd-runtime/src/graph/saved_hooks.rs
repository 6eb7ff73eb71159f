//! Saved-tensor hooks (`torch.autograd.graph.saved_tensors_hooks`, B38): while a guard is alive,
//! every tensor a node saves is passed to `pack`, and what `pack` returned is passed to `unpack`
//! each time backward needs the tensor — to offload activations, compress them, or count uses.
//! Hooks are per thread; the innermost guard wins. A backward pass carries the hooks of the thread
//! that started it to every thread that runs its nodes (PyTorch's `ThreadLocalState`), so nodes
//! recorded by a `create_graph` pass on a device thread save their tensors through them too.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use crate::sync::Arc;
use crate::{Result, Tensor};

/// What a pack hook produced, type-erased.
pub(crate) type Packed = Box<dyn Any + Send + Sync>;

/// A pack hook, type-erased.
type PackFn = Box<dyn Fn(&Tensor) -> Result<Packed> + Send + Sync>;
/// An unpack hook, type-erased.
type UnpackFn = Box<dyn Fn(&Packed) -> Result<Tensor> + Send + Sync>;

/// One registered `(pack, unpack)` pair (infallible hooks are stored wrapped in `Ok`).
pub(crate) struct HookPair {
    pack: PackFn,
    unpack: UnpackFn,
}

impl HookPair {
    /// Runs the pack hook with hooks disabled (so ops inside it do not pack recursively) and
    /// recording off.
    pub(crate) fn pack(&self, t: &Tensor) -> Result<Packed> {
        let _suspended = Suspended::new();
        let _g = crate::no_grad();
        (self.pack)(t)
    }

    /// Runs the unpack hook with hooks disabled.
    pub(crate) fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        let _suspended = Suspended::new();
        (self.unpack)(packed)
    }
}

/// One level of the hooks stack: the pair its guard installed and the levels below it. The stack
/// is persistent (levels are shared, never mutated), so a backward pass captures the whole stack
/// of its caller with one reference count, and the engine tells whether a thread already has a
/// pass's stack installed by comparing two pointers (`engine/thread_local_state.rs`).
pub(crate) struct HookFrame {
    pair: Arc<HookPair>,
    below: HookStack,
}

/// A hooks stack: its top level, `None` when no hooks are installed.
pub(crate) type HookStack = Option<Arc<HookFrame>>;

thread_local! {
    /// This thread's hooks stack: the guards opened on it, or the stack of the backward pass whose
    /// node is running on it (installed by the engine, as PyTorch's `ThreadLocalStateGuard`).
    /// Written only through [`set_stack`].
    static STACK: RefCell<HookStack> = const { RefCell::new(None) };
    /// [`address`] of `STACK`, kept equal to it by [`set_stack`]: the engine compares it with a
    /// pass's stack before every node without borrowing `STACK` (a plain thread-local load, no
    /// destructor registration to check).
    static TOP: Cell<usize> = const { Cell::new(0) };
}

/// Identifies a stack: the address of its top level, 0 for the empty stack. Two stacks alive at
/// once have the same address only if they are the same stack (the address is that of a live
/// allocation each holds), so comparing addresses of live stacks is comparing stacks.
pub(crate) fn address(stack: &HookStack) -> usize {
    stack.as_ref().map_or(0, |top| Arc::as_ptr(top) as usize)
}

/// Replaces this thread's stack, returning the old one.
fn set_stack(new: HookStack) -> HookStack {
    TOP.with(|t| t.set(address(&new)));
    STACK.with(|s| s.replace(new))
}

/// The innermost hooks of this thread, if any.
pub(crate) fn current() -> Option<Arc<HookPair>> {
    STACK.with(|s| s.borrow().as_ref().map(|f| f.pair.clone()))
}

/// Whether saved-tensor hooks are active on this thread: a plain thread-local load, no handle
/// on them taken.
pub(crate) fn has_hooks() -> bool {
    TOP.with(Cell::get) != 0
}

/// This thread's whole hooks stack (what a backward pass started here carries to its nodes).
pub(crate) fn current_stack() -> HookStack {
    STACK.with(|s| s.borrow().clone())
}

/// The stack that [`install`] replaced, to put back with [`RestoreStack::restore`] (dropping it
/// instead leaves the installed stack in place).
pub(crate) struct RestoreStack(HookStack);

impl RestoreStack {
    /// Makes the replaced stack this thread's stack again.
    #[cold]
    #[inline(never)]
    pub(crate) fn restore(self) {
        set_stack(self.0);
    }
}

/// Makes `stack` (whose [`address`] is `addr`) this thread's hooks stack until the returned value
/// is dropped; `None` — nothing to restore, nothing written — when the thread already has it, as
/// it does for every node a pass runs on the thread that started it.
#[inline]
pub(crate) fn install(stack: &HookStack, addr: usize) -> Option<RestoreStack> {
    if TOP.with(Cell::get) == addr {
        return None;
    }
    Some(install_slow(stack))
}

#[cold]
#[inline(never)]
fn install_slow(stack: &HookStack) -> RestoreStack {
    RestoreStack(set_stack(stack.clone()))
}

/// Makes `stack` (whose [`address`] is `addr`) this thread's hooks stack if it is not already,
/// dropping whatever stack was there.
#[inline(always)]
pub(crate) fn ensure(stack: &HookStack, addr: usize) {
    if TOP.with(Cell::get) != addr {
        replace_slow(stack);
    }
}

#[cold]
#[inline(never)]
fn replace_slow(stack: &HookStack) {
    set_stack(stack.clone());
}

/// Hides the hook stack while a hook runs.
struct Suspended(HookStack);

impl Suspended {
    fn new() -> Suspended {
        Suspended(set_stack(None))
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        set_stack(self.0.take());
    }
}

/// Removes its hooks when dropped. Not `Send`: hooks are per thread.
#[must_use = "the hooks are removed as soon as the guard is dropped"]
pub struct SavedTensorsHooksGuard {
    _not_send: PhantomData<*const ()>,
}

impl Drop for SavedTensorsHooksGuard {
    fn drop(&mut self) {
        let below = STACK.with(|s| s.borrow().as_ref().and_then(|top| top.below.clone()));
        set_stack(below);
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
    try_saved_tensors_hooks(move |t: &Tensor| Ok(pack(t)), move |p: &P| Ok(unpack(p)))
}

/// [`saved_tensors_hooks`] for hooks that can fail (see
/// [fallible hooks](crate::graph#fallible-hooks)). An `Err` from `unpack` is the error of the
/// node that needed the tensor: it stops the backward pass and is what `backward()`/`grad()`
/// returns. An `Err` from `pack` is the error of the forward op that saves the tensor, as in
/// PyTorch (nothing is recorded); a `#[differentiable]` forward returning a bare `Tensor` cannot
/// return it, and its saved tensor returns it when used instead.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{try_saved_tensors_hooks, Error, Tensor};
/// // Offload saved tensors to a store keyed by a number; a missing entry is an error.
/// let store: Arc<Mutex<HashMap<usize, Tensor>>> = Arc::default();
/// let (s1, s2) = (store.clone(), store.clone());
/// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
/// let y = {
///     let _hooks = try_saved_tensors_hooks(
///         move |t: &Tensor| {
///             let mut s = s1.lock().unwrap();
///             let key = s.len();
///             s.insert(key, t.copy()?);
///             Ok(key)
///         },
///         move |key: &usize| {
///             s2.lock().unwrap().get(key).cloned().ok_or_else(|| Error::msg(format!("saved tensor {key} was evicted")))
///         },
///     );
///     x.exp()?
/// };
/// store.lock().unwrap().clear();
/// let err = y.backward().unwrap_err();
/// assert_eq!(err.to_string(), "saved tensor 0 was evicted");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn try_saved_tensors_hooks<P, F, G>(pack: F, unpack: G) -> SavedTensorsHooksGuard
where
    P: Any + Send + Sync,
    F: Fn(&Tensor) -> Result<P> + Send + Sync + 'static,
    G: Fn(&P) -> Result<Tensor> + Send + Sync + 'static,
{
    let pair = HookPair {
        pack: Box::new(move |t| Ok(Box::new(pack(t)?) as Packed)),
        unpack: Box::new(move |p| {
            let p = p
                .downcast_ref::<P>()
                .expect("invariant: a pair's unpack receives what its own pack returned");
            unpack(p)
        }),
    };
    let below = current_stack();
    set_stack(Some(Arc::new(HookFrame {
        pair: Arc::new(pair),
        below,
    })));
    SavedTensorsHooksGuard {
        _not_send: PhantomData,
    }
}
