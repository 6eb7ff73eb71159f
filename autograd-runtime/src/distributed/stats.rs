//! [`StepStats`], the figures of one synchronised step: written by the reducer (`reducer.rs`),
//! read through the `DistributedDataParallel` handle (`ddp.rs`).

use std::time::Duration;

/// Figures of one synchronised step (see
/// [`DistributedDataParallel::last_step_stats`](super::DistributedDataParallel::last_step_stats)).
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::StepStats;
/// use std::time::Duration;
/// let s = StepStats { comm: Duration::from_millis(4), hidden: Duration::from_millis(3), ..Default::default() };
/// assert_eq!(s.hidden_fraction(), 0.75);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepStats {
    /// Number of buckets all-reduced.
    pub buckets: usize,
    /// Bytes all-reduced (gradients and flags).
    pub bytes: usize,
    /// Total time the communication thread spent in all-reduces.
    pub comm: Duration,
    /// The part of `comm` that ran while backward was still running.
    pub hidden: Duration,
    /// Time from the end of backward's graph to the averaged gradients: the communication that
    /// was not hidden, plus writing the gradients back.
    pub wait: Duration,
}

impl StepStats {
    /// `hidden / comm`: the fraction of communication hidden behind backward (0 if none ran).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(autograd_runtime::distributed::StepStats::default().hidden_fraction(), 0.0);
    /// ```
    pub fn hidden_fraction(&self) -> f64 {
        if self.comm.is_zero() {
            0.0
        } else {
            self.hidden.as_secs_f64() / self.comm.as_secs_f64()
        }
    }
}
