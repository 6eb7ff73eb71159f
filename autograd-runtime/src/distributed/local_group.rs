//! `LocalGroup`: an in-process [`ProcessGroup`] whose ranks are threads — a test double for the
//! reducer, so that its logic runs under `cargo test` without MPI.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use super::{CommBuffer, ProcessGroup};
use crate::sync::atomic::AtomicU64;
use crate::sync::{Arc, CondMutex, Condvar, Ordering};
use crate::{Error, Result};

/// How long a collective waits for the other ranks by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A [`ProcessGroup`] whose ranks are threads of this process, meeting in shared memory.
///
/// **A test double**: it exists so that [`DistributedDataParallel`](super::DistributedDataParallel)
/// — buckets, overlap, unused parameters, `no_sync`, shape errors, timeouts — can be tested by
/// `cargo test` on any machine, without MPI or a GPU. Collectives are exact (sums are taken in
/// rank order, so every rank gets bit-identical results) and time out like a real transport: a
/// rank that never joins a collective makes the others fail after the timeout; a rank whose
/// handle is dropped makes the others fail at once.
///
/// # Examples
///
/// ```
/// use autograd_runtime::distributed::{CommBuffer, LocalGroup, ProcessGroup};
/// use std::time::Duration;
///
/// let mut ranks = LocalGroup::with_timeout(2, Duration::from_millis(50));
/// let rank1 = ranks.pop().unwrap();
/// let rank0 = ranks.pop().unwrap();
/// // Rank 1 never joins: rank 0 gets an error after the timeout, not a hang.
/// let err = rank0.barrier().unwrap_err();
/// assert!(err.to_string().contains("timed out"), "{err}");
/// drop(rank1);
/// ```
pub struct LocalGroup {
    /// This handle's rank.
    rank: usize,
    /// Number of ranks.
    world_size: usize,
    /// How long a collective waits for the others.
    timeout: Duration,
    /// Sequence number of this rank's next collective; collectives with the same number on
    /// different ranks meet. Only this rank's handle increments it.
    next_op: AtomicU64,
    /// The meeting place, shared by all ranks.
    shared: Arc<Shared>,
}

/// State shared by the ranks of one [`LocalGroup`].
#[derive(Debug)]
struct Shared {
    state: CondMutex<State>,
    /// Notified when a collective completes or a rank leaves.
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Collectives in progress, by sequence number; removed when every rank took its result.
    ops: HashMap<u64, Meeting>,
    /// Ranks whose handle was dropped.
    left: Vec<usize>,
    /// Set when a collective failed (timeout, mismatch): every later collective fails with it.
    broken: Option<String>,
}

/// What kind of collective a rank joined; all ranks must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    AllReduce,
    Broadcast(usize),
    Barrier,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::AllReduce => "all_reduce",
            Kind::Broadcast(_) => "broadcast",
            Kind::Barrier => "barrier",
        }
    }
}

/// One collective being assembled.
#[derive(Debug)]
struct Meeting {
    /// Kind and buffer description of the first rank to arrive.
    kind: Kind,
    shape: String,
    /// Each rank's buffer, until the last one arrives.
    contributions: Vec<Option<CommBuffer>>,
    arrived: usize,
    /// The outcome, set by the last rank to arrive (or the first to see a mismatch).
    result: Option<std::result::Result<CommBuffer, String>>,
    /// Ranks that have taken the result.
    taken: usize,
}

impl LocalGroup {
    /// `world_size` handles, rank `i` at index `i`, with a 30 s timeout. Move each to the thread
    /// that plays that rank.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::distributed::{LocalGroup, ProcessGroup};
    /// let ranks = LocalGroup::new(4);
    /// assert_eq!(ranks.iter().map(|g| g.rank()).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    /// assert!(ranks.iter().all(|g| g.world_size() == 4));
    /// ```
    pub fn new(world_size: usize) -> Vec<LocalGroup> {
        LocalGroup::with_timeout(world_size, DEFAULT_TIMEOUT)
    }

    /// As [`LocalGroup::new`], with collectives that give up after `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::distributed::{LocalGroup, ProcessGroup};
    /// let ranks = LocalGroup::with_timeout(1, std::time::Duration::from_millis(10));
    /// ranks[0].barrier()?; // one rank: nothing to wait for
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn with_timeout(world_size: usize, timeout: Duration) -> Vec<LocalGroup> {
        let shared = Arc::new(Shared {
            state: CondMutex::new(State::default()),
            changed: Condvar::new(),
        });
        (0..world_size)
            .map(|rank| LocalGroup {
                rank,
                world_size,
                timeout,
                next_op: AtomicU64::new(0),
                shared: shared.clone(),
            })
            .collect()
    }

    fn error(&self, op: &'static str, message: impl Into<String>) -> Error {
        Error::Distributed {
            rank: self.rank,
            op,
            message: message.into(),
        }
    }

    /// Joins collective `kind` with `buf`, waits for every rank, and returns this rank's result.
    fn collective(&self, kind: Kind, buf: CommBuffer) -> Result<CommBuffer> {
        let op = kind.name();
        // Relaxed: the counter is only this rank's own sequence; collectives meet by the value,
        // and the shared state they meet in is behind the mutex.
        let seq = self.next_op.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + self.timeout;
        let mut state = self.shared.state.lock();
        if let Some(reason) = &state.broken {
            return Err(self.error(op, format!("the group is broken: {reason}")));
        }
        let world_size = self.world_size;
        let shape = buf.describe();
        let meeting = state.ops.entry(seq).or_insert_with(|| Meeting {
            kind,
            shape: shape.clone(),
            contributions: vec![None; world_size],
            arrived: 0,
            result: None,
            taken: 0,
        });
        if meeting.result.is_none() && (meeting.kind != kind || meeting.shape != shape) {
            meeting.result = Some(Err(format!(
                "collective #{seq} does not match across ranks: {} of {} and {} of {shape}",
                meeting.kind.name(),
                meeting.shape,
                op
            )));
        }
        meeting.contributions[self.rank] = Some(buf);
        meeting.arrived += 1;
        if meeting.arrived == world_size && meeting.result.is_none() {
            let parts: Vec<CommBuffer> = meeting
                .contributions
                .iter_mut()
                .flat_map(Option::take)
                .collect();
            meeting.result = Some(Ok(combine(kind, parts)));
        }
        if meeting.result.is_some() {
            self.shared.changed.notify_all();
        }
        loop {
            let st: &mut State = &mut state;
            let meeting = st
                .ops
                .get_mut(&seq)
                .expect("invariant: removed only when all took it");
            if let Some(result) = meeting.result.clone() {
                meeting.taken += 1;
                if meeting.taken == world_size {
                    st.ops.remove(&seq);
                }
                if let Err(message) = &result {
                    st.broken.get_or_insert_with(|| message.clone());
                }
                return result.map_err(|m| self.error(op, m));
            }
            let missing: Vec<usize> = (0..world_size)
                .filter(|&r| meeting.contributions[r].is_none())
                .collect();
            // Only a rank that left without joining this collective can stall it.
            if let Some(&gone) = st.left.iter().find(|r| missing.contains(r)) {
                let message = format!("rank {gone} left the group during collective #{seq}");
                st.broken.get_or_insert_with(|| message.clone());
                return Err(self.error(op, message));
            }
            let now = Instant::now();
            if now >= deadline {
                let message = format!(
                    "timed out after {:?} waiting for ranks {missing:?} to join collective #{seq}",
                    self.timeout
                );
                st.broken.get_or_insert_with(|| message.clone());
                return Err(self.error(op, message));
            }
            state = self.shared.changed.wait_timeout(state, deadline - now).0;
        }
    }
}

/// The result of collective `kind` from every rank's buffer, in rank order.
fn combine(kind: Kind, parts: Vec<CommBuffer>) -> CommBuffer {
    match kind {
        Kind::Broadcast(root) => parts
            .into_iter()
            .nth(root)
            .expect("invariant: root < world_size"),
        Kind::Barrier | Kind::AllReduce => {
            let mut parts = parts.into_iter();
            let mut sum = parts.next().expect("invariant: world_size >= 1");
            for part in parts {
                match (&mut sum, part) {
                    (CommBuffer::F32(a), CommBuffer::F32(b)) => {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y)
                    }
                    (CommBuffer::F64(a), CommBuffer::F64(b)) => {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y)
                    }
                    _ => unreachable!("invariant: shapes were checked to match"),
                }
            }
            sum
        }
    }
}

impl ProcessGroup for LocalGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn all_reduce_sum(&self, buf: CommBuffer) -> Result<CommBuffer> {
        self.collective(Kind::AllReduce, buf)
    }

    fn broadcast(&self, buf: CommBuffer, root: usize) -> Result<CommBuffer> {
        if root >= self.world_size {
            return Err(self.error(
                "broadcast",
                format!(
                    "root {root} is not a rank of a group of {}",
                    self.world_size
                ),
            ));
        }
        self.collective(Kind::Broadcast(root), buf)
    }

    fn barrier(&self) -> Result<()> {
        self.collective(Kind::Barrier, CommBuffer::F32(Vec::new()))
            .map(drop)
    }
}

impl Drop for LocalGroup {
    /// A dropped rank has left: collectives waiting for it fail at once.
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        state.left.push(self.rank);
        self.shared.changed.notify_all();
    }
}

impl fmt::Debug for LocalGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalGroup")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
