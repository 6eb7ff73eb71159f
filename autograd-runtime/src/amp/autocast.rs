//! Autocast: PyTorch's `torch.autocast`, regions in which chosen ops run in a lower precision.
//!
//! *State.* Per thread, as PyTorch's: whether autocast is on for the CPU and for CUDA, and each
//! device type's autocast dtype, are bits of the thread's autograd modes (`grad_mode.rs`), so an
//! op reads them with the one load it makes for grad mode anyway, and a backward pass carries
//! them to the threads that run its nodes (PyTorch's `ThreadLocalState` carries the autocast
//! dispatch keys and `autocast_dtypes_` likewise). Whether the weight cache is on, the nesting
//! depth and the cache itself are plain thread-locals here, as in PyTorch.
//!
//! *Policy.* An op PyTorch registers an autocast kernel for calls [`autocast_op!`] first thing
//! in its public entry: with autocast off for every device type (nearly always) that is one
//! thread-local load and a branch. Otherwise [`dispatch`] looks up the op's [`CastPolicy`] for
//! the device type of its tensor arguments, casts the eligible arguments (floating-point, on
//! that device type, not `f64`) as the policy says, and runs the op again on them with autocast
//! off for that device type, as PyTorch's wrappers do with an `ExcludeDispatchKeyGuard`: so
//! the ops an op is built from are not cast again. Casts are ordinary recorded `to_dtype` ops
//! (`ToCopyBackward0`), so gradients reach the inputs in their own dtypes.
//!
//! *Lists.* PyTorch 2.15's: the CUDA lists are the `AT_FORALL_*` macros of
//! `ATen/autocast_mode.h`, the CPU lists the `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)` block
//! of `ATen/autocast_mode.cpp`, both restricted to the ops this crate has ([`Op`]).
//! `tests/amp/autocast_dtypes.py` records the CUDA lists from the header and the output dtypes
//! of these ops under CPU autocast from PyTorch itself; `tests/amp/autocast.rs` replays both.
//!
//! *Cache.* PyTorch's: inside a region, the lower-precision cast of an `f32` leaf that
//! requires grad (a parameter) is made once and reused, while grad mode records, until the
//! outermost region of the thread exits. The key is the tensor's identity, as PyTorch's
//! `TensorImpl*`, plus its version and the target dtype, so a parameter changed in place inside
//! the region, or used under a nested region of another dtype, is cast again (PyTorch keys on
//! the identity alone: it would return the stale cast, or a cast of the other dtype). The cache
//! is per thread, and only threads inside a region use it (an engine thread running a backward
//! node under the caller's autocast state does not fill one that nothing would clear).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;

use crate::grad_mode::{self, AutogradState};
use crate::{DType, Device, Error, Result, Tensor};

// ----- Device types and the state bits --------------------------------------------------------

/// The device types autocast knows (PyTorch's `DeviceType` for `kCPU` and `kCUDA`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DeviceType {
    Cpu,
    Cuda,
}

impl DeviceType {
    /// The device type autocast uses for `device`, or PyTorch's error for one it has none for.
    fn of(device: Device) -> Result<DeviceType> {
        match device {
            Device::Cpu => Ok(DeviceType::Cpu),
            Device::Cuda(_) => Ok(DeviceType::Cuda),
            Device::Virtual(_) => Err(Error::InvalidArgument(
                "User specified an unsupported autocast device_type 'virtual'".into(),
            )),
        }
    }

    /// The device type whose autocast applies to a tensor on `device`.
    #[inline]
    fn of_tensor(device: Device) -> Option<DeviceType> {
        match device {
            Device::Cpu => Some(DeviceType::Cpu),
            Device::Cuda(_) => Some(DeviceType::Cuda),
            Device::Virtual(_) => None,
        }
    }

    /// Its "autocast on" bit in the modes.
    #[inline]
    fn enabled_bit(self) -> u16 {
        match self {
            DeviceType::Cpu => 0x10,
            DeviceType::Cuda => 0x20,
        }
    }

    /// Where its dtype's 3 bits sit in the modes.
    #[inline]
    fn dtype_shift(self) -> u32 {
        match self {
            DeviceType::Cpu => 8,
            DeviceType::Cuda => 11,
        }
    }

    /// PyTorch's name of the device type, upper-case as in its warnings.
    fn upper(self) -> &'static str {
        match self {
            DeviceType::Cpu => "CPU",
            DeviceType::Cuda => "CUDA",
        }
    }
}

/// `dtype`'s 3-bit code: its index in [`DType::ALL`].
fn dtype_code(dtype: DType) -> u16 {
    match dtype {
        DType::Bool => 0,
        DType::U8 => 1,
        DType::I32 => 2,
        DType::I64 => 3,
        DType::F16 => 4,
        DType::BF16 => 5,
        DType::F32 => 6,
        DType::F64 => 7,
    }
}

/// Autocast's bits of this thread's modes.
#[inline]
fn bits() -> u16 {
    grad_mode::state().autocast()
}

/// Replaces autocast's bits of this thread's modes, returning the previous ones.
fn replace_bits(bits: u16) -> u16 {
    let old = grad_mode::state();
    grad_mode::set_state(old.with_autocast(bits));
    old.autocast()
}

fn enabled_in(bits: u16, device: DeviceType) -> bool {
    bits & device.enabled_bit() != 0
}

fn dtype_in(bits: u16, device: DeviceType) -> DType {
    DType::ALL[usize::from((bits >> device.dtype_shift()) & 7)]
}

fn with_enabled(bits: u16, device: DeviceType, on: bool) -> u16 {
    if on {
        bits | device.enabled_bit()
    } else {
        bits & !device.enabled_bit()
    }
}

fn with_dtype(bits: u16, device: DeviceType, dtype: DType) -> u16 {
    let shift = device.dtype_shift();
    (bits & !(7 << shift)) | (dtype_code(dtype) << shift)
}

// ----- Thread-locals that do not travel: cache switch, nesting, cache -------------------------

/// One cached cast: the source (held, so its address is not reused while the entry lives, as
/// PyTorch's weak reference does), its version when cast, and the cast.
struct CacheEntry {
    _source: Tensor,
    version: u64,
    cast: Tensor,
}

thread_local! {
    /// PyTorch's `cache_enabled` (default `true`).
    static CACHE_ENABLED: Cell<bool> = const { Cell::new(true) };
    /// PyTorch's `nesting`: regions entered on this thread and not yet exited.
    static NESTING: Cell<u32> = const { Cell::new(0) };
    /// The weight cache: (tensor identity, target dtype) to its cast.
    static CACHE: RefCell<HashMap<(usize, DType), CacheEntry>> = RefCell::new(HashMap::new());
}

// ----- Public API ------------------------------------------------------------------------------

/// Options of an autocast region ([`autocast_with`]): PyTorch's `torch.autocast` arguments
/// after `device_type`, with its defaults.
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::AutocastOptions;
/// use autograd_runtime::DType;
/// let o = AutocastOptions::default().dtype(DType::F16).cache_enabled(false);
/// assert_eq!(o.get_dtype(), Some(DType::F16));
/// assert!(o.is_enabled());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutocastOptions {
    dtype: Option<DType>,
    enabled: bool,
    cache_enabled: Option<bool>,
}

impl Default for AutocastOptions {
    /// `dtype=None` (the device type's current autocast dtype, [`get_autocast_dtype`]),
    /// `enabled=True`, `cache_enabled=None` (the current [`is_autocast_cache_enabled`]).
    fn default() -> Self {
        AutocastOptions {
            dtype: None,
            enabled: true,
            cache_enabled: None,
        }
    }
}

impl AutocastOptions {
    /// The dtype lower-precision ops run in (PyTorch's `dtype`).
    pub fn dtype(mut self, dtype: DType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// Whether the region autocasts (PyTorch's `enabled`); `false` opens a region that turns
    /// autocast off for its device type.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Whether parameters' casts are cached inside the region (PyTorch's `cache_enabled`).
    pub fn cache_enabled(mut self, cache_enabled: bool) -> Self {
        self.cache_enabled = Some(cache_enabled);
        self
    }

    /// The dtype set, if any.
    pub fn get_dtype(&self) -> Option<DType> {
        self.dtype
    }

    /// Whether the region is to autocast.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
}

/// Restores the autocast state that was current before [`autocast`] or [`autocast_with`] when
/// dropped, and clears the weight cache when it closes this thread's outermost region (PyTorch's
/// `autocast.__exit__`). Not `Send`: autocast is per thread.
///
/// ```compile_fail
/// fn assert_send<T: Send>(_: T) {}
/// assert_send(autograd_runtime::amp::autocast(autograd_runtime::Device::Cpu, autograd_runtime::DType::BF16));
/// ```
#[must_use = "autocast ends as soon as the guard is dropped"]
#[derive(Debug)]
pub struct AutocastGuard {
    device: DeviceType,
    prev_enabled: bool,
    prev_dtype: DType,
    prev_cache_enabled: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        let nesting = NESTING.with(|n| {
            let left = n.get().saturating_sub(1);
            n.set(left);
            left
        });
        if nesting == 0 {
            clear_cache();
        }
        let b = bits();
        replace_bits(with_dtype(
            with_enabled(b, self.device, self.prev_enabled),
            self.device,
            self.prev_dtype,
        ));
        CACHE_ENABLED.with(|c| c.set(self.prev_cache_enabled));
    }
}

/// Drops every cached cast of this thread (PyTorch's `torch.clear_autocast_cache`).
fn clear_cache() {
    // Taken out first: dropping the casts runs no code that reads the cache, but it may be long.
    let cache = CACHE.with(|c| std::mem::take(&mut *c.borrow_mut()));
    drop(cache);
}

/// Opens an autocast region for `device_type` in `dtype` until the guard drops: PyTorch's
/// `torch.autocast(device_type, dtype=dtype)`. Inside it, on this thread (and in the backward
/// passes it starts), the ops of PyTorch's autocast lists run in the precision their list gives
/// them: matrix products, convolutions and attention in `dtype`, losses and (on CUDA)
/// reductions, norms and `exp`/`log`-like ops in `f32`, concatenations in the widest input type
/// ([`autocast_policy`] tells which op does what). Other ops run in their inputs' dtypes.
///
/// Only `Device::Cpu` and `Device::Cuda(_)` have autocast (the index of a CUDA device is
/// ignored: the region covers the device type, as PyTorch's `device_type="cuda"`). The CPU's
/// dtypes are `bf16` (PyTorch's default there) and `f16`; for any other dtype PyTorch warns
/// "In CPU autocast, but the target dtype is not supported. Disabling autocast. ..." and the
/// region is a disabled one (whose dtype is still `dtype`), as here. A CUDA region without a
/// usable GPU warns "CUDA is not available or torch_xla is imported. Disabling autocast." and is
/// disabled too. Regions nest; an inner one is undone when its guard drops.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `Device::Virtual(_)`: "User specified an unsupported
/// autocast device_type 'virtual'".
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::{autocast, get_autocast_dtype, is_autocast_enabled};
/// use autograd_runtime::nn::functional::mse_loss;
/// use autograd_runtime::nn::functional::Reduction;
/// use autograd_runtime::{DType, Device, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let w = Tensor::from_vec(vec![0.5f32, 0.0, 0.0, 0.5], &[2, 2])?.requires_grad_(true)?;
/// let loss = {
///     let _region = autocast(Device::Cpu, DType::BF16)?;
///     assert!(is_autocast_enabled(Device::Cpu));
///     let y = x.matmul(&w)?;                      // a matrix product: bf16
///     assert_eq!(y.dtype(), DType::BF16);
///     let loss = mse_loss(&y, &x, Reduction::Mean)?; // a loss: f32
///     assert_eq!(loss.dtype(), DType::F32);
///     loss
/// };
/// assert!(!is_autocast_enabled(Device::Cpu));
/// assert_eq!(get_autocast_dtype(Device::Cpu)?, DType::BF16);
/// loss.backward()?;
/// assert_eq!(w.grad().unwrap().dtype(), DType::F32); // gradients in the parameter's dtype
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn autocast(device_type: Device, dtype: DType) -> Result<AutocastGuard> {
    autocast_with(device_type, AutocastOptions::default().dtype(dtype))
}

/// [`autocast`] with all of `torch.autocast`'s arguments: `dtype` (default: the device type's
/// current autocast dtype, `bf16` on the CPU and `f16` on CUDA unless a region set another),
/// `enabled` (`false` turns autocast off for the device type inside the region, as
/// `torch.autocast(..., enabled=False)`) and `cache_enabled`.
///
/// # Errors
///
/// As [`autocast`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::{autocast_with, is_autocast_enabled, AutocastOptions};
/// use autograd_runtime::{DType, Device, Tensor};
/// let a = Tensor::ones(&[2, 2], DType::F32)?;
/// let _outer = autocast_with(Device::Cpu, AutocastOptions::default())?; // bf16
/// assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
/// {
///     let _off = autocast_with(Device::Cpu, AutocastOptions::default().enabled(false))?;
///     assert!(!is_autocast_enabled(Device::Cpu));
///     assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
/// }
/// assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn autocast_with(device_type: Device, options: AutocastOptions) -> Result<AutocastGuard> {
    let device = DeviceType::of(device_type)?;
    let current = bits();
    let dtype = options.dtype.unwrap_or_else(|| dtype_in(current, device));
    let cache_enabled = options
        .cache_enabled
        .unwrap_or_else(|| CACHE_ENABLED.with(Cell::get));
    let mut enabled = options.enabled;
    if enabled {
        match device {
            DeviceType::Cuda => {
                if !crate::cuda::is_available() {
                    crate::warning::warn(
                        "CUDA is not available or torch_xla is imported. Disabling autocast.",
                    );
                    enabled = false;
                }
            }
            DeviceType::Cpu => {
                if !matches!(dtype, DType::BF16 | DType::F16) {
                    crate::warning::warn(&format!(
                        "In {0} autocast, but the target dtype is not supported. Disabling \
                         autocast.\n{0} Autocast only supports dtypes of torch.bfloat16, \
                         torch.float16 currently.",
                        device.upper()
                    ));
                    enabled = false;
                }
            }
        }
    }
    let guard = AutocastGuard {
        device,
        prev_enabled: enabled_in(current, device),
        prev_dtype: dtype_in(current, device),
        prev_cache_enabled: CACHE_ENABLED.with(Cell::get),
        _not_send: PhantomData,
    };
    replace_bits(with_dtype(
        with_enabled(current, device, enabled),
        device,
        dtype,
    ));
    NESTING.with(|n| n.set(n.get() + 1));
    CACHE_ENABLED.with(|c| c.set(cache_enabled));
    Ok(guard)
}

/// Whether autocast is on for `device_type` on this thread (PyTorch's
/// `torch.is_autocast_enabled(device_type)`); `false` for `Device::Virtual(_)`, which has none.
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::{autocast, is_autocast_enabled};
/// use autograd_runtime::{DType, Device};
/// assert!(!is_autocast_enabled(Device::Cpu));
/// let _g = autocast(Device::Cpu, DType::BF16)?;
/// assert!(is_autocast_enabled(Device::Cpu) && !is_autocast_enabled(Device::Cuda(0)));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn is_autocast_enabled(device_type: Device) -> bool {
    DeviceType::of_tensor(device_type).is_some_and(|d| enabled_in(bits(), d))
}

/// The dtype lower-precision ops of `device_type` run in under autocast on this thread
/// (PyTorch's `torch.get_autocast_dtype`): `bf16` for the CPU and `f16` for CUDA unless a region
/// set another.
///
/// # Errors
///
/// As [`autocast`], for `Device::Virtual(_)`.
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::get_autocast_dtype;
/// use autograd_runtime::{DType, Device};
/// assert_eq!(get_autocast_dtype(Device::Cpu)?, DType::BF16);
/// assert_eq!(get_autocast_dtype(Device::Cuda(0))?, DType::F16);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn get_autocast_dtype(device_type: Device) -> Result<DType> {
    Ok(dtype_in(bits(), DeviceType::of(device_type)?))
}

/// Whether autocast regions cache the lower-precision casts of parameters on this thread
/// (PyTorch's `torch.is_autocast_cache_enabled`; default `true`, set by the regions'
/// `cache_enabled`).
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::{autocast_with, is_autocast_cache_enabled, AutocastOptions};
/// use autograd_runtime::Device;
/// assert!(is_autocast_cache_enabled());
/// let _g = autocast_with(Device::Cpu, AutocastOptions::default().cache_enabled(false))?;
/// assert!(!is_autocast_cache_enabled());
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn is_autocast_cache_enabled() -> bool {
    CACHE_ENABLED.with(Cell::get)
}

/// This thread's autocast state as a checkpointed region's forward saw it: PyTorch's
/// `checkpoint` records the device's and the CPU's autocast arguments in the forward and
/// recomputes the region inside `torch.autocast` regions made of them (`checkpoint/`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Captured {
    bits: u16,
    cache_enabled: bool,
}

/// The current autocast state, for [`Captured::enter`] later.
pub(crate) fn capture() -> Captured {
    Captured {
        bits: bits(),
        cache_enabled: CACHE_ENABLED.with(Cell::get),
    }
}

impl Captured {
    /// Makes the captured state current until the guard drops: a region (it counts in the
    /// nesting that clears the cache) with the captured flags, dtypes and cache switch.
    pub(crate) fn enter(self) -> Reentered {
        NESTING.with(|n| n.set(n.get() + 1));
        Reentered {
            bits: replace_bits(self.bits),
            cache_enabled: CACHE_ENABLED.with(|c| c.replace(self.cache_enabled)),
            _not_send: PhantomData,
        }
    }
}

/// Restores the autocast state [`Captured::enter`] replaced.
pub(crate) struct Reentered {
    bits: u16,
    cache_enabled: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Reentered {
    fn drop(&mut self) {
        let left = NESTING.with(|n| {
            n.set(n.get().saturating_sub(1));
            n.get()
        });
        if left == 0 {
            clear_cache();
        }
        replace_bits(self.bits);
        CACHE_ENABLED.with(|c| c.set(self.cache_enabled));
    }
}

/// How autocast treats an op's floating-point inputs (PyTorch's `at::autocast::CastPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CastPolicy {
    /// Cast to the region's dtype (`lower_precision_fp`): matrix products, convolutions,
    /// attention.
    LowerPrecisionFp,
    /// Cast to `f32` (`fp32`): losses, and on CUDA norms and `exp`/`log`-like ops.
    Fp32,
    /// Run in `f32` when the first input is eligible (`fp32_set_opt_dtype`: PyTorch passes
    /// `dtype=torch.float32`, here the input is cast, with the same values): CUDA's `softmax`,
    /// `sum`, `cumsum`, `prod`, vector norms.
    Fp32SetOptDtype,
    /// Cast every input to the widest floating type among them (`promote`): `cat`, `stack`;
    /// on CUDA `atan2`, `scatter_add`.
    Promote,
}

/// The [`CastPolicy`] autocast applies to the op PyTorch names `op` (its ATen name, such as
/// `"matmul"`, `"softmax"`, `"cross_entropy_loss"`) on `device_type`, or `None` when the op
/// runs as it is (not in PyTorch's lists for that device type, or not an op of this crate).
///
/// # Examples
///
/// ```
/// use autograd_runtime::amp::{autocast_policy, CastPolicy};
/// use autograd_runtime::Device;
/// assert_eq!(autocast_policy(Device::Cpu, "matmul"), Some(CastPolicy::LowerPrecisionFp));
/// assert_eq!(autocast_policy(Device::Cpu, "softmax"), None);
/// assert_eq!(autocast_policy(Device::Cuda(0), "softmax"), Some(CastPolicy::Fp32SetOptDtype));
/// assert_eq!(autocast_policy(Device::Cpu, "mse_loss"), Some(CastPolicy::Fp32));
/// assert_eq!(autocast_policy(Device::Cpu, "cat"), Some(CastPolicy::Promote));
/// ```
pub fn autocast_policy(device_type: Device, op: &str) -> Option<CastPolicy> {
    let device = DeviceType::of_tensor(device_type)?;
    Op::ALL
        .iter()
        .find(|o| o.name() == op)
        .and_then(|o| o.policy(device))
}

// ----- The ops and their policies ---------------------------------------------------------------

/// The ops of this crate that appear in one of PyTorch's autocast lists (for the CPU or CUDA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Matmul,
    Bmm,
    Baddbmm,
    Linear,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    ScaledDotProductAttention,
    Einsum,
    LstmCell,
    GruCell,
    RnnTanhCell,
    RnnReluCell,
    Softmax,
    LogSoftmax,
    LayerNorm,
    GroupNorm,
    RmsNorm,
    Exp,
    Log,
    Log2,
    Log1p,
    Expm1,
    Reciprocal,
    Rsqrt,
    Pow,
    Softplus,
    Sum,
    Prod,
    Cumsum,
    Logsumexp,
    VectorNorm,
    MseLoss,
    NllLoss,
    CrossEntropyLoss,
    BinaryCrossEntropyWithLogits,
    Upsample,
    Cat,
    Stack,
    ScatterAdd,
    Atan2,
}

impl Op {
    /// Every op, for lookups by name.
    const ALL: [Op; 41] = [
        Op::Matmul,
        Op::Bmm,
        Op::Baddbmm,
        Op::Linear,
        Op::Conv1d,
        Op::Conv2d,
        Op::ConvTranspose2d,
        Op::ScaledDotProductAttention,
        Op::Einsum,
        Op::LstmCell,
        Op::GruCell,
        Op::RnnTanhCell,
        Op::RnnReluCell,
        Op::Softmax,
        Op::LogSoftmax,
        Op::LayerNorm,
        Op::GroupNorm,
        Op::RmsNorm,
        Op::Exp,
        Op::Log,
        Op::Log2,
        Op::Log1p,
        Op::Expm1,
        Op::Reciprocal,
        Op::Rsqrt,
        Op::Pow,
        Op::Softplus,
        Op::Sum,
        Op::Prod,
        Op::Cumsum,
        Op::Logsumexp,
        Op::VectorNorm,
        Op::MseLoss,
        Op::NllLoss,
        Op::CrossEntropyLoss,
        Op::BinaryCrossEntropyWithLogits,
        Op::Upsample,
        Op::Cat,
        Op::Stack,
        Op::ScatterAdd,
        Op::Atan2,
    ];

    /// PyTorch's (ATen) name of the op. `Upsample` stands for `interpolate`'s kernels
    /// (`upsample_nearest1d` ... `upsample_trilinear3d`), `VectorNorm` for `norm` without a
    /// dtype (`linalg_vector_norm`).
    fn name(self) -> &'static str {
        match self {
            Op::Matmul => "matmul",
            Op::Bmm => "bmm",
            Op::Baddbmm => "baddbmm",
            Op::Linear => "linear",
            Op::Conv1d => "conv1d",
            Op::Conv2d => "conv2d",
            Op::ConvTranspose2d => "conv_transpose2d",
            Op::ScaledDotProductAttention => "scaled_dot_product_attention",
            Op::Einsum => "einsum",
            Op::LstmCell => "lstm_cell",
            Op::GruCell => "gru_cell",
            Op::RnnTanhCell => "rnn_tanh_cell",
            Op::RnnReluCell => "rnn_relu_cell",
            Op::Softmax => "softmax",
            Op::LogSoftmax => "log_softmax",
            Op::LayerNorm => "layer_norm",
            Op::GroupNorm => "group_norm",
            Op::RmsNorm => "rms_norm",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Log2 => "log2",
            Op::Log1p => "log1p",
            Op::Expm1 => "expm1",
            Op::Reciprocal => "reciprocal",
            Op::Rsqrt => "rsqrt",
            Op::Pow => "pow",
            Op::Softplus => "softplus",
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Cumsum => "cumsum",
            Op::Logsumexp => "logsumexp",
            Op::VectorNorm => "linalg_vector_norm",
            Op::MseLoss => "mse_loss",
            Op::NllLoss => "nll_loss",
            Op::CrossEntropyLoss => "cross_entropy_loss",
            Op::BinaryCrossEntropyWithLogits => "binary_cross_entropy_with_logits",
            Op::Upsample => "upsample",
            Op::Cat => "cat",
            Op::Stack => "stack",
            Op::ScatterAdd => "scatter_add",
            Op::Atan2 => "atan2",
        }
    }

    /// The op's policy on `device`: PyTorch 2.15's lists (see the module docs).
    fn policy(self, device: DeviceType) -> Option<CastPolicy> {
        use CastPolicy::*;
        match device {
            // `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)`.
            DeviceType::Cpu => match self {
                Op::Matmul
                | Op::Bmm
                | Op::Baddbmm
                | Op::Linear
                | Op::Conv1d
                | Op::Conv2d
                | Op::ConvTranspose2d
                | Op::ScaledDotProductAttention => Some(LowerPrecisionFp),
                Op::Prod
                | Op::MseLoss
                | Op::NllLoss
                | Op::CrossEntropyLoss
                | Op::BinaryCrossEntropyWithLogits => Some(Fp32),
                Op::Cat | Op::Stack => Some(Promote),
                _ => None,
            },
            // `AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`, `AT_FORALL_FP32_SET_OPT_DTYPE`,
            // `AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE` (norm), `AT_FORALL_PROMOTE`.
            DeviceType::Cuda => match self {
                Op::Matmul
                | Op::Bmm
                | Op::Baddbmm
                | Op::Linear
                | Op::Conv1d
                | Op::Conv2d
                | Op::ConvTranspose2d
                | Op::ScaledDotProductAttention
                | Op::Einsum
                | Op::LstmCell
                | Op::GruCell
                | Op::RnnTanhCell
                | Op::RnnReluCell => Some(LowerPrecisionFp),
                Op::Exp
                | Op::Log
                | Op::Log2
                | Op::Log1p
                | Op::Expm1
                | Op::Reciprocal
                | Op::Rsqrt
                | Op::Pow
                | Op::Softplus
                | Op::LayerNorm
                | Op::GroupNorm
                | Op::RmsNorm
                | Op::Logsumexp
                | Op::MseLoss
                | Op::NllLoss
                | Op::BinaryCrossEntropyWithLogits
                | Op::Upsample => Some(Fp32),
                Op::Softmax | Op::LogSoftmax | Op::Sum | Op::Prod | Op::Cumsum | Op::VectorNorm => {
                    Some(Fp32SetOptDtype)
                }
                Op::ScatterAdd | Op::Atan2 => Some(Promote),
                // Composite in PyTorch (its parts are listed), or not in CUDA's lists.
                Op::CrossEntropyLoss | Op::Cat | Op::Stack => None,
            },
        }
    }
}

// ----- The op-entry hook ---------------------------------------------------------------------------

/// The tensor arguments of an op, as the hook sees them: visited in order to find the device
/// type and the promote type, then rebuilt with each tensor cast (or not).
pub(crate) trait Args {
    /// The arguments with owned (possibly cast) tensors.
    type Owned;
    /// Calls `f` on each tensor, in order.
    fn visit(&self, f: &mut dyn FnMut(&Tensor));
    /// Rebuilds the arguments with `cast` applied to each tensor.
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Self::Owned>;
}

impl Args for &Tensor {
    type Owned = Tensor;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        f(self)
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        cast(self)
    }
}

impl Args for Option<&Tensor> {
    type Owned = Option<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        if let Some(t) = self {
            f(t)
        }
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Option<Tensor>> {
        self.map(cast).transpose()
    }
}

impl Args for &[Tensor] {
    type Owned = Vec<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(f)
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
        self.iter().map(cast).collect()
    }
}

impl Args for &[&Tensor] {
    type Owned = Vec<Tensor>;
    fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(|t| f(t))
    }
    fn cast(self, cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>) -> Result<Vec<Tensor>> {
        self.iter().map(|t| cast(t)).collect()
    }
}

macro_rules! tuple_args {
    ($($name:ident),+) => {
        impl<$($name: Args),+> Args for ($($name,)+) {
            type Owned = ($($name::Owned,)+);
            #[allow(non_snake_case)]
            fn visit(&self, f: &mut dyn FnMut(&Tensor)) {
                let ($($name,)+) = self;
                $($name.visit(f);)+
            }
            #[allow(non_snake_case)]
            fn cast(
                self,
                cast: &mut dyn FnMut(&Tensor) -> Result<Tensor>,
            ) -> Result<Self::Owned> {
                let ($($name,)+) = self;
                Ok(($($name.cast(cast)?,)+))
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);

/// Runs `op` under autocast if a region is open for its arguments' device type: `None` (run
/// the op as it is) when none is, else the op's result from `f` called on the cast arguments.
/// With every region closed this is one thread-local load and a branch.
#[inline(always)]
pub(crate) fn dispatch<A: Args, R>(
    op: Op,
    args: A,
    f: impl FnOnce(A::Owned) -> Result<R>,
) -> Option<Result<R>> {
    if grad_mode::state().autocast() & AutogradState::AUTOCAST_ENABLED == 0 {
        return None;
    }
    dispatch_slow(op, args, f)
}

/// `op`'s entry under autocast: `crate::amp::autocast_op!(Softmax, self, |x| x.softmax(dim))`
/// returns the autocast result from the enclosing function when a region applies.
macro_rules! autocast_op {
    ($op:ident, $args:expr, $f:expr) => {
        if let Some(out) =
            $crate::amp::autocast::dispatch($crate::amp::autocast::Op::$op, $args, $f)
        {
            return out;
        }
    };
}
pub(crate) use autocast_op;

/// `op`'s entry under autocast, for ops whose re-call does not fit on one line at the op:
/// `crate::amp::autocast_entry!(layer_norm(input, normalized_shape, weight, bias, eps))` calls
/// [`entries`]`::layer_norm` and returns its result from the enclosing function when a region
/// applies.
macro_rules! autocast_entry {
    ($name:ident($($arg:expr),* $(,)?)) => {
        if let Some(out) = $crate::amp::autocast::entries::$name($($arg),*) {
            return out;
        }
    };
}
pub(crate) use autocast_entry;

/// The autocast entries of the ops with many arguments: each is [`dispatch`] with the op's
/// tensor arguments and a closure that calls the op again on the cast ones.
pub(crate) mod entries {
    use super::{Op, dispatch};
    use crate::nn::functional::{
        BceWithLogitsOptions, CrossEntropyOptions, NllLossOptions, Reduction,
    };
    use crate::nn::{InterpolateMode, Spatial};
    use crate::{Result, Tensor, nn::functional as f};

    type Entry<T = Tensor> = Option<Result<T>>;

    pub(crate) fn baddbmm(s: &Tensor, b1: &Tensor, b2: &Tensor, beta: f64, alpha: f64) -> Entry {
        dispatch(Op::Baddbmm, (s, b1, b2), |(s, a, b)| {
            s.baddbmm(&a, &b, beta, alpha)
        })
    }

    pub(crate) fn scatter_add(s: &Tensor, dim: isize, index: &Tensor, src: &Tensor) -> Entry {
        dispatch(Op::ScatterAdd, (s, index, src), |(s, i, x)| {
            s.scatter_add(dim, &i, &x)
        })
    }

    pub(crate) fn einsum(equation: &str, operands: &[&Tensor]) -> Entry {
        dispatch(Op::Einsum, operands, |ops| {
            crate::einsum(equation, &ops.iter().collect::<Vec<_>>())
        })
    }

    pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Entry {
        dispatch(Op::Linear, (x, w, b), |(x, w, b)| {
            f::linear(&x, &w, b.as_ref())
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn conv1d(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Entry {
        dispatch(Op::Conv1d, (x, w, b), |(x, w, b)| {
            f::conv1d(&x, &w, b.as_ref(), stride, padding, dilation, groups)
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn conv2d(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        groups: usize,
    ) -> Entry {
        dispatch(Op::Conv2d, (x, w, b), |(x, w, b)| {
            f::conv2d(&x, &w, b.as_ref(), stride, padding, dilation, groups)
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn conv_transpose2d(
        x: &Tensor,
        w: &Tensor,
        b: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
        dilation: [usize; 2],
    ) -> Entry {
        dispatch(Op::ConvTranspose2d, (x, w, b), |(x, w, b)| {
            let (s, p, o, d) = (stride, padding, output_padding, dilation);
            f::conv_transpose2d(&x, &w, b.as_ref(), s, p, o, groups, d)
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sdpa(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        dropout_p: f64,
        is_causal: bool,
        scale: Option<f64>,
    ) -> Entry {
        dispatch(
            Op::ScaledDotProductAttention,
            (q, k, v, mask),
            |(q, k, v, m)| {
                f::scaled_dot_product_attention(&q, &k, &v, m.as_ref(), dropout_p, is_causal, scale)
            },
        )
    }

    pub(crate) fn layer_norm(
        x: &Tensor,
        shape: &[usize],
        w: Option<&Tensor>,
        b: Option<&Tensor>,
        eps: f64,
    ) -> Entry {
        dispatch(Op::LayerNorm, (x, w, b), |(x, w, b)| {
            f::layer_norm(&x, shape, w.as_ref(), b.as_ref(), eps)
        })
    }

    pub(crate) fn group_norm(
        x: &Tensor,
        groups: usize,
        w: Option<&Tensor>,
        b: Option<&Tensor>,
        eps: f64,
    ) -> Entry {
        dispatch(Op::GroupNorm, (x, w, b), |(x, w, b)| {
            f::group_norm(&x, groups, w.as_ref(), b.as_ref(), eps)
        })
    }

    pub(crate) fn rms_norm(
        x: &Tensor,
        shape: &[usize],
        w: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Entry {
        dispatch(Op::RmsNorm, (x, w), |(x, w)| {
            f::rms_norm(&x, shape, w.as_ref(), eps)
        })
    }

    pub(crate) fn interpolate(
        x: &Tensor,
        size: &Option<Spatial<usize>>,
        scale_factor: &Option<Spatial<f64>>,
        mode: InterpolateMode,
        align_corners: Option<bool>,
        recompute_scale_factor: Option<bool>,
    ) -> Entry {
        if mode == InterpolateMode::Area {
            // `adaptive_avg_pool`, in no list.
            return None;
        }
        dispatch(Op::Upsample, x, |x| {
            let (size, scale) = (size.clone(), scale_factor.clone());
            f::interpolate(&x, size, scale, mode, align_corners, recompute_scale_factor)
        })
    }

    pub(crate) fn lstm_cell(
        x: &Tensor,
        hx: (&Tensor, &Tensor),
        w_ih: &Tensor,
        w_hh: &Tensor,
        b_ih: Option<&Tensor>,
        b_hh: Option<&Tensor>,
    ) -> Entry<(Tensor, Tensor)> {
        let args = (x, hx.0, hx.1, w_ih, w_hh, b_ih, b_hh);
        dispatch(Op::LstmCell, args, |(x, h, c, wi, wh, bi, bh)| {
            f::lstm_cell(&x, (&h, &c), &wi, &wh, bi.as_ref(), bh.as_ref())
        })
    }

    /// The three single-state cells: `gru_cell`, `rnn_tanh_cell`, `rnn_relu_cell`.
    macro_rules! cell {
        ($name:ident, $op:ident) => {
            pub(crate) fn $name(
                x: &Tensor,
                hx: &Tensor,
                w_ih: &Tensor,
                w_hh: &Tensor,
                b_ih: Option<&Tensor>,
                b_hh: Option<&Tensor>,
            ) -> Entry {
                let args = (x, hx, w_ih, w_hh, b_ih, b_hh);
                dispatch(Op::$op, args, |(x, h, wi, wh, bi, bh)| {
                    f::$name(&x, &h, &wi, &wh, bi.as_ref(), bh.as_ref())
                })
            }
        };
    }
    cell!(gru_cell, GruCell);
    cell!(rnn_tanh_cell, RnnTanhCell);
    cell!(rnn_relu_cell, RnnReluCell);

    pub(crate) fn nll_loss(x: &Tensor, targets: &[usize], o: &NllLossOptions) -> Entry {
        dispatch(Op::NllLoss, (x, o.weight.as_ref()), |(x, weight)| {
            f::nll_loss(
                &x,
                targets,
                &NllLossOptions {
                    weight,
                    ..o.clone()
                },
            )
        })
    }

    pub(crate) fn nll_loss_tensor(x: &Tensor, t: &Tensor, o: &NllLossOptions) -> Entry {
        dispatch(Op::NllLoss, (x, t, o.weight.as_ref()), |(x, t, weight)| {
            f::nll_loss_tensor(
                &x,
                &t,
                &NllLossOptions {
                    weight,
                    ..o.clone()
                },
            )
        })
    }

    pub(crate) fn cross_entropy(x: &Tensor, targets: &[usize], o: &CrossEntropyOptions) -> Entry {
        dispatch(
            Op::CrossEntropyLoss,
            (x, o.weight.as_ref()),
            |(x, weight)| {
                f::cross_entropy(
                    &x,
                    targets,
                    &CrossEntropyOptions {
                        weight,
                        ..o.clone()
                    },
                )
            },
        )
    }

    pub(crate) fn cross_entropy_tensor(x: &Tensor, t: &Tensor, o: &CrossEntropyOptions) -> Entry {
        dispatch(
            Op::CrossEntropyLoss,
            (x, t, o.weight.as_ref()),
            |(x, t, weight)| {
                f::cross_entropy_tensor(
                    &x,
                    &t,
                    &CrossEntropyOptions {
                        weight,
                        ..o.clone()
                    },
                )
            },
        )
    }

    pub(crate) fn mse_loss(x: &Tensor, t: &Tensor, reduction: Reduction) -> Entry {
        dispatch(Op::MseLoss, (x, t), |(x, t)| f::mse_loss(&x, &t, reduction))
    }

    pub(crate) fn binary_cross_entropy_with_logits(
        x: &Tensor,
        t: &Tensor,
        o: &BceWithLogitsOptions,
    ) -> Entry {
        let args = (x, t, o.weight.as_ref(), o.pos_weight.as_ref());
        dispatch(
            Op::BinaryCrossEntropyWithLogits,
            args,
            |(x, t, weight, pos_weight)| {
                let o = BceWithLogitsOptions {
                    weight,
                    pos_weight,
                    ..o.clone()
                };
                f::binary_cross_entropy_with_logits(&x, &t, &o)
            },
        )
    }
}

/// Whether autocast on `device` casts `t` (PyTorch's `is_eligible`): floating-point, on that
/// device type, and not `f64`.
fn eligible(t: &Tensor, device: DeviceType) -> bool {
    DeviceType::of_tensor(t.device()) == Some(device)
        && t.dtype().is_floating_point()
        && t.dtype() != DType::F64
}

#[cold]
#[inline(never)]
fn dispatch_slow<A: Args, R>(
    op: Op,
    args: A,
    f: impl FnOnce(A::Owned) -> Result<R>,
) -> Option<Result<R>> {
    let state = bits();
    // The device type whose autocast key PyTorch's dispatcher would pick: CUDA's ranks above
    // the CPU's.
    let (mut cuda, mut cpu) = (false, false);
    args.visit(&mut |t| match DeviceType::of_tensor(t.device()) {
        Some(DeviceType::Cuda) => cuda = true,
        Some(DeviceType::Cpu) => cpu = true,
        None => {}
    });
    let device = if cuda && enabled_in(state, DeviceType::Cuda) {
        DeviceType::Cuda
    } else if cpu && enabled_in(state, DeviceType::Cpu) {
        DeviceType::Cpu
    } else {
        return None;
    };
    let policy = op.policy(device)?;
    let lower = dtype_in(state, device);
    let to_type = match policy {
        CastPolicy::LowerPrecisionFp => Some(lower),
        CastPolicy::Fp32 => Some(DType::F32),
        CastPolicy::Fp32SetOptDtype => {
            let mut first = None;
            args.visit(&mut |t| {
                first.get_or_insert_with(|| eligible(t, device));
            });
            first.unwrap_or(false).then_some(DType::F32)
        }
        CastPolicy::Promote => match promote_type(lower, device, &args) {
            Ok(t) => Some(t),
            Err(e) => return Some(Err(e)),
        },
    };
    // Autocast off for this device type while the op runs (PyTorch's ExcludeDispatchKeyGuard).
    let _exclude = Exclude::new(device);
    let cast_args = match to_type {
        None => args.cast(&mut |t| Ok(t.clone())),
        Some(to) => args.cast(&mut |t| cached_cast(to, t, device, lower)),
    };
    Some(cast_args.and_then(f))
}

/// PyTorch's `promote_type` over the arguments: starting from the lower-precision dtype, an
/// eligible `f32` makes it `f32`; `f64` arguments are ignored; any other floating dtype (`f16`
/// in a `bf16` region, say) is PyTorch's error.
fn promote_type<A: Args>(lower: DType, device: DeviceType, args: &A) -> Result<DType> {
    let mut current = lower;
    let mut bad = false;
    args.visit(&mut |t| {
        if bad || !eligible(t, device) {
            return;
        }
        let next = t.dtype();
        if current == DType::F32 || next == DType::F32 {
            current = DType::F32;
        } else if !(current == lower && next == lower) {
            bad = true;
        }
    });
    if bad {
        return Err(Error::InvalidArgument(
            "Unexpected floating ScalarType in at::autocast::prioritize".into(),
        ));
    }
    Ok(current)
}

/// PyTorch's `cached_cast`: `t` in `to` if autocast casts it, through the weight cache for a
/// parameter's lower-precision cast.
fn cached_cast(to: DType, t: &Tensor, device: DeviceType, lower: DType) -> Result<Tensor> {
    if !eligible(t, device) || t.dtype() == to {
        return Ok(t.clone());
    }
    let can_try_cache = to == lower
        && t.dtype() == DType::F32
        && t.requires_grad()
        && t.is_leaf()
        && !t.is_view()
        && CACHE_ENABLED.with(Cell::get)
        && grad_mode::is_recording()
        && NESTING.with(Cell::get) > 0;
    if !can_try_cache {
        return t.to_dtype(to);
    }
    let key = (std::sync::Arc::as_ptr(&*t.0) as usize, to);
    let version = t.version();
    let hit = CACHE.with(|c| {
        c.borrow()
            .get(&key)
            .filter(|e| e.version == version)
            .map(|e| e.cast.clone())
    });
    if let Some(cast) = hit {
        return Ok(cast);
    }
    let cast = t.to_dtype(to)?;
    let entry = CacheEntry {
        _source: t.clone(),
        version,
        cast: cast.clone(),
    };
    // The replaced entry (an older version's) is dropped after the borrow ends.
    let old = CACHE.with(|c| c.borrow_mut().insert(key, entry));
    drop(old);
    Ok(cast)
}

/// Turns autocast off for one device type until dropped, then restores that bit alone.
struct Exclude {
    device: DeviceType,
    was_enabled: bool,
}

impl Exclude {
    fn new(device: DeviceType) -> Exclude {
        let b = bits();
        replace_bits(with_enabled(b, device, false));
        Exclude {
            device,
            was_enabled: enabled_in(b, device),
        }
    }
}

impl Drop for Exclude {
    fn drop(&mut self) {
        let b = bits();
        replace_bits(with_enabled(b, self.device, self.was_enabled));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dtypes_decode_as_pytorch_s() {
        assert_eq!(dtype_in(bits(), DeviceType::Cpu), DType::BF16);
        assert_eq!(dtype_in(bits(), DeviceType::Cuda), DType::F16);
        for d in DType::ALL {
            assert_eq!(DType::ALL[usize::from(dtype_code(d))], d);
        }
    }

    #[test]
    fn every_op_is_listed_once() {
        for (i, a) in Op::ALL.iter().enumerate() {
            assert!(Op::ALL[i + 1..].iter().all(|b| b.name() != a.name()));
        }
    }
}
