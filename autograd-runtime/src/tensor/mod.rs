//! The [`Tensor`]: a cheap handle (`Arc`) to shared storage plus a layout, a dtype, a device and
//! autograd metadata.

mod autograd_meta;
pub(crate) mod data;
mod display;
pub(crate) mod kernels;
mod spare;
pub(crate) mod storage;
pub(crate) mod view;

use std::fmt;
use std::mem::ManuallyDrop;
use std::panic::{RefUnwindSafe, UnwindSafe};

use crate::sync::{Arc, Mutex};
use crate::{DType, Device, Element, Error, Result};

use crate::backend::Buffer;
use crate::layout::{self, Dims, Layout};
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
/// turns a panic in a backward into [`Error::Panic`].
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
    // ----- construction -------------------------------------------------------------------------

    /// A tensor over `storage` with `layout` that is not a view (no base, no autograd state).
    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout) -> Tensor {
        let dtype = storage.data.read().dtype();
        Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            view: None,
            autograd: Mutex::new(AutogradMeta::default()),
        })))
    }

    /// A new contiguous CPU tensor owning `data`. `data.len()` must equal the product of `shape`.
    pub(crate) fn from_buffer(data: Buffer, shape: &[usize], device: Device) -> Tensor {
        debug_assert_eq!(
            data.len(),
            shape.iter().product::<usize>(),
            "invariant: buffer matches shape"
        );
        let data = match spare::reuse(data, shape, device) {
            Ok(t) => return t,
            Err(data) => data,
        };
        Tensor::new_owning(data, shape, device)
    }

    /// A new contiguous tensor of `shape` on host device `device` holding `values[..len]`
    /// (`len`, at most two, is the element count of `shape`): what [`Tensor::from_buffer`]
    /// builds for an inline buffer, without the buffer (see `spare::small`).
    #[inline]
    pub(crate) fn small<T: Element>(
        values: [T; 2],
        len: usize,
        shape: &[usize],
        device: Device,
    ) -> Tensor {
        spare::small(values, len, shape, device)
    }

    /// A new contiguous tensor owning `data`, in a new allocation (no spare reused).
    pub(crate) fn new_owning(data: Buffer, shape: &[usize], device: Device) -> Tensor {
        let dtype = data.dtype();
        Tensor(ManuallyDrop::new(Arc::new(TensorImpl {
            storage: Arc::new(Storage::new(data, device)),
            layout: Layout::contiguous(shape),
            dtype,
            view: None,
            autograd: Mutex::new(AutogradMeta::default()),
        })))
    }

    /// Creates a tensor of `shape` from a flat vector in C order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidShape`] if `v.len()` differs from the product of `shape`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.shape(), &[2, 2]);
    /// assert!(Tensor::from_vec(vec![1.0f32], &[2]).is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_vec<T: Element>(v: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        if v.len() != layout::checked_numel("from_vec", shape)? {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                len: v.len(),
            });
        }
        Ok(Tensor::from_buffer(
            Buffer::host(v.into()),
            shape,
            Device::Cpu,
        ))
    }

    /// Creates a tensor from an ndarray array (copied into C order if it is not already).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_array(ndarray::arr2(&[[1.0f64, 2.0], [3.0, 4.0]]));
    /// assert_eq!(t.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn from_array<T: Element, D: ndarray::Dimension>(a: ndarray::Array<T, D>) -> Tensor {
        Tensor::from_ndarray(a.into_dyn())
    }

    /// A 0-dimensional tensor holding `v`.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = autograd_runtime::Tensor::scalar(2.5f64);
    /// assert_eq!(t.shape(), &[] as &[usize]);
    /// assert_eq!(t.item::<f64>()?, 2.5);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn scalar<T: Element>(v: T) -> Tensor {
        Tensor::from_buffer(Buffer::host(smallvec::smallvec![v]), &[], Device::Cpu)
    }

    /// A tensor of `shape` filled with `value`.
    ///
    /// # Errors
    ///
    /// Currently infallible for CPU tensors; the `Result` leaves room for allocation failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let t = Tensor::full(&[2], 7.0, DType::F32)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![7.0, 7.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::filled(shape, value, dtype, Device::Cpu)
    }

    /// A new contiguous tensor of `shape` filled with `value`: what every constant constructor
    /// (`full`, `zeros_like`, materialised zero gradients, ...) builds on.
    pub(crate) fn filled(
        shape: &[usize],
        value: f64,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let n = layout::checked_numel("full", shape)?;
        if !device.is_host() {
            return kernels::full(shape, value, dtype, device);
        }
        layout::check_alloc("full", n, dtype.size_of())?;
        let data = match dtype {
            DType::F32 => Buffer::F32(smallvec::smallvec![value as f32; n]),
            DType::F64 => Buffer::F64(smallvec::smallvec![value; n]),
        };
        Ok(Tensor::from_buffer(data, shape, device))
    }

    /// A tensor of zeros.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::zeros(&[3], DType::F64)?.to_vec::<f64>()?, vec![0.0; 3]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype)
    }

    /// A tensor of ones.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// assert_eq!(Tensor::ones(&[2], DType::F32)?.to_vec::<f32>()?, vec![1.0; 2]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype)
    }

    /// Standard-normal samples drawn from the global generator (PyTorch's `torch.randn`): after
    /// [`manual_seed`](crate::manual_seed)`(s)` the values are PyTorch's CPU values for seed
    /// `s`, in f32 and f64. A CPU tensor.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor, manual_seed};
    /// manual_seed(0);
    /// let x = Tensor::randn(&[2], DType::F64)?.to_vec::<f64>()?;
    /// assert_eq!(x, vec![1.5409961082440433, -0.2934289057609464]); // torch.randn(2, dtype=float64)
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::randn_with(shape, dtype, &crate::default_generator())
    }

    /// Standard-normal samples drawn from `generator` (PyTorch's `torch.randn(..,
    /// generator=g)`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(0);
    /// let x = Tensor::randn_with(&[2], DType::F32, &g)?.to_vec::<f32>()?;
    /// assert_eq!(x, vec![1.5409961, -0.29342890]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn_with(
        shape: &[usize],
        dtype: DType,
        generator: &crate::Generator,
    ) -> Result<Tensor> {
        Tensor::random("randn", shape, dtype, |v| match v {
            Samples::F32(v) => generator.fill_normal_f32(v, 0.0, 1.0, true),
            Samples::F64(v) => generator.fill_normal_f64(v, 0.0, 1.0, true),
        })
    }

    /// Standard-normal samples from a fresh generator seeded with `seed`: PyTorch's
    /// `torch.randn(shape, generator=torch.Generator().manual_seed(seed))`. Leaves the global
    /// generator alone, so tests running in parallel stay deterministic.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let a = Tensor::randn_seeded(&[4], DType::F64, 7)?;
    /// let b = Tensor::randn_seeded(&[4], DType::F64, 7)?;
    /// assert_eq!(a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn randn_seeded(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Tensor::randn_with(shape, dtype, &crate::Generator::new().manual_seed(seed))
    }

    /// Samples uniform in `[0, 1)` drawn from the global generator (PyTorch's `torch.rand`),
    /// PyTorch's CPU values after [`manual_seed`](crate::manual_seed). A CPU tensor.
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor, manual_seed};
    /// manual_seed(0);
    /// let u = Tensor::rand(&[3], DType::F32)?.to_vec::<f32>()?;
    /// assert_eq!(u, vec![0.49625659, 0.76822180, 0.088477433]); // torch.rand(3)
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::rand_with(shape, dtype, &crate::default_generator())
    }

    /// Samples uniform in `[0, 1)` drawn from `generator` (PyTorch's `torch.rand(..,
    /// generator=g)`).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Generator, Tensor};
    /// let g = Generator::new().manual_seed(3);
    /// let u = Tensor::rand_with(&[1000], DType::F32, &g)?.to_vec::<f32>()?;
    /// assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand_with(
        shape: &[usize],
        dtype: DType,
        generator: &crate::Generator,
    ) -> Result<Tensor> {
        Tensor::random("rand", shape, dtype, |v| match v {
            Samples::F32(v) => generator.fill_uniform_f32(v, 0.0, 1.0),
            Samples::F64(v) => generator.fill_uniform_f64(v, 0.0, 1.0),
        })
    }

    /// Samples uniform in `[0, 1)` from a fresh generator seeded with `seed`, as
    /// [`randn_seeded`](Tensor::randn_seeded).
    ///
    /// # Errors
    ///
    /// As [`Tensor::full`].
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{DType, Tensor};
    /// let u = Tensor::rand_seeded(&[2], DType::F64, 0)?.to_vec::<f64>()?;
    /// assert_eq!(u, vec![0.9700530018065531, 0.707819864399788]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn rand_seeded(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Tensor::rand_with(shape, dtype, &crate::Generator::new().manual_seed(seed))
    }

    /// A new CPU tensor of `shape` and `dtype` whose elements `fill` writes (in C order).
    pub(crate) fn random(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        fill: impl FnOnce(Samples<'_>),
    ) -> Result<Tensor> {
        let n = layout::checked_numel(op, shape)?;
        layout::check_alloc(op, n, dtype.size_of())?;
        match dtype {
            DType::F32 => {
                let mut v = vec![0f32; n];
                fill(Samples::F32(&mut v));
                Tensor::from_vec(v, shape)
            }
            DType::F64 => {
                let mut v = vec![0f64; n];
                fill(Samples::F64(&mut v));
                Tensor::from_vec(v, shape)
            }
        }
    }

    /// Zeros with this tensor's shape, dtype and device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// assert_eq!(t.zeros_like()?.to_vec::<f32>()?, vec![0.0, 0.0]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn zeros_like(&self) -> Result<Tensor> {
        self.full_like(0.0)
    }

    /// Ones with this tensor's shape, dtype and device.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).ones_like()?.item::<f64>()?, 1.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn ones_like(&self) -> Result<Tensor> {
        self.full_like(1.0)
    }

    /// A tensor filled with `value`, with this tensor's shape, dtype and device.
    ///
    /// # Errors
    ///
    /// [`Error::Device`] if the device cannot allocate it (CUDA out of memory).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::scalar(3.0f64).full_like(5.0)?.item::<f64>()?, 5.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        Tensor::filled(self.shape(), value, self.dtype(), self.device())
    }

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
