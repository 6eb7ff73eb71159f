//! The switches: whether the fused path is taken at all, and on host tensors, and how many
//! fused kernels have run. Process-wide, for benchmarks and tests that compare the two paths.

use crate::sync::Ordering;
use crate::sync::statics::{AtomicBool, AtomicU64};

use crate::{Device, Tensor};

/// Whether host tensors take the fused path (on by default; see the module docs). Relaxed: a
/// switch that publishes no memory.
static ON_HOST: AtomicBool = AtomicBool::new(true);
/// Whether the fused path is taken at all (on by default). Relaxed, as `ON_HOST`.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Fused kernels run so far (forward and backward). Relaxed: a statistic.
pub(super) static RUNS: AtomicU64 = AtomicU64::new(0);

/// Runs the fused kernels on CPU tensors (the default), or runs their derived bodies op by op.
/// Process-wide; for benchmarks and tests.
#[doc(hidden)]
pub fn run_on_host(on: bool) {
    ON_HOST.store(on, Ordering::Relaxed);
}

/// Turns the fused path off (every derived body then runs op by op, on every device) or back
/// on. Process-wide; for benchmarks that compare the two.
#[doc(hidden)]
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// How many fused kernels have run in this process.
#[doc(hidden)]
pub fn runs() -> u64 {
    RUNS.load(Ordering::Relaxed)
}

/// Whether tensors on `t`'s device take the fused path at all (see [`set_enabled`] and
/// [`run_on_host`]). What the derived pair checks first, so that where the fused path is off the
/// op-by-op path pays one branch for it.
#[doc(hidden)]
#[inline]
pub fn fuses_on(t: &Tensor) -> bool {
    // Generated kernels are written for f32 and f64; other dtypes run op by op (halves in f32
    // per op, as PyTorch's eager kernels do).
    // Under a dual level, a derived body runs op by op, so that its ops propagate tangents
    // (a generated kernel computes none).
    if !ENABLED.load(Ordering::Relaxed)
        || !matches!(t.dtype(), crate::DType::F32 | crate::DType::F64)
        || crate::forward_ad::level_open()
    {
        return false;
    }
    match t.device() {
        Device::Cpu | Device::Virtual(_) => ON_HOST.load(Ordering::Relaxed),
        _ => true,
    }
}
