//! Anomaly detection (`torch.autograd.detect_anomaly`): after every node the engine checks its
//! outputs for NaN and fails with `Function '<Node>' returned nan values in its <i>th output.`

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static ANOMALY: Cell<AnomalyMode> = const { Cell::new(AnomalyMode { enabled: false, check_nan: true }) };
}

/// The anomaly-detection settings captured by a graph task when `backward()` starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AnomalyMode {
    pub(crate) enabled: bool,
    pub(crate) check_nan: bool,
}

pub(crate) fn current() -> AnomalyMode {
    ANOMALY.with(Cell::get)
}

/// Whether anomaly detection is on for this thread.
///
/// # Examples
///
/// ```
/// assert!(!autograd_runtime::is_anomaly_enabled());
/// let _g = autograd_runtime::detect_anomaly();
/// assert!(autograd_runtime::is_anomaly_enabled());
/// ```
pub fn is_anomaly_enabled() -> bool {
    current().enabled
}

/// Restores the previous anomaly mode when dropped.
#[must_use = "anomaly mode is restored as soon as the guard is dropped"]
#[derive(Debug)]
pub struct AnomalyGuard {
    previous: AnomalyMode,
    _not_send: PhantomData<*const ()>,
}

impl Drop for AnomalyGuard {
    fn drop(&mut self) {
        ANOMALY.with(|a| a.set(self.previous));
    }
}

/// Turns anomaly detection on (with the NaN check) for backward passes started on this thread
/// until the guard is dropped.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{detect_anomaly, Tensor};
/// let x = Tensor::scalar(-1.0f64);
/// x.set_requires_grad(true)?;
/// let _g = detect_anomaly();
/// let y = x.sqrt()?; // d/dx sqrt(x) at -1 is NaN
/// let err = y.backward().unwrap_err();
/// assert_eq!(err.to_string(), "Function 'SqrtBackward0' returned nan values in its 0th output.");
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn detect_anomaly() -> AnomalyGuard {
    set_detect_anomaly(true, true)
}

/// Sets anomaly detection and whether it checks for NaN (`set_detect_anomaly(mode, check_nan)`).
///
/// # Examples
///
/// ```
/// let _g = autograd_runtime::set_detect_anomaly(true, false); // no NaN check
/// assert!(autograd_runtime::is_anomaly_enabled());
/// ```
pub fn set_detect_anomaly(enabled: bool, check_nan: bool) -> AnomalyGuard {
    if enabled {
        crate::warning::warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.",
        );
    }
    let previous = ANOMALY.with(|a| a.replace(AnomalyMode { enabled, check_nan }));
    AnomalyGuard {
        previous,
        _not_send: PhantomData,
    }
}
