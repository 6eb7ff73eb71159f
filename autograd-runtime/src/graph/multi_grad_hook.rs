//! Multi-grad hooks (`torch.autograd.graph.register_multi_grad_hook`, B22): one callback over the
//! gradients of several tensors, fired once per backward pass — after the last of them was
//! computed (`All`) or on the first (`Any`). State is kept per graph task, so concurrent passes on
//! different threads do not mix.

use std::collections::HashMap;

use crate::sync::{Arc, Mutex};
use crate::{
    HookHandle, Result, Tensor, current_graph_task_id, queue_callback, will_engine_execute_node,
};

/// When a multi-grad hook fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiGradMode {
    /// Once per pass, after the gradients of all the tensors the pass reaches were computed; the
    /// callback gets `None` for tensors the pass does not reach.
    All,
    /// Once per pass, on the first gradient computed; the callback gets that gradient at its
    /// tensor's index and `None` elsewhere.
    Any,
}

#[derive(Default)]
struct PassState {
    calls: usize,
    expected: usize,
    grads: Vec<Option<Tensor>>,
    fired: bool,
}

type Callback = Arc<dyn Fn(&[Option<Tensor>]) -> Result<()> + Send + Sync>;

/// Handle to a multi-grad hook; [`MultiGradHookHandle::remove`] unregisters it from every tensor.
#[derive(Debug)]
pub struct MultiGradHookHandle {
    handles: Vec<HookHandle>,
}

impl MultiGradHookHandle {
    /// Unregisters the hook from all its tensors.
    pub fn remove(self) {
        self.handles.into_iter().for_each(HookHandle::remove);
    }
}

/// Registers `hook` over the gradients of `tensors` (B22).
///
/// # Errors
///
/// [`Error::HookWithoutRequiresGrad`](crate::Error::HookWithoutRequiresGrad) if a tensor does
/// not require grad; [`Error::ViewRebase`](crate::Error::ViewRebase) as
/// [`Tensor::register_hook`] for a stale view of `split`/`chunk`.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use autograd_runtime::{register_multi_grad_hook, MultiGradMode, Tensor};
/// let a = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let b = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// let _h = register_multi_grad_hook(&[a.clone(), b.clone()], MultiGradMode::All, move |grads| {
///     s.lock().unwrap().push(grads.iter().map(|g| g.as_ref().map(|g| g.item::<f64>().unwrap())).collect::<Vec<_>>());
/// })?;
/// a.mul_scalar(3.0)?.add(&b.mul_scalar(5.0)?)?.backward()?;
/// assert_eq!(*seen.lock().unwrap(), vec![vec![Some(3.0), Some(5.0)]]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn register_multi_grad_hook<F>(
    tensors: &[Tensor],
    mode: MultiGradMode,
    hook: F,
) -> Result<MultiGradHookHandle>
where
    F: Fn(&[Option<Tensor>]) + Send + Sync + 'static,
{
    add(
        tensors,
        mode,
        Arc::new(move |grads: &[Option<Tensor>]| {
            hook(grads);
            Ok(())
        }),
    )
}

/// [`register_multi_grad_hook`] for a hook that can fail: an `Err` it returns stops the backward
/// pass in which it fires and is what `backward()`/`grad()` returns (see
/// [fallible hooks](crate::graph#fallible-hooks)).
///
/// # Errors
///
/// [`Error::HookWithoutRequiresGrad`](crate::Error::HookWithoutRequiresGrad) if a tensor does
/// not require grad; [`Error::ViewRebase`](crate::Error::ViewRebase) as
/// [`Tensor::register_hook`] for a stale view of `split`/`chunk`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{try_register_multi_grad_hook, Error, MultiGradMode, Tensor};
/// let a = Tensor::scalar(1.0f64).requires_grad_(true)?;
/// let b = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// // Fail the pass unless both gradients agree in sign.
/// let _h = try_register_multi_grad_hook(&[a.clone(), b.clone()], MultiGradMode::All, |grads| {
///     let signs = grads.iter().flatten().map(|g| Ok(g.item::<f64>()?.signum())).collect::<Result<Vec<_>, Error>>()?;
///     if signs.windows(2).any(|w| w[0] != w[1]) {
///         return Err(Error::msg("gradients disagree in sign"));
///     }
///     Ok(())
/// })?;
/// a.mul_scalar(3.0)?.add(&b.mul_scalar(5.0)?)?.backward()?;
/// let err = a.mul_scalar(3.0)?.sub(&b.mul_scalar(5.0)?)?.backward().unwrap_err();
/// assert_eq!(err.to_string(), "gradients disagree in sign");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn try_register_multi_grad_hook<F>(
    tensors: &[Tensor],
    mode: MultiGradMode,
    hook: F,
) -> Result<MultiGradHookHandle>
where
    F: Fn(&[Option<Tensor>]) -> Result<()> + Send + Sync + 'static,
{
    add(tensors, mode, Arc::new(hook))
}

fn add(tensors: &[Tensor], mode: MultiGradMode, hook: Callback) -> Result<MultiGradHookHandle> {
    let passes: Arc<Mutex<HashMap<u64, PassState>>> = Arc::default();
    // The node each tensor's gradient passes through: its grad_fn, or a leaf's AccumulateGrad.
    // A stale view that may not be regenerated is refused before any hook is registered.
    let nodes: Arc<Vec<Option<crate::Edge>>> = Arc::new(
        tensors
            .iter()
            .map(Tensor::try_gradient_edge)
            .collect::<Result<_>>()?,
    );
    let n = tensors.len();
    let mut handles = Vec::with_capacity(n);
    for (idx, t) in tensors.iter().enumerate() {
        let (hook, passes, nodes) = (hook.clone(), passes.clone(), nodes.clone());
        let h = t.try_register_hook(move |grad| {
            let Some(id) = current_graph_task_id() else {
                return Ok(None);
            };
            let fire = {
                let mut guard = passes.lock();
                let first = !guard.contains_key(&id);
                let state = guard.entry(id).or_default();
                if first {
                    state.grads = vec![None; n];
                    state.expected = nodes
                        .iter()
                        .flatten()
                        .filter(|e| will_engine_execute_node(&e.node).unwrap_or(false))
                        .count();
                    // Forget this pass once it ends (also when it fails before firing).
                    let passes = passes.clone();
                    let _ = queue_callback(move || {
                        passes.lock().remove(&id);
                        Ok(())
                    });
                }
                state.calls += 1;
                state.grads[idx] = Some(grad.clone());
                match mode {
                    MultiGradMode::All if !state.fired && state.calls >= state.expected => {
                        state.fired = true;
                        Some(std::mem::take(&mut state.grads))
                    }
                    MultiGradMode::Any if !state.fired => {
                        state.fired = true;
                        let mut only = vec![None; n];
                        only[idx] = Some(grad.clone());
                        Some(only)
                    }
                    _ => None,
                }
            };
            if let Some(grads) = fire {
                hook(&grads)?;
            }
            Ok(None)
        })?;
        handles.push(h);
    }
    Ok(MultiGradHookHandle { handles })
}
