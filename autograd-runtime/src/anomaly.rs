//! Anomaly detection (`torch.autograd.detect_anomaly`): after every node the engine checks its
//! outputs for NaN and fails with `Function '<Node>' returned nan values in its <i>th output.`;
//! nodes created meanwhile remember the backtrace of their forward call, and the
//! "modified by an inplace operation" error points at it instead of suggesting anomaly mode.
//!
//! The mode is **process-wide**, as PyTorch's (`AnomalyMode::_enabled` is one static): turning
//! it on from any thread affects every thread — device workers and reentrant pool threads of a
//! pass included — until the guard that turned it on is dropped, which restores the mode it
//! found. Guards used from several threads at once therefore interleave as PyTorch's context
//! managers do: the last one dropped decides.

use std::marker::PhantomData;

use crate::sync::Ordering;
use crate::sync::statics::AtomicU8;

/// Bit set in [`MODE`] while anomaly detection is on.
const ENABLED: u8 = 1;
/// Bit set in [`MODE`] when anomaly detection checks node outputs for NaN.
const CHECK_NAN: u8 = 2;

/// The process-wide mode: [`ENABLED`] and [`CHECK_NAN`] bits, one word so that a reader never
/// sees one setting's flag with another setting's other flag. Off with the NaN check by default
/// (`set_detect_anomaly(mode, check_nan=True)`).
static MODE: AtomicU8 = AtomicU8::new(CHECK_NAN);

/// The anomaly-detection settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AnomalyMode {
    pub(crate) enabled: bool,
    pub(crate) check_nan: bool,
}

impl AnomalyMode {
    fn bits(self) -> u8 {
        (u8::from(self.enabled) * ENABLED) | (u8::from(self.check_nan) * CHECK_NAN)
    }

    fn from_bits(bits: u8) -> AnomalyMode {
        AnomalyMode {
            enabled: bits & ENABLED != 0,
            check_nan: bits & CHECK_NAN != 0,
        }
    }
}

/// The current mode (one relaxed load: cheap enough for the engine to read per node).
#[inline]
pub(crate) fn current() -> AnomalyMode {
    // Relaxed: the mode publishes no other data. A backward pass started after the mode was set
    // on some thread sees it on every thread that runs its nodes: those threads receive the
    // pass's tasks through a ready queue's mutex, which orders the store (made before the pass
    // started) before their load.
    AnomalyMode::from_bits(MODE.load(Ordering::Relaxed))
}

/// Whether the engine must check node outputs for NaN (anomaly mode on, with the NaN check): one
/// load and one comparison, for the engine's per-node check.
#[inline]
pub(crate) fn checks_nan() -> bool {
    // Relaxed: see `current`.
    MODE.load(Ordering::Relaxed) == ENABLED | CHECK_NAN
}

fn replace(mode: AnomalyMode) -> AnomalyMode {
    // Relaxed: see `current`.
    AnomalyMode::from_bits(MODE.swap(mode.bits(), Ordering::Relaxed))
}

/// Whether anomaly detection is on (in this process: the mode is not per thread).
///
/// # Examples
///
/// ```
/// assert!(!autograd_runtime::is_anomaly_enabled());
/// let _g = autograd_runtime::detect_anomaly();
/// assert!(autograd_runtime::is_anomaly_enabled());
/// // Process-wide, as in PyTorch: other threads see it too.
/// assert!(std::thread::spawn(autograd_runtime::is_anomaly_enabled).join().unwrap());
/// ```
#[inline]
pub fn is_anomaly_enabled() -> bool {
    current().enabled
}

/// Restores the anomaly mode it found when dropped.
#[must_use = "anomaly mode is restored as soon as the guard is dropped"]
#[derive(Debug)]
pub struct AnomalyGuard {
    previous: AnomalyMode,
    _not_send: PhantomData<*const ()>,
}

impl Drop for AnomalyGuard {
    fn drop(&mut self) {
        replace(self.previous);
    }
}

/// Turns anomaly detection on (with the NaN check) for the whole process until the guard is
/// dropped.
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

/// Sets anomaly detection and whether it checks for NaN (`set_detect_anomaly(mode, check_nan)`),
/// process-wide, until the guard is dropped.
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
    let previous = replace(AnomalyMode { enabled, check_nan });
    AnomalyGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// What anomaly mode keeps of a node created while it was on (PyTorch's `AnomalyMetadata`): the
/// backtrace of the forward call that created it and, for a node created while the engine ran
/// another node (a backward recorded with `create_graph`), that node: its *parent*.
///
/// Parents form chains from a node to the nodes of earlier passes, never back: a node's parent
/// existed before it, so the chains hold no cycle.
pub(crate) struct AnomalyMetadata {
    trace: std::backtrace::Backtrace,
    parent: Option<crate::sync::Arc<Parent>>,
}

/// The node whose backward created a node (PyTorch's `assign_parent`): its name and its own
/// metadata, `None` when it was created with anomaly mode off.
pub(crate) struct Parent {
    name: String,
    metadata: Option<crate::sync::Arc<AnomalyMetadata>>,
}

impl std::fmt::Debug for AnomalyMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnomalyMetadata")
            .field("parent", &self.parent.as_ref().map(|p| &p.name))
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The node the engine is running on this thread, while anomaly mode is on (PyTorch's
    /// `current_evaluating_node`, read by `assign_parent`).
    static EVALUATING: std::cell::RefCell<Option<crate::sync::Arc<Parent>>> =
        const { std::cell::RefCell::new(None) };
}

impl AnomalyMetadata {
    /// The metadata of a node created now: this call's backtrace and the node being run on this
    /// thread, if any.
    pub(crate) fn capture() -> AnomalyMetadata {
        AnomalyMetadata {
            trace: std::backtrace::Backtrace::force_capture(),
            parent: EVALUATING.with(|e| e.borrow().clone()),
        }
    }

    /// The forward call's backtrace.
    pub(crate) fn trace(&self) -> &std::backtrace::Backtrace {
        &self.trace
    }
}

/// Marks `node` as the node being run on this thread until dropped, restoring the previous one
/// (PyTorch's `NodeGuard`). Made by the engine only while anomaly mode is on.
pub(crate) struct EvaluatingGuard {
    previous: Option<crate::sync::Arc<Parent>>,
}

impl EvaluatingGuard {
    pub(crate) fn enter(node: &dyn crate::Node) -> EvaluatingGuard {
        let parent = crate::sync::Arc::new(Parent {
            name: node.name().to_string(),
            metadata: node.meta().anomaly_metadata().cloned(),
        });
        let previous = EVALUATING.with(|e| e.replace(Some(parent)));
        EvaluatingGuard { previous }
    }
}

impl Drop for EvaluatingGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        EVALUATING.with(|e| *e.borrow_mut() = previous);
    }
}

/// PyTorch's `print_stack`, for a node `name` that failed: one warning with the backtrace of its
/// forward call, then one per parent up the chain ("Previous calculation was induced by ..."),
/// each saying so when the node was created with anomaly mode off.
pub(crate) fn print_stack(name: &str, metadata: Option<&AnomalyMetadata>) {
    print_one(name, metadata, false);
    let mut parent = metadata.and_then(|m| m.parent.clone());
    while let Some(p) = parent {
        print_one(&p.name, p.metadata.as_deref(), true);
        parent = p.metadata.as_ref().and_then(|m| m.parent.clone());
    }
}

/// PyTorch's `_print_stack`.
fn print_one(name: &str, metadata: Option<&AnomalyMetadata>, is_parent: bool) {
    let message = match metadata {
        None => format!(
            "Error detected in {name}. No forward pass information available. Enable detect \
             anomaly during forward pass for more information."
        ),
        Some(m) if is_parent => format!(
            "\n\nPrevious calculation was induced by {name}. Traceback of forward call that \
             induced the previous calculation:\n{}",
            m.trace
        ),
        Some(m) => format!(
            "Error detected in {name}. Traceback of forward call that caused the error:\n{}",
            m.trace
        ),
    };
    crate::warning::warn(&message);
}
