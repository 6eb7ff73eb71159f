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

pub(crate) mod entries;
mod entry;
mod policy;

pub(crate) use entry::dispatch;
pub(crate) use entry::{autocast_entry, autocast_op};
pub(crate) use policy::Op;

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
