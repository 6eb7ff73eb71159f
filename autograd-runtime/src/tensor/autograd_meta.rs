//! A tensor's autograd state (requires_grad, grad, grad_fn + output_nr, retains_grad, hooks, the
//! weak link to a leaf's AccumulateGrad) and the public methods that read and change it.
//!
//! Hooks: a leaf's hooks are *stored* here ([`LeafHooks`], with the hook types), but registering,
//! removing and running hooks is the graph's (`graph/hooks.rs`, which also holds the hook front
//! doors of `Tensor`: `register_hook`, `retain_grad`, ...; `graph/accumulate_grad.rs`). The
//! dependency goes one way, as the floors of `DESIGN.md` put the graph above the tensor: those
//! modules build on this state, and `tensor/` names nothing of `graph::hooks` (moving a
//! retains_grad hook to a new grad_fn goes through [`NodeMeta`](crate::graph::NodeMeta)).

use crate::sync::statics::AtomicBool;

use super::Tensor;
use crate::graph::{AccumulateGrad, Edge, NodeRef};
use crate::sync::{Arc, Weak};
use crate::{Error, Result};

/// A tensor hook: called with the gradient of its tensor; `Some(g)` replaces it.
pub(crate) type TensorHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A post-accumulate-grad hook: called with its leaf after the leaf's `.grad` was updated.
pub(crate) type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// Identifies one registered hook (unique per process; `graph/hooks.rs` hands them out).
pub(crate) type HookId = u64;

/// Leaf-tensor hooks, kept in the leaf's autograd metadata: registered and removed by
/// `graph/hooks.rs`, run by the leaf's `AccumulateGrad`.
#[derive(Default, Clone)]
pub(crate) struct LeafHooks {
    pub(crate) tensor: Vec<(HookId, TensorHook)>,
    pub(crate) post_accumulate: Vec<(HookId, PostAccumulateHook)>,
}

/// The autograd half of a tensor. Locked briefly by the tensor's methods and by AccumulateGrad.
#[derive(Default)]
pub(crate) struct AutogradMeta {
    /// For leaves: whether gradients are accumulated into `grad`. Non-leaves require grad iff they
    /// have a `grad_fn`.
    pub(crate) requires_grad: bool,
    /// The accumulated gradient (leaves, and non-leaves that retain their grad).
    pub(crate) grad: Option<Tensor>,
    /// The node that computes this tensor's gradient contribution to its inputs.
    pub(crate) grad_fn: Option<NodeRef>,
    /// Which output of `grad_fn` this tensor is.
    pub(crate) output_nr: usize,
    /// A leaf's AccumulateGrad, held weakly (the node holds the leaf strongly; B16).
    pub(crate) grad_accumulator: Option<Weak<AccumulateGrad>>,
    /// Whether `retain_grad()` was called on this non-leaf.
    pub(crate) retains_grad: bool,
    /// Tensor hooks and post-accumulate-grad hooks of a leaf; boxed on first registration, so
    /// the many tensors without hooks (every gradient) stay small and cheap to build.
    pub(crate) leaf_hooks: Option<Box<LeafHooks>>,
    /// Set by `detach_()` on a tensor that had a grad_fn: a node that saved it must refuse to use
    /// it (B15).
    pub(crate) detached_in_place: bool,
    /// The tangent forward-mode AD carries for this tensor at a dual level (`forward_ad/`);
    /// boxed, as almost no tensor has one.
    pub(crate) forward_grad: Option<Box<crate::forward_ad::ForwardGrad>>,
}

impl Tensor {
    /// Whether gradients flow to this tensor: a leaf with `requires_grad` set, or the result of a
    /// recorded op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f32);
    /// assert!(!x.requires_grad());
    /// x.set_requires_grad(true)?;
    /// assert!(x.exp()?.requires_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn requires_grad(&self) -> bool {
        let meta = self.0.autograd.lock();
        meta.requires_grad
            || meta.grad_fn.is_some()
            // A view requires grad when its base does (PyTorch's DifferentiableViewMeta), even
            // one taken before the base started to, by an in-place op.
            || self.view_base().is_some_and(Tensor::requires_grad)
    }

    /// Whether this tensor has autograd state of its own: a `grad_fn`, or `requires_grad` set on
    /// it as a leaf (unlike [`Tensor::requires_grad`], not through a view's base). For the
    /// checks the macros generate.
    #[doc(hidden)]
    pub fn has_history(&self) -> bool {
        let meta = self.0.autograd.lock();
        meta.requires_grad || meta.grad_fn.is_some()
    }

    /// Sets whether this leaf accumulates gradients.
    ///
    /// # Errors
    ///
    /// [`Error::RequiresGradOnNonLeaf`] for `false` on a tensor that has a `grad_fn` (`true` is a
    /// no-op there: it requires grad already); [`Error::InferenceTensorRequiresGrad`] for `true`
    /// on an inference tensor outside inference mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f32);
    /// x.set_requires_grad(true)?;
    /// assert!(x.exp()?.set_requires_grad(false).is_err());
    /// x.exp()?.set_requires_grad(true)?; // a no-op on a non-leaf
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if requires_grad && !self.dtype().is_floating_point() {
            return Err(Error::RequiresGradNonFloat);
        }
        if requires_grad && self.is_inference() && !crate::is_inference_mode_enabled() {
            return Err(Error::InferenceTensorRequiresGrad);
        }
        let mut meta = self.0.autograd.lock();
        if meta.grad_fn.is_some() {
            // A non-leaf requires grad already: asking for it again is a no-op, as in PyTorch.
            return if requires_grad {
                Ok(())
            } else {
                Err(Error::RequiresGradOnNonLeaf)
            };
        }
        meta.requires_grad = requires_grad;
        Ok(())
    }

    /// Builder-style [`Tensor::set_requires_grad`] for fresh leaves.
    ///
    /// # Errors
    ///
    /// As [`Tensor::set_requires_grad`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let w = Tensor::scalar(0.5f64).requires_grad_(true)?;
    /// assert!(w.requires_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn requires_grad_(self, requires_grad: bool) -> Result<Tensor> {
        self.set_requires_grad(requires_grad)?;
        Ok(self)
    }

    /// Whether this tensor is a leaf: it has no `grad_fn` (created by the user, or by an op that
    /// was not recorded).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f32).requires_grad_(true)?;
    /// assert!(x.is_leaf());
    /// assert!(!x.exp()?.is_leaf());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn is_leaf(&self) -> bool {
        self.grad_fn().is_none()
    }

    /// The accumulated gradient: set on leaves by `backward()`, and on non-leaves that called
    /// [`Tensor::retain_grad`]. Reading it on another non-leaf warns once, as PyTorch does.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// assert!(x.grad().is_none());
    /// x.mul(&x)?.backward()?;
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 6.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn grad(&self) -> Option<Tensor> {
        let meta = self.0.autograd.lock();
        if meta.grad_fn.is_some() && !meta.retains_grad && meta.grad.is_none() {
            warn_non_leaf_grad_once();
        }
        meta.grad.clone()
    }

    /// Replaces the accumulated gradient (`x.grad = g`; `None` resets it). The gradient is
    /// checked as PyTorch's setter checks it, so that the next backward can accumulate into it:
    /// same dtype, same device, same shape (its strides are free, and so is whether it requires
    /// grad). Any tensor may be given a gradient, a leaf or not, requiring grad or not.
    ///
    /// # Errors
    ///
    /// In PyTorch's order: [`Error::GradAssignedToItself`] for the tensor itself,
    /// [`Error::AssignedGradDType`], [`Error::AssignedGradDevice`], [`Error::AssignedGradSize`].
    /// The `.grad` is left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let x = Tensor::scalar(3.0f64).requires_grad_(true)?;
    /// x.mul(&x)?.backward()?;
    /// x.set_grad(None)?;
    /// assert!(x.grad().is_none());
    ///
    /// let w = Tensor::zeros(&[3], DType::F32)?.requires_grad_(true)?;
    /// w.set_grad(Some(Tensor::ones(&[3], DType::F32)?))?;
    /// let err = w.set_grad(Some(Tensor::ones(&[2, 3], DType::F32)?)).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "attempting to assign a gradient of size '[2, 3]' to a tensor of size '[3]'. \
    ///      Please ensure that the gradient and the tensor are the same size"
    /// );
    /// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, [1.0, 1.0, 1.0]); // unchanged
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            self.check_assigned_grad(g)?;
        }
        let old = std::mem::replace(&mut self.0.autograd.lock().grad, grad);
        // The old gradient is dropped unlocked: it may be the last handle of a large tree.
        drop(old);
        Ok(())
    }

    /// Drops the accumulated gradient (`set_grad(None)`, which cannot fail): for `zero_grad`.
    pub(crate) fn clear_grad(&self) {
        let old = self.0.autograd.lock().grad.take();
        drop(old);
    }

    /// PyTorch's `THPVariable_set_grad` checks, in its order.
    fn check_assigned_grad(&self, grad: &Tensor) -> Result<()> {
        if Arc::ptr_eq(&*self.0, &*grad.0) {
            return Err(Error::GradAssignedToItself);
        }
        if grad.dtype() != self.dtype() {
            return Err(Error::AssignedGradDType {
                grad: grad.dtype(),
                tensor: self.dtype(),
            });
        }
        if grad.device() != self.device() {
            return Err(Error::AssignedGradDevice {
                grad: grad.device(),
                tensor: self.device(),
            });
        }
        if grad.shape() != self.shape() {
            return Err(Error::AssignedGradSize {
                grad: grad.shape().to_vec(),
                tensor: self.shape().to_vec(),
            });
        }
        Ok(())
    }

    /// The node that computes this tensor's gradient contributions, or `None` for leaves.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(1.0f32).requires_grad_(true)?;
    /// assert!(x.grad_fn().is_none());
    /// assert_eq!(x.exp()?.grad_fn().unwrap().name(), "ExpBackward0");
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    ///
    /// A view's grad_fn is regenerated when its base, or another view of that base, was modified
    /// in place since it was set: an `AsStridedBackward0` over the base's current history, as
    /// PyTorch does. Where PyTorch refuses that (a view of a multi-output op such as `split`, or
    /// one made under `no_grad`) the node returned fails with PyTorch's error when run; ops given
    /// such a view fail at once.
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, 1.0, 1.0], &[3])?.requires_grad_(true)?;
    /// let z = x.mul_scalar(1.0)?;
    /// let y = z.narrow(0, 0, 1)?;
    /// assert_eq!(y.grad_fn().unwrap().name(), "SliceBackward0");
    /// z.mul_(&Tensor::scalar(2.0f64))?; // y sees the new value, and the new history
    /// assert_eq!(y.grad_fn().unwrap().name(), "AsStridedBackward0");
    /// y.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn grad_fn(&self) -> Option<NodeRef> {
        let mut meta = self.0.autograd.lock();
        match &self.0.view {
            None => meta.grad_fn.clone(),
            Some(view) => match self.view_grad_fn_locked(view, &mut meta) {
                Ok(f) => f,
                Err(e) => Some(crate::graph::copy_slices::ErrorNode::node(e, self)),
            },
        }
    }

    /// Which output of [`Tensor::grad_fn`] this tensor is.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.requires_grad_(true)?;
    /// let parts = x.chunk(2, 0)?;
    /// assert_eq!(parts[1].output_nr(), 1);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn output_nr(&self) -> usize {
        self.0.autograd.lock().output_nr
    }

    /// Whether [`Tensor::retain_grad`] was called on this non-leaf.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let h = x.exp()?;
    /// h.retain_grad()?;
    /// assert!(h.retains_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn retains_grad(&self) -> bool {
        self.0.autograd.lock().retains_grad
    }

    /// A tensor sharing this one's storage and version counter, cut from the graph: no
    /// `grad_fn`, `requires_grad == false` (B32).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let z = x.add(&x.mul_scalar(2.0)?.detach())?;
    /// z.backward()?;
    /// assert_eq!(x.grad().unwrap().item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn detach(&self) -> Tensor {
        Tensor::from_parts(Arc::clone(&self.0.storage), self.0.layout.clone())
    }

    /// Detaches this tensor from the graph in place (PyTorch's `detach_()`): it becomes a leaf
    /// that does not require grad. A node that saved it as an input refuses to use it afterwards.
    ///
    /// # Errors
    ///
    /// [`Error::DetachViewInPlace`] on a view.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let h = x.mul_scalar(3.0)?;
    /// h.detach_()?;
    /// assert!(h.is_leaf() && !h.requires_grad());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn detach_(&self) -> Result<&Tensor> {
        if self.is_view() {
            return Err(Error::DetachViewInPlace);
        }
        let mut meta = self.0.autograd.lock();
        let old = meta.grad_fn.take();
        if old.is_some() {
            meta.detached_in_place = true;
        }
        meta.output_nr = 0;
        meta.requires_grad = false;
        drop(meta);
        // The old grad_fn is dropped unlocked, as in `set_grad_fn`: it may be the last handle
        // of a graph whose saved values run user `Drop` code.
        drop(old);
        Ok(self)
    }

    pub(crate) fn was_detached_in_place(&self) -> bool {
        self.0.autograd.lock().detached_in_place
    }

    // ----- crate-internal graph plumbing ----------------------------------------------------------

    /// Where gradients for this tensor go: `(grad_fn, output_nr)`, or the leaf's AccumulateGrad
    /// (created on demand), or `None` if it does not require grad.
    ///
    /// For a view that may not be rebased (see [`Tensor::grad_fn`]), an edge to a node that fails
    /// with PyTorch's error when run; `try_gradient_edge` reports it at once instead.
    ///
    /// Small enough to inline into an op's recording code; views and new AccumulateGrads are out
    /// of line.
    #[inline]
    pub(crate) fn gradient_edge(&self) -> Option<Edge> {
        if self.is_view() {
            return self.view_gradient_edge();
        }
        let mut meta = self.0.autograd.lock();
        if let Some(f) = &meta.grad_fn {
            return Some(Edge::new(f.clone(), meta.output_nr));
        }
        if !meta.requires_grad {
            return None;
        }
        Some(Edge::new(self.grad_accumulator_locked(&mut meta), 0))
    }

    /// [`Tensor::gradient_edge`] of a view (out of line: graphs without views never call it).
    #[inline(never)]
    fn view_gradient_edge(&self) -> Option<Edge> {
        self.try_gradient_edge().unwrap_or_else(|e| {
            Some(Edge::new(
                crate::graph::copy_slices::ErrorNode::node(e, self),
                0,
            ))
        })
    }

    /// The leaf's AccumulateGrad, created if it does not exist (PyTorch's `grad_accumulator()`).
    pub(crate) fn grad_accumulator_locked(&self, meta: &mut AutogradMeta) -> NodeRef {
        if let Some(acc) = meta.grad_accumulator.as_ref().and_then(Weak::upgrade) {
            return NodeRef::new(acc);
        }
        let acc = Arc::new(AccumulateGrad::new(self.clone()));
        meta.grad_accumulator = Some(Arc::downgrade(&acc));
        NodeRef::new(acc)
    }

    /// Makes this tensor output `output_nr` of `node` (called once on fresh op outputs, and by
    /// in-place ops to rebase history).
    ///
    /// Small enough to inline, as [`Tensor::gradient_edge`]: moving a retains_grad hook is out of
    /// line.
    #[inline]
    pub(crate) fn set_grad_fn(&self, node: NodeRef, output_nr: usize) {
        let mut meta = self.0.autograd.lock();
        if meta.retains_grad {
            return self.set_grad_fn_moving_retain(meta, node, output_nr);
        }
        let old = meta.grad_fn.replace(node);
        meta.output_nr = output_nr;
        drop(meta);
        drop(old);
    }

    /// [`Tensor::set_grad_fn`] for a tensor that retains its grad: in-place ops move the
    /// retains_grad hook to the new grad_fn (B17).
    #[inline(never)]
    fn set_grad_fn_moving_retain(
        &self,
        mut meta: crate::sync::MutexGuard<'_, AutogradMeta>,
        node: NodeRef,
        output_nr: usize,
    ) {
        // The second handle is taken only here: no count traffic on the common path.
        let moved = node.clone();
        let old = meta.grad_fn.replace(node);
        let old_nr = std::mem::replace(&mut meta.output_nr, output_nr);
        drop(meta);
        if let Some(old) = old {
            old.meta().clear_retains_grad(old_nr);
        }
        moved
            .meta()
            .set_retains_grad(output_nr, Arc::downgrade(&self.0));
    }

    pub(crate) fn meta_lock(&self) -> crate::sync::MutexGuard<'_, AutogradMeta> {
        self.0.autograd.lock()
    }
}

fn warn_non_leaf_grad_once() {
    static WARNED: AtomicBool = AtomicBool::new(false);
    crate::warning::warn_once(
        &WARNED,
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.",
    );
}
