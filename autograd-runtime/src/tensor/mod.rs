//! The [`Tensor`]: a cheap handle (`Arc`) to shared storage plus a layout, a dtype, a device and
//! autograd metadata.

mod autograd_meta;
mod construct;
pub(crate) mod data;
mod display;
pub(crate) mod kernels;
mod sequences;
mod spare;
pub(crate) mod storage;
pub(crate) mod view;
mod widen;

use std::fmt;
use std::mem::ManuallyDrop;
use std::panic::{RefUnwindSafe, UnwindSafe};

use crate::sync::{Arc, Mutex};
use crate::{DType, Device};

use crate::layout::{Dims, Layout};
pub(crate) use autograd_meta::{AutogradMeta, HookId, LeafHooks, PostAccumulateHook, TensorHook};
pub use display::{
    PrintOptions, PrintOptionsGuard, get_printoptions, printoptions, set_printoptions,
};
use storage::Storage;

/// An n-dimensional array of `f32` or `f64` that records the operations applied to it, so that
/// gradients can be computed with [`Tensor::backward`] or [`grad`](crate::grad).
///
/// `Tensor` is a handle: `clone()` gives another handle to the *same* tensor (same data, same
/// autograd state), like a Python reference. The differentiable copy (PyTorch's `clone()`) is
/// [`Tensor::copy`]. Views (`reshape` of contiguous data, `transpose`, `narrow`, `expand`,
/// `detach`) share storage and the version counter with their base.
///
/// # Examples
///
/// ```
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
/// x.set_requires_grad(true)?;
/// let y = x.mul(&x)?.sum()?; // y = Σ x²
/// y.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
///
/// # Threads and panics
///
/// `Tensor` is `Send + Sync + UnwindSafe + RefUnwindSafe`: handles move and are shared between
/// threads, and code that uses a tensor can run under [`std::panic::catch_unwind`], with the
/// tensor used again afterwards.
///
/// It is unwind-safe although its state is mutable through `&Tensor` (the autograd metadata,
/// the element buffer, a view's version record), because all of that state is behind locks
/// (`sync.rs`) that do not poison and that no panic leaves half-updated: no critical section
/// over them runs user code (hooks, custom backwards, saved-tensor hooks and the drop of an old
/// gradient or grad_fn all run after the lock is released), so a panic raised in user code
/// never interrupts one, and what a panicking closure had done to a tensor before it panicked
/// (an in-place op, a gradient) is complete. The engine relies on the same property when it
/// turns a panic in a backward into [`Error::Panic`](crate::Error::Panic).
///
/// ```
/// use std::panic::catch_unwind;
/// use autograd_runtime::Tensor;
/// let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])?;
/// let y = catch_unwind(|| x.clone().exp()).expect("no panic")?;
/// assert_eq!(y.to_vec::<f64>()?, [1.0, 1.0f64.exp()]);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) ManuallyDrop<Arc<TensorImpl>>);

// The interior state (`TensorImpl`'s autograd mutex, its storage's `RwLock<Buffer>`, a view's
// state mutex) is `UnsafeCell`-based, which makes the auto traits say no. It is unwind-safe for
// the reasons in the docs above: every such cell is behind a lock whose critical sections run no
// user code and complete or do not start, so a caught panic leaves no tensor half-updated.
impl UnwindSafe for Tensor {}
impl RefUnwindSafe for Tensor {}

// Pinned: a change that loses one of these fails to compile here rather than in a user's crate.
const _: () = {
    fn assert<T: Send + Sync + UnwindSafe + RefUnwindSafe>() {}
    let _ = assert::<Tensor>;
};

impl Drop for Tensor {
    /// The last handle of a small tensor nothing else can reach hands its allocation to the
    /// spare list for reuse (`tensor/spare.rs`); every other drop is the `Arc`'s ordinary one.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the `Arc` is taken exactly once, here, and `self.0` is never used again.
        let arc = unsafe { ManuallyDrop::take(&mut self.0) };
        if Arc::strong_count(&arc) > 1 {
            // Not the last handle (nearly every drop): only the count changes, inline. (A
            // racing drop of the other handle makes that one the last: it frees the tensor as
            // an ordinary drop.)
            return drop(arc);
        }
        spare::retire(arc);
    }
}

/// The shared state behind a [`Tensor`] handle.
pub(crate) struct TensorImpl {
    /// The data, shared with views and detached aliases.
    pub(crate) storage: Arc<Storage>,
    /// Shape, strides, offset into `storage`.
    pub(crate) layout: Layout,
    /// Cached from the storage buffer (never changes).
    pub(crate) dtype: DType,
    /// For views: the tensor whose storage this one aliases (the root base, never a view
    /// itself) and the view's state (`tensor/view.rs`). Boxed, so that the many tensors that are
    /// not views stay as small as before.
    pub(crate) view: Option<Box<view::ViewInfo>>,
    /// requires_grad, grad, grad_fn, hooks. Locked briefly; never held while user code runs.
    pub(crate) autograd: Mutex<AutogradMeta>,
}

impl Tensor {
    // ----- inspection -----------------------------------------------------------------------------

    /// The size of each dimension (`&[]` for a 0-dim tensor).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::zeros(&[2, 3], DType::F32)?.shape(), &[2, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }

    /// The strides of each dimension, in elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3], DType::F32)?;
    /// assert_eq!(t.strides(), &[3, 1]);
    /// assert_eq!(t.transpose(0, 1)?.strides(), &[1, 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn strides(&self) -> &[usize] {
        &self.0.layout.strides
    }

    /// Number of dimensions.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(autograd_runtime::Tensor::scalar(1.0f32).ndim(), 0);
    /// ```
    pub fn ndim(&self) -> usize {
        self.0.layout.shape.len()
    }

    /// Number of elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::zeros(&[2, 3], DType::F32)?.numel(), 6);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// The element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::scalar(1.0f32).dtype(), DType::F32);
    /// ```
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The device the data lives on.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{Device, Tensor};
    /// assert_eq!(Tensor::scalar(1.0f32).device(), Device::Cpu);
    /// ```
    pub fn device(&self) -> Device {
        self.0.storage.device
    }

    /// Whether the elements are dense in C order.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3], DType::F32)?;
    /// assert!(t.is_contiguous());
    /// assert!(!t.transpose(0, 1)?.is_contiguous());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    /// Whether this tensor is a view sharing another tensor's storage.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2, 3], DType::F32)?;
    /// assert!(t.transpose(0, 1)?.is_view());
    /// assert!(!t.is_view());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn is_view(&self) -> bool {
        self.0.view.is_some()
    }

    /// For a view, the root tensor whose storage it aliases.
    #[inline]
    pub(crate) fn view_base(&self) -> Option<&Tensor> {
        self.0.view.as_ref().map(|v| &v.base)
    }

    /// The version counter shared with every view and detached alias: bumped by each in-place op.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::zeros(&[2], DType::F32)?;
    /// let d = t.detach();
    /// d.fill_(1.0)?;
    /// assert_eq!((t.version(), d.version()), (1, 1));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.0.storage.version()
    }

    /// Whether this is an inference tensor (`torch.is_inference`): created in
    /// [`inference_mode`](crate::inference_mode), or a view or alias of one. It has no version
    /// counter ([`Tensor::version`] stays 0; PyTorch raises there), its views are plain tensors
    /// over its storage, not views that record, and outside inference mode it may be read but
    /// not modified in place, saved for backward, or made to require grad.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{inference_mode, Tensor};
    /// let a = Tensor::scalar(1.0f32);
    /// let (b, v) = {
    ///     let _g = inference_mode();
    ///     (a.exp()?, a.reshape(&[1])?)
    /// };
    /// assert!(!a.is_inference() && b.is_inference());
    /// assert!(!v.is_inference()); // a view of a normal tensor stays normal
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    #[inline]
    pub fn is_inference(&self) -> bool {
        self.0.storage.is_inference()
    }

    /// Whether `self` and `other` are handles to the same tensor.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::scalar(1.0f32);
    /// assert!(a.is_same(&a.clone()));
    /// assert!(!a.is_same(&a.detach()));
    /// ```
    pub fn is_same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether `self` and `other` share storage: views of one base, detached aliases (PyTorch's
    /// comparison of `untyped_storage().data_ptr()`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert!(a.shares_storage(&a.transpose(0, 1)?));
    /// assert!(a.shares_storage(&a.detach()));
    /// assert!(!a.shares_storage(&a.copy()?));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.0.layout
    }

    pub(crate) fn shape_dims(&self) -> Dims {
        // `from_slice` copies; `clone` would go through `Extend` (~50 instructions per call).
        // A scalar's (no dimension) is built without the call to `memcpy` that copies none.
        let shape = &self.0.layout.shape;
        if shape.is_empty() {
            return Dims::new();
        }
        Dims::from_slice(shape)
    }

    /// A new tensor aliasing this one's storage with `layout` (no autograd metadata).
    ///
    /// The view starts as an ordinary view (`CreationMeta::Default`) whose grad_fn is current at
    /// the storage's version now; the public view methods set how it was created.
    pub(crate) fn alias_with_layout(&self, layout: Layout) -> Tensor {
        if self.is_inference() {
            // A view of an inference tensor is a plain inference tensor over the same storage
            // (PyTorch gives it no view metadata: `_is_view()` is false, nothing records it).
            return Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
                storage: Arc::clone(&self.0.storage),
                layout,
                dtype: self.0.dtype,
                view: None,
                autograd: Mutex::new(AutogradMeta::default()),
            })));
        }
        let base = self.view_base().cloned().unwrap_or_else(|| self.clone());
        let info = view::ViewInfo::new(base, self.version());
        Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
            storage: Arc::clone(&self.0.storage),
            layout,
            dtype: self.0.dtype,
            view: Some(Box::new(info)),
            autograd: Mutex::new(AutogradMeta::default()),
        })))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let meta = self.0.autograd.lock();
        let mut d = f.debug_struct("Tensor");
        d.field("shape", &self.shape())
            .field("dtype", &self.dtype());
        if !self.device().is_cpu() {
            d.field("device", &self.device());
        }
        if self.numel() <= 16 {
            match self.dtype() {
                DType::F32 => d.field("data", &self.to_vec::<f32>().unwrap_or_default()),
                DType::F64 => d.field("data", &self.to_vec::<f64>().unwrap_or_default()),
                DType::F16 => d.field("data", &self.to_vec::<half::f16>().unwrap_or_default()),
                DType::BF16 => d.field("data", &self.to_vec::<half::bf16>().unwrap_or_default()),
                DType::I64 => d.field("data", &self.to_vec::<i64>().unwrap_or_default()),
                DType::I32 => d.field("data", &self.to_vec::<i32>().unwrap_or_default()),
                DType::U8 => d.field("data", &self.to_vec::<u8>().unwrap_or_default()),
                DType::Bool => d.field("data", &self.to_vec::<bool>().unwrap_or_default()),
            };
        }
        if let Some(node) = &meta.grad_fn {
            d.field("grad_fn", &node.name());
        } else if meta.requires_grad {
            d.field("requires_grad", &true);
        }
        d.finish()
    }
}

impl fmt::Debug for TensorImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorImpl")
            .field("layout", &self.layout)
            .field("dtype", &self.dtype)
            .finish_non_exhaustive()
    }
}

/// The elements a random constructor fills, by dtype.
pub(crate) enum Samples<'a> {
    /// An f32 tensor's elements.
    F32(&'a mut [f32]),
    /// An f64 tensor's elements.
    F64(&'a mut [f64]),
}

#[cfg(test)]
mod tests {
    use std::panic::catch_unwind;

    use crate::{Device, Error, Tensor};

    /// `Tensor` is unwind-safe: a closure over `&Tensor` goes to `catch_unwind` as it is (no
    /// `AssertUnwindSafe`), and a tensor whose graph a caught panic interrupted is still usable.
    #[test]
    fn tensors_are_used_under_catch_unwind_and_after_a_caught_panic() {
        let x = Tensor::from_vec(vec![0.0f64, 1.0], &[2])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let y = catch_unwind(|| x.clone().exp()).expect("no panic").unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), [1.0, 1f64.exp()]);

        // A panic after a backward into `x`: what it did stays done, and `x` takes more.
        let caught = catch_unwind(|| {
            x.mul_scalar(3.0)
                .unwrap()
                .sum()
                .unwrap()
                .backward()
                .unwrap();
            panic!("a user panic after backward");
        });
        assert!(caught.is_err());
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [3.0, 3.0]);
        y.sum().unwrap().backward().unwrap();
        assert_eq!(
            x.grad().unwrap().to_vec::<f64>().unwrap(),
            [3.0 + 1.0, 3.0 + 1f64.exp()]
        );

        // The issue's form: a device move under `catch_unwind` compiles, and does not panic
        // whether or not this machine has a CUDA device.
        match catch_unwind(|| x.to(Device::Cuda(0))).expect("no panic") {
            Ok(on_gpu) => {
                assert_eq!(on_gpu.device(), Device::Cuda(0));
                assert_eq!(on_gpu.to_vec::<f64>().unwrap(), [0.0, 1.0]);
            }
            Err(e) => assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e}"),
        }
    }
}
