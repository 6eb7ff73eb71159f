//! Module hooks: the [`Hooked`] wrapper (its docs say how and in which order they run).

use std::fmt;

use autograd_macros::{backward, differentiable, jvp};

use crate::nn::{Forward, Module};
use crate::sync::Ordering;
use crate::sync::atomic::AtomicU64;
use crate::sync::{Arc, Mutex, Weak};
use crate::{Error, Result, Tensor, is_grad_enabled};

/// A forward pre-hook: `(module, input) -> Some(new input)` or `None` to keep it.
type PreHook<M> = Arc<dyn Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A forward hook: `(module, input, output) -> Some(new output)` or `None`.
type PostHook<M> = Arc<dyn Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// Gradients as a node sees them: one per tensor, `None` where none flows.
type Grads = Vec<Option<Tensor>>;
/// A full backward pre-hook: `grad_output -> Some(new grad_output)` or `None`.
type BackwardPreHook = Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Grads>> + Send + Sync>;
/// A full backward hook: `(grad_input, grad_output) -> Some(new grad_input)` or `None`.
type BackwardHook =
    Arc<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Grads>> + Send + Sync>;

/// The hooks of one [`Hooked`] module, each list in registration order with its handle's id.
struct Hooks<M> {
    next_id: AtomicU64,
    forward_pre: Mutex<Vec<(u64, PreHook<M>)>>,
    forward: Mutex<Vec<(u64, PostHook<M>)>>,
    backward_pre: Mutex<Vec<(u64, BackwardPreHook)>>,
    backward: Mutex<Vec<(u64, BackwardHook)>>,
}

/// What a [`ModuleHookHandle`] can remove from: the hook lists, whatever the module type.
trait Removable: Send + Sync {
    fn remove(&self, id: u64);
}

impl<M: 'static> Removable for Hooks<M> {
    fn remove(&self, id: u64) {
        self.forward_pre.lock().retain(|(i, _)| *i != id);
        self.forward.lock().retain(|(i, _)| *i != id);
        self.backward_pre.lock().retain(|(i, _)| *i != id);
        self.backward.lock().retain(|(i, _)| *i != id);
    }
}

/// Unregisters a module hook (PyTorch's `RemovableHandle`). Dropping the handle keeps the hook.
#[derive(Clone)]
pub struct ModuleHookHandle {
    id: u64,
    hooks: Weak<dyn Removable>,
}

impl ModuleHookHandle {
    /// Removes the hook; a no-op when it or its module is already gone.
    pub fn remove(&self) {
        if let Some(hooks) = self.hooks.upgrade() {
            hooks.remove(self.id);
        }
    }
}

impl fmt::Debug for ModuleHookHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModuleHookHandle")
            .field("id", &self.id)
            .finish()
    }
}

/// A module with PyTorch's module hooks: `register_forward_pre_hook`, `register_forward_hook`,
/// `register_full_backward_pre_hook` and `register_full_backward_hook`.
///
/// PyTorch keeps hooks inside every module and runs them in `module(x)`. Here a module is a
/// plain struct and `forward` is its own code, so the hooks live in a wrapper: `Hooked<M>` has
/// `M`'s parameters, names and printout (it is transparent to `state_dict` and `print`), and its
/// [`Forward::forward`] runs the hooks around `M`'s, in PyTorch's order:
///
/// 1. forward pre-hooks, in registration order, each may replace the input;
/// 2. with backward hooks: the input passes through an identity node
///    (`BackwardHookFunctionBackward`, as PyTorch's `BackwardHook`), whose gradient is the
///    gradient with respect to the module's input;
/// 3. `M`'s forward;
/// 4. forward hooks, each may replace the output;
/// 5. with backward hooks: the output passes through an identity node too. When the backward
///    pass reaches it, the backward pre-hooks see (and may replace) the output's gradient; when it
///    reaches the input's node, the full backward hooks see `(grad_input, grad_output)` and may
///    replace `grad_input`. If the input does not require grad, they run at the output with
///    `grad_input = [None]`, as PyTorch's.
///
/// The identity nodes are applied only when grad mode is on and the tensor requires grad. They
/// have no forward derivative (PyTorch's `BackwardHookFunction` is a custom function without
/// `jvp`): with backward hooks, a call on a dual tensor that records fails with PyTorch's
/// [`CustomFunctionJvp`](crate::Error::CustomFunctionJvp) error.
///
/// Each `register_*` returns a [`ModuleHookHandle`] whose [`remove`](ModuleHookHandle::remove)
/// unregisters the hook (PyTorch's `RemovableHandle`).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::nn::{Forward, Hooked, Linear, Module};
/// use autograd_runtime::{DType, Tensor, manual_seed};
///
/// manual_seed(0);
/// let layer = Hooked::new(Linear::new(3, 2)?);
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// layer.register_forward_hook(move |_module, _input, output| {
///     log.lock().unwrap().push(output.shape().to_vec());
///     Ok(None)
/// });
/// // Halve every gradient that reaches the layer's input.
/// layer.register_full_backward_hook(|grad_input, _grad_output| {
///     Ok(Some(grad_input.iter().map(|g| g.as_ref().map(|g| g.mul_scalar(0.5).unwrap())).collect()))
/// });
/// let x = Tensor::ones(&[4, 3], DType::F32)?.requires_grad_(true)?;
/// layer.forward(&x)?.sum()?.backward()?;
/// assert_eq!(*seen.lock().unwrap(), [vec![4, 2]]);
/// let w = layer.inner().weight().sum_dims(&[0], false)?.to_vec::<f32>()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f32>()?[..3], [w[0] * 0.5, w[1] * 0.5, w[2] * 0.5]);
/// assert_eq!(layer.state_dict().keys().collect::<Vec<_>>(), ["weight", "bias"]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Module)]
#[module(transparent)]
pub struct Hooked<M: Module> {
    inner: M,
    #[module(skip)]
    hooks: Arc<Hooks<M>>,
}

impl<M: Module> fmt::Debug for Hooked<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooked")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<M: Module + 'static> Hooked<M> {
    /// `inner` with no hooks yet.
    pub fn new(inner: M) -> Hooked<M> {
        Hooked {
            inner,
            hooks: Arc::new(Hooks {
                next_id: AtomicU64::new(0),
                forward_pre: Mutex::new(Vec::new()),
                forward: Mutex::new(Vec::new()),
                backward_pre: Mutex::new(Vec::new()),
                backward: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// The wrapped module, mutably.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.inner
    }

    /// The wrapped module, its hooks dropped.
    pub fn into_inner(self) -> M {
        self.inner
    }

    fn handle(&self) -> (u64, ModuleHookHandle) {
        // Relaxed: the counter only has to hand out distinct ids; no other memory is published
        // through it.
        let id = self.hooks.next_id.fetch_add(1, Ordering::Relaxed);
        let hooks: Arc<dyn Removable> = self.hooks.clone();
        let handle = ModuleHookHandle {
            id,
            hooks: Arc::downgrade(&hooks),
        };
        (id, handle)
    }

    /// PyTorch's `register_forward_pre_hook`: `hook(module, input)` runs before `forward`;
    /// `Some(t)` replaces the input.
    pub fn register_forward_pre_hook<F>(&self, hook: F) -> ModuleHookHandle
    where
        F: Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        let (id, handle) = self.handle();
        self.hooks.forward_pre.lock().push((id, Arc::new(hook)));
        handle
    }

    /// PyTorch's `register_forward_hook`: `hook(module, input, output)` runs after `forward`;
    /// `Some(t)` replaces the output.
    pub fn register_forward_hook<F>(&self, hook: F) -> ModuleHookHandle
    where
        F: Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        let (id, handle) = self.handle();
        self.hooks.forward.lock().push((id, Arc::new(hook)));
        handle
    }

    /// PyTorch's `register_full_backward_pre_hook`: `hook(grad_output)` runs when the gradient
    /// of the module's output is known; `Some(g)` replaces it.
    pub fn register_full_backward_pre_hook<F>(&self, hook: F) -> ModuleHookHandle
    where
        F: Fn(&[Option<Tensor>]) -> Result<Option<Grads>> + Send + Sync + 'static,
    {
        let (id, handle) = self.handle();
        self.hooks.backward_pre.lock().push((id, Arc::new(hook)));
        handle
    }

    /// PyTorch's `register_full_backward_hook`: `hook(grad_input, grad_output)` runs when the
    /// gradient with respect to the module's input is known; `Some(g)` replaces `grad_input`.
    pub fn register_full_backward_hook<F>(&self, hook: F) -> ModuleHookHandle
    where
        F: Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Grads>>
            + Send
            + Sync
            + 'static,
    {
        let (id, handle) = self.handle();
        self.hooks.backward.lock().push((id, Arc::new(hook)));
        handle
    }
}

/// The identity, recorded as one node whose pre-hook is where a module's backward hooks run
/// (PyTorch's `BackwardHookFunction`). The result shares the input's storage.
#[differentiable(builtin, crate = "crate", name = "BackwardHookFunctionBackward")]
fn backward_hook_identity(x: &Tensor) -> Result<Tensor> {
    Ok(x.detach())
}

#[backward(backward_hook_identity)]
fn backward_hook_identity_backward(grad: &Tensor) -> Result<Tensor> {
    Ok(grad.clone())
}

/// PyTorch's `BackwardHookFunction` is a custom `autograd.Function` without a `jvp`: a module
/// with backward hooks called on dual tensors (when it records) fails with its error.
#[jvp(backward_hook_identity)]
fn backward_hook_identity_jvp(_x_t: &Tensor) -> Result<Tensor> {
    Err(Error::CustomFunctionJvp)
}

/// Runs the full backward hooks in order; each may replace `grad_input`.
fn run_backward_hooks(
    hooks: &[BackwardHook],
    grad_input: Grads,
    grad_output: &Grads,
) -> Result<Grads> {
    let mut grad_input = grad_input;
    for hook in hooks {
        if let Some(new) = hook(&grad_input, grad_output)? {
            grad_input = new;
        }
    }
    Ok(grad_input)
}

impl<M: Forward + 'static> Forward for Hooked<M> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let forward_pre: Vec<PreHook<M>> = self
            .hooks
            .forward_pre
            .lock()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        let mut x = input.clone();
        for hook in &forward_pre {
            if let Some(new) = hook(&self.inner, &x)? {
                x = new;
            }
        }
        let backward: Vec<BackwardHook> = self
            .hooks
            .backward
            .lock()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        let backward_pre: Vec<BackwardPreHook> = self
            .hooks
            .backward_pre
            .lock()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        let with_backward = is_grad_enabled() && !(backward.is_empty() && backward_pre.is_empty());
        // The output's gradient, kept by the output node's pre-hook for the input node's.
        let grad_output: Arc<Mutex<Grads>> = Arc::new(Mutex::new(Vec::new()));
        let input_hooked = with_backward && x.requires_grad();
        let module_input = if input_hooked {
            let alias = backward_hook_identity(&x)?;
            let (hooks, kept) = (backward.clone(), grad_output.clone());
            if let Some(node) = alias.grad_fn() {
                node.try_register_prehook(move |grads| {
                    let grad_output = std::mem::take(&mut *kept.lock());
                    run_backward_hooks(&hooks, grads.to_vec(), &grad_output).map(Some)
                });
            }
            alias
        } else {
            x.clone()
        };
        let mut y = self.inner.forward(&module_input)?;
        let forward: Vec<PostHook<M>> = self
            .hooks
            .forward
            .lock()
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for hook in &forward {
            if let Some(new) = hook(&self.inner, &x, &y)? {
                y = new;
            }
        }
        if with_backward && y.requires_grad() {
            y = backward_hook_identity(&y)?;
            if let Some(node) = y.grad_fn() {
                node.try_register_prehook(move |grads| {
                    let mut grads = grads.to_vec();
                    for hook in &backward_pre {
                        if let Some(new) = hook(&grads)? {
                            grads = new;
                        }
                    }
                    if input_hooked {
                        *grad_output.lock() = grads.clone();
                    } else {
                        // No gradient reaches the input: the hooks run here, with no grad_input.
                        run_backward_hooks(&backward, vec![None], &grads)?;
                    }
                    Ok(Some(grads))
                });
            }
        }
        Ok(y)
    }
}
