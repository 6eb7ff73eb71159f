//! [`DdpOptions`], the options of a `DistributedDataParallel` and of its reducer: a leaf both
//! `ddp.rs` and `reducer.rs` import.

use std::time::Duration;

/// PyTorch's `bucket_cap_mb = 25`.
const DEFAULT_BUCKET_CAP_BYTES: usize = 25 * 1024 * 1024;
/// How long a step waits for one bucket's all-reduce before failing.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Options of [`DistributedDataParallel::new`](super::DistributedDataParallel::new).
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::DdpOptions;
/// use std::time::Duration;
/// let options = DdpOptions::new()
///     .bucket_cap_bytes(1 << 20)
///     .find_unused_parameters(true)
///     .timeout(Duration::from_secs(10));
/// assert_eq!(options.get_bucket_cap_bytes(), 1 << 20);
/// ```
#[derive(Debug, Clone)]
pub struct DdpOptions {
    pub(crate) bucket_cap_bytes: usize,
    pub(crate) find_unused_parameters: bool,
    pub(crate) timeout: Duration,
    pub(crate) overlap: bool,
    pub(crate) broadcast_parameters: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_bytes: DEFAULT_BUCKET_CAP_BYTES,
            find_unused_parameters: false,
            timeout: DEFAULT_TIMEOUT,
            overlap: true,
            broadcast_parameters: true,
        }
    }
}

impl DdpOptions {
    /// The defaults: 25 MiB buckets, every parameter must get a gradient, 300 s timeout,
    /// all-reduces overlapped with backward, parameters broadcast from rank 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = autograd_runtime::distributed::DdpOptions::new();
    /// assert_eq!(o.get_bucket_cap_bytes(), 25 * 1024 * 1024);
    /// ```
    pub fn new() -> DdpOptions {
        DdpOptions::default()
    }

    /// Largest bucket in bytes (PyTorch's `bucket_cap_mb`); a parameter larger than this gets a
    /// bucket of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = autograd_runtime::distributed::DdpOptions::new().bucket_cap_bytes(4096);
    /// assert_eq!(o.get_bucket_cap_bytes(), 4096);
    /// ```
    pub fn bucket_cap_bytes(mut self, bytes: usize) -> DdpOptions {
        self.bucket_cap_bytes = bytes;
        self
    }

    /// The bucket cap in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// # use autograd_runtime::distributed::DdpOptions;
    /// assert_eq!(DdpOptions::new().bucket_cap_bytes(8).get_bucket_cap_bytes(), 8);
    /// ```
    pub fn get_bucket_cap_bytes(&self) -> usize {
        self.bucket_cap_bytes
    }

    /// Whether parameters may get no gradient in a step (PyTorch's `find_unused_parameters`):
    /// they then count as zeros on this rank. Without it, such a parameter fails the step on
    /// every rank, with a message naming it.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = autograd_runtime::distributed::DdpOptions::new().find_unused_parameters(true);
    /// # let _ = o;
    /// ```
    pub fn find_unused_parameters(mut self, yes: bool) -> DdpOptions {
        self.find_unused_parameters = yes;
        self
    }

    /// How long the end of a step waits for each bucket's all-reduce before it fails with
    /// [`Error::Distributed`](crate::Error::Distributed); the transport has its own timeout for
    /// each collective too.
    ///
    /// # Examples
    ///
    /// ```
    /// let o = autograd_runtime::distributed::DdpOptions::new()
    ///     .timeout(std::time::Duration::from_secs(5));
    /// # let _ = o;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> DdpOptions {
        self.timeout = timeout;
        self
    }

    /// Whether a bucket's all-reduce starts as soon as the bucket is full (the default), or only
    /// once backward has finished: the baseline that shows what overlapping buys.
    ///
    /// # Examples
    ///
    /// ```
    /// let baseline = autograd_runtime::distributed::DdpOptions::new().overlap(false);
    /// # let _ = baseline;
    /// ```
    pub fn overlap(mut self, yes: bool) -> DdpOptions {
        self.overlap = yes;
        self
    }

    /// Whether [`DistributedDataParallel::new`](super::DistributedDataParallel::new) copies rank
    /// 0's parameter values to every rank (the default; PyTorch always does).
    ///
    /// # Examples
    ///
    /// ```
    /// let o = autograd_runtime::distributed::DdpOptions::new().broadcast_parameters(false);
    /// # let _ = o;
    /// ```
    pub fn broadcast_parameters(mut self, yes: bool) -> DdpOptions {
        self.broadcast_parameters = yes;
        self
    }
}
