//! `MpiGroup`: a [`ProcessGroup`] over MPI (the `mpi` crate and the system's MPI library), for
//! processes started by `mpirun`. One thread owns every MPI call.
//!
//! # Threading and timeouts
//!
//! 1. [`MpiGroup::init`] starts the thread `autograd-mpi`, which initialises MPI with
//!    `MPI_THREAD_FUNNELED` (only the initialising thread calls MPI) and fails if the library
//!    provides less. The thread then serves collectives sent to it over a channel, one at a time,
//!    so their order is the order of the calls on this rank.
//! 2. Each collective is started nonblocking (`MPI_Iallreduce`, `MPI_Ibcast`, `MPI_Ibarrier`) on
//!    buffers moved to the heap and leaked for the duration, then polled with `MPI_Test` (which
//!    also drives its progress) with a short sleep, until it completes or the group's timeout
//!    passes.
//! 3. On completion, the buffers are reclaimed and returned to the caller. On timeout, the
//!    request and its buffers are deliberately leaked — MPI may still write into them — the
//!    caller gets [`Error::Distributed`], and the group is marked broken: later collectives fail
//!    at once, and MPI is not finalised (finalising with a pending collective could hang). The
//!    process should then exit; `mpirun` reports the job as failed.
//! 4. Dropping the group closes the channel; the thread finalises MPI and ends.
//!
//! MPI's default error handler is `MPI_ERRORS_ARE_FATAL`: when a peer process dies, OpenMPI
//! usually aborts the surviving ranks itself (and `mpirun` ends the job) before the timeout.

use std::fmt;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::environment::Threading;
use mpi::request::{Request, StaticScope};
use mpi::traits::*;

use super::{CommBuffer, ProcessGroup};
use crate::sync::mpsc::{self, Receiver, Sender};
use crate::{Error, Result};

/// How long a collective waits by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest sleep between two `MPI_Test` polls.
const MAX_POLL_SLEEP: Duration = Duration::from_micros(200);

/// A [`ProcessGroup`] of the processes of an MPI job (`MPI_COMM_WORLD`).
///
/// Build with `cargo build --features mpi` (needs an MPI library and libclang: on Debian,
/// `apt-get install openmpi-bin libopenmpi-dev libclang-dev`) and launch with
/// `mpirun -np N your-program`. A program started without `mpirun` is a group of one.
///
/// # Examples
///
/// ```no_run
/// use autograd_runtime::distributed::{CommBuffer, MpiGroup, ProcessGroup};
/// let group = MpiGroup::init()?;
/// let sum = group.all_reduce_sum(CommBuffer::F64(vec![group.rank() as f64]))?;
/// println!("rank {} of {}: sum of ranks {:?}", group.rank(), group.world_size(), sum);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub struct MpiGroup {
    rank: usize,
    world_size: usize,
    timeout: Duration,
    /// Requests to the MPI thread; taken by `drop` to close the channel.
    requests: Option<Sender<Call>>,
    thread: Option<JoinHandle<()>>,
}

/// One collective for the MPI thread, with the channel its outcome goes back on.
struct Call {
    op: Op,
    reply: Sender<Result<CommBuffer>>,
}

enum Op {
    AllReduce(CommBuffer),
    Broadcast(CommBuffer, usize),
    Barrier,
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::AllReduce(_) => "all_reduce",
            Op::Broadcast(..) => "broadcast",
            Op::Barrier => "barrier",
        }
    }
}

impl MpiGroup {
    /// Initialises MPI on a new communication thread; collectives time out after 300 s.
    ///
    /// # Errors
    ///
    /// [`Error::Distributed`] if MPI was already initialised in this process, provides less
    /// than `MPI_THREAD_FUNNELED`, or the thread cannot start.
    ///
    /// # Examples
    ///
    /// See [`MpiGroup`].
    pub fn init() -> Result<MpiGroup> {
        MpiGroup::init_with_timeout(DEFAULT_TIMEOUT)
    }

    /// As [`MpiGroup::init`], with collectives that fail after `timeout`.
    ///
    /// # Errors
    ///
    /// As [`MpiGroup::init`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// let group = autograd_runtime::distributed::MpiGroup::init_with_timeout(
    ///     std::time::Duration::from_secs(10),
    /// )?;
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn init_with_timeout(timeout: Duration) -> Result<MpiGroup> {
        let (requests, calls) = mpsc::channel::<Call>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(usize, usize)>>();
        let thread = std::thread::Builder::new()
            .name("autograd-mpi".into())
            .spawn(move || serve(calls, ready_tx, timeout))
            .map_err(|e| Error::ThreadSpawn {
                name: "autograd-mpi".into(),
                message: e.to_string(),
            })?;
        let started = ready_rx.recv().unwrap_or_else(|_| {
            Err(init_error(
                "the MPI thread ended during initialisation".into(),
            ))
        });
        let (rank, world_size) = match started {
            Ok(v) => v,
            Err(e) => {
                let _ = thread.join();
                return Err(e);
            }
        };
        Ok(MpiGroup {
            rank,
            world_size,
            timeout,
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    fn call(&self, op: Op) -> Result<CommBuffer> {
        let name = op.name();
        let (reply, outcome) = mpsc::channel();
        let sent = self
            .requests
            .as_ref()
            .is_some_and(|requests| requests.send(Call { op, reply }).is_ok());
        if !sent {
            return Err(self.error(name, "the MPI thread has stopped"));
        }
        // The MPI thread enforces the timeout per collective; this bound only guards against
        // the thread being stuck inside MPI itself.
        match outcome.recv_timeout(self.timeout * 2 + Duration::from_secs(1)) {
            Ok(result) => result,
            Err(_) => Err(self.error(name, "no answer from the MPI thread")),
        }
    }

    fn error(&self, op: &'static str, message: impl Into<String>) -> Error {
        Error::Distributed {
            rank: self.rank,
            op,
            message: message.into(),
        }
    }
}

fn init_error(message: String) -> Error {
    Error::Distributed {
        rank: 0,
        op: "MpiGroup::init",
        message,
    }
}

/// The MPI thread: initialises MPI, reports `(rank, size)`, then runs calls until the channel
/// closes (see the module docs).
fn serve(calls: Receiver<Call>, ready: Sender<Result<(usize, usize)>>, timeout: Duration) {
    let Some((universe, threading)) = mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = ready.send(Err(init_error(
            "MPI is already initialised in this process".into(),
        )));
        return;
    };
    if threading == Threading::Single {
        let _ = ready.send(Err(init_error(format!(
            "the MPI library provides thread level {threading:?}, MPI_THREAD_FUNNELED is needed"
        ))));
        return;
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    if ready.send(Ok((rank, size))).is_err() {
        return;
    }
    let mut broken: Option<String> = None;
    for Call { op, reply } in calls {
        let name = op.name();
        let result = match &broken {
            Some(reason) => Err(format!("the group is broken: {reason}")),
            None => run(&world, op, timeout),
        };
        let result = result.map_err(|message| {
            if message.starts_with("timed out") {
                broken.get_or_insert_with(|| message.clone());
            }
            Error::Distributed {
                rank,
                op: name,
                message,
            }
        });
        let _ = reply.send(result);
    }
    if broken.is_some() {
        // A collective may still be pending: MPI_Finalize could wait for it forever.
        std::mem::forget(universe);
    }
}

/// Runs one collective to completion or timeout.
fn run(
    world: &mpi::topology::SimpleCommunicator,
    op: Op,
    timeout: Duration,
) -> Result<CommBuffer, String> {
    let deadline = Instant::now() + timeout;
    match op {
        Op::Barrier => {
            let request = world.immediate_barrier();
            wait(request, deadline, timeout, "barrier")?;
            Ok(CommBuffer::F32(Vec::new()))
        }
        Op::AllReduce(CommBuffer::F32(v)) => {
            all_reduce(world, v, deadline, timeout).map(CommBuffer::F32)
        }
        Op::AllReduce(CommBuffer::F64(v)) => {
            all_reduce(world, v, deadline, timeout).map(CommBuffer::F64)
        }
        Op::Broadcast(buf, root) => {
            if root >= world.size() as usize {
                return Err(format!(
                    "root {root} is not a rank of a group of {}",
                    world.size()
                ));
            }
            match buf {
                CommBuffer::F32(v) => {
                    broadcast(world, v, root, deadline, timeout).map(CommBuffer::F32)
                }
                CommBuffer::F64(v) => {
                    broadcast(world, v, root, deadline, timeout).map(CommBuffer::F64)
                }
            }
        }
    }
}

fn all_reduce<T>(
    world: &mpi::topology::SimpleCommunicator,
    values: Vec<T>,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<T>, String>
where
    T: Equivalence + Copy + Default + 'static,
{
    let n = values.len();
    let send: *mut [T] = Box::into_raw(values.into_boxed_slice());
    let recv: *mut [T] = Box::into_raw(vec![T::default(); n].into_boxed_slice());
    // SAFETY: `send` and `recv` come from `Box::into_raw` just above, so they are valid, aligned
    // and unaliased; they are turned back into boxes only after the request completed (below),
    // or never (timeout), so the `'static` borrows MPI holds stay valid as long as MPI may use
    // them.
    let (send_ref, recv_ref): (&'static [T], &'static mut [T]) = unsafe { (&*send, &mut *recv) };
    let request =
        world.immediate_all_reduce_into(StaticScope, send_ref, recv_ref, SystemOperation::sum());
    let outcome = wait(request, deadline, timeout, "all-reduce");
    if outcome.is_err() {
        return outcome.map(|()| Vec::new()); // buffers leaked on purpose
    }
    // SAFETY: the request completed, so MPI no longer uses the buffers, and the references
    // given to it were consumed with the request; the pointers came from `Box::into_raw`.
    let (send, recv) = unsafe { (Box::from_raw(send), Box::from_raw(recv)) };
    drop(send);
    Ok(recv.into_vec())
}

fn broadcast<T>(
    world: &mpi::topology::SimpleCommunicator,
    values: Vec<T>,
    root: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<T>, String>
where
    T: Equivalence + 'static,
{
    let buf: *mut [T] = Box::into_raw(values.into_boxed_slice());
    // SAFETY: as in `all_reduce`: a fresh, unaliased allocation that outlives MPI's use of it.
    let buf_ref: &'static mut [T] = unsafe { &mut *buf };
    let root = world.process_at_rank(root as mpi::Rank);
    let request = root.immediate_broadcast_into(StaticScope, buf_ref);
    let outcome = wait(request, deadline, timeout, "broadcast");
    if outcome.is_err() {
        return outcome.map(|()| Vec::new()); // buffer leaked on purpose
    }
    // SAFETY: as in `all_reduce`: the request completed; the pointer came from `Box::into_raw`.
    Ok(unsafe { Box::from_raw(buf) }.into_vec())
}

/// Polls `request` until it completes or `deadline` passes; on timeout the request is leaked
/// (it cannot be cancelled: collectives have no `MPI_Cancel`).
fn wait<D: ?Sized>(
    mut request: Request<'static, D>,
    deadline: Instant,
    timeout: Duration,
    what: &str,
) -> Result<(), String> {
    let mut sleep = Duration::from_micros(1);
    loop {
        match request.test() {
            Ok(_status) => return Ok(()),
            Err(pending) => request = pending,
        }
        if Instant::now() >= deadline {
            // SAFETY: `into_raw` only defuses the request's drop check; the raw request and the
            // buffers it refers to are leaked, so MPI may complete it later without harm.
            let _ = unsafe { request.into_raw() };
            return Err(format!(
                "timed out after {timeout:?} waiting for the other ranks in {what}"
            ));
        }
        std::thread::sleep(sleep);
        sleep = (sleep * 2).min(MAX_POLL_SLEEP);
    }
}

impl ProcessGroup for MpiGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn all_reduce_sum(&self, buf: CommBuffer) -> Result<CommBuffer> {
        self.call(Op::AllReduce(buf))
    }

    fn broadcast(&self, buf: CommBuffer, root: usize) -> Result<CommBuffer> {
        self.call(Op::Broadcast(buf, root))
    }

    fn barrier(&self) -> Result<()> {
        self.call(Op::Barrier).map(drop)
    }
}

impl Drop for MpiGroup {
    /// Closes the channel; the MPI thread finalises MPI (unless a collective timed out) and ends.
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for MpiGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpiGroup")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
