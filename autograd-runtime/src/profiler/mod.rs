//! The autograd profiler (PyTorch's `torch.autograd.profiler.profile`): [`profile`] records every
//! node the engine runs for the backward passes its closure starts, and [`Profile`] summarises
//! them as a `key_averages()` table or a Chrome trace.
//!
//! # How recording reaches the engine
//!
//! 1. [`profile`] pushes a session on this thread's stack of open sessions and runs the
//!    closure.
//! 2. Each backward pass captures, when its `GraphTask` is created, the sessions open on the
//!    calling thread plus those of the graph task running on that thread, if any (a reentrant
//!    pass started from inside a node, on whatever thread that node runs), as PyTorch's
//!    `GraphTask` captures the caller's thread-local state (they are part of the pass's
//!    `ThreadLocalState`, `engine/thread_local_state.rs`). Tasks that capture none hold `None`.
//! 3. The engine checks that field where it calls a node's `apply`: `None` costs one load of an
//!    immutable field of the task, no atomic and no thread-local; `Some` times `apply` (the
//!    node's own work, without its hooks, as PyTorch's profiler times `Node::operator()`) on
//!    whatever thread runs it (the caller's, a device worker `autograd-device-<i>`, a reentrant
//!    pool thread) and appends one [`NodeEvent`] to each captured session.
//! 4. When the closure returns, [`profile`] pops its session and takes its events. Events of
//!    passes still running at that point (only possible for passes started on other threads, or
//!    nodes still finishing after an error stopped their pass) are not part of the [`Profile`].
//!
//! Consequences: nested `profile` calls each see the passes started inside them (the outer one
//! sees the inner one's too); concurrent `profile` calls on different threads see only their own
//! passes, even though device worker threads are shared; a backward pass started on a thread the
//! closure spawns is not recorded.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::Device;
use crate::graph::{GradVec, Node};
use crate::sync::{Arc, Mutex};

/// Runs `f` and records every node the engine executes for the backward passes `f` starts
/// (including reentrant passes, and nodes run on device worker threads).
///
/// Returns `f`'s result and the [`Profile`]. See the [module docs](self) for what nested and
/// concurrent calls record.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{profiler, DType, Tensor};
/// let w = Tensor::randn_seeded(&[3, 2], DType::F32, 0)?.requires_grad_(true)?;
/// let loss = Tensor::ones(&[4, 3], DType::F32)?.matmul(&w)?.tanh()?.sum()?;
/// let (result, prof) = profiler::profile(|| loss.backward());
/// result?;
/// let rows = prof.key_averages();
/// let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
/// for name in ["SumBackward0", "TanhBackward0", "MmBackward0", "AccumulateGrad"] {
///     assert!(names.contains(&name));
/// }
/// assert!(rows.iter().all(|r| r.calls == 1));
/// println!("{rows}"); // the table
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
pub fn profile<R>(f: impl FnOnce() -> R) -> (R, Profile) {
    let session = Arc::new(Session {
        start: Instant::now(),
        events: Mutex::new(Vec::new()),
    });
    OPEN_SESSIONS.with(|s| s.borrow_mut().push(session.clone()));
    // Pops the session even if `f` unwinds, so a panic does not leave this thread profiling.
    let popped = PopOnDrop(&session);
    let result = f();
    drop(popped);
    let wall_time = session.start.elapsed();
    let mut events = std::mem::take(&mut *session.events.lock());
    events.sort_by_key(|e| e.start);
    (result, Profile { events, wall_time })
}

thread_local! {
    /// The sessions opened by [`profile`] on this thread, innermost last.
    static OPEN_SESSIONS: RefCell<Vec<Arc<Session>>> = const { RefCell::new(Vec::new()) };
    /// Per profiled node running on this thread, innermost last: the time of the profiled nodes
    /// nested in it (reentrant passes run inline), subtracted to get its self time.
    static CHILD_TIME: RefCell<Vec<Duration>> = const { RefCell::new(Vec::new()) };
    /// This thread's number and name in events, assigned on its first event.
    static THREAD: RefCell<Option<(u64, Arc<str>)>> = const { RefCell::new(None) };
}

struct PopOnDrop<'a>(&'a Arc<Session>);

impl Drop for PopOnDrop<'_> {
    fn drop(&mut self) {
        OPEN_SESSIONS.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(i) = s.iter().rposition(|x| Arc::ptr_eq(x, self.0)) {
                s.remove(i);
            }
        });
    }
}

/// One [`profile`] call: where its events go.
#[derive(Debug)]
pub(crate) struct Session {
    /// Time 0 of the session's events.
    start: Instant,
    /// Appended to by every thread that runs a node of a captured graph task; taken by
    /// [`profile`] when its closure returns.
    events: Mutex<Vec<NodeEvent>>,
}

/// The sessions one graph task records into (step 2 of the [module docs](self)).
#[derive(Clone, Debug)]
pub(crate) struct Sessions(Arc<[Arc<Session>]>);

impl Sessions {
    /// The sessions a graph task created on this thread records into: those open on this thread
    /// plus `parent`'s (the graph task running the node that starts this one), `None` if none.
    pub(crate) fn capture(parent: Option<&Sessions>) -> Option<Sessions> {
        let mut all: Vec<Arc<Session>> = parent.map(|p| p.0.to_vec()).unwrap_or_default();
        OPEN_SESSIONS.with(|open| {
            for s in open.borrow().iter() {
                if !all.iter().any(|a| Arc::ptr_eq(a, s)) {
                    all.push(s.clone());
                }
            }
        });
        (!all.is_empty()).then(|| Sessions(all.into()))
    }

    /// Starts timing a node about to run with `grads` (step 3 of the [module docs](self)).
    /// Cold and out of line, so the engine's unprofiled path stays as it was.
    #[cold]
    #[inline(never)]
    pub(crate) fn start(&self, grads: &GradVec) -> NodeRecording<'_> {
        let input_shapes = grads
            .iter()
            .map(|g| g.as_ref().map(|g| g.shape().to_vec()))
            .collect();
        CHILD_TIME.with(|c| c.borrow_mut().push(Duration::ZERO));
        NodeRecording {
            sessions: self,
            input_shapes,
            started: Instant::now(),
        }
    }
}

/// A node being timed: made by [`Sessions::start`] before the node runs, consumed by
/// [`NodeRecording::finish`] after it. Dropped unfinished (the node unwound), it only releases
/// its slot of `CHILD_TIME`; the engine catches the panic further up and goes on.
pub(crate) struct NodeRecording<'a> {
    sessions: &'a Sessions,
    input_shapes: Vec<Option<Vec<usize>>>,
    started: Instant,
}

impl NodeRecording<'_> {
    /// Stops the clock and appends the event for `node` of graph task `graph_task_id` to every
    /// session; credits the node's duration to the profiled node it is nested in, if any.
    #[cold]
    #[inline(never)]
    pub(crate) fn finish(mut self, node: &dyn Node, graph_task_id: u64) {
        let duration = self.started.elapsed();
        let children = CHILD_TIME.with(|c| {
            let mut c = c.borrow_mut();
            let children = c.pop().unwrap_or_default();
            if let Some(parent) = c.last_mut() {
                *parent += duration;
            }
            children
        });
        let (thread_nr, thread) = current_thread();
        let event = NodeEvent {
            name: node.name().to_string(),
            sequence_nr: node.meta().sequence_nr(),
            graph_task_id,
            thread,
            thread_nr,
            device: node.meta().device(),
            start: Duration::ZERO,
            duration,
            self_duration: duration.saturating_sub(children),
            input_shapes: std::mem::take(&mut self.input_shapes),
        };
        let started = self.started;
        let sessions = self.sessions;
        std::mem::forget(self);
        for session in sessions.0.iter() {
            let mut e = event.clone();
            e.start = started.saturating_duration_since(session.start);
            session.events.lock().push(e);
        }
    }
}

impl Drop for NodeRecording<'_> {
    fn drop(&mut self) {
        // Only reached when the node unwound (`finish` forgets `self`): release its slot.
        let _ = CHILD_TIME.try_with(|c| c.borrow_mut().pop());
    }
}

/// This thread's number (in order of first event, process-wide) and name.
fn current_thread() -> (u64, Arc<str>) {
    static NEXT: crate::sync::statics::AtomicU64 = crate::sync::statics::AtomicU64::new(0);
    THREAD.with(|t| {
        t.borrow_mut()
            .get_or_insert_with(|| {
                // Relaxed: only uniqueness matters.
                let nr = NEXT.fetch_add(1, crate::sync::Ordering::Relaxed);
                let name = std::thread::current()
                    .name()
                    .map_or_else(|| format!("thread-{nr}"), str::to_string);
                (nr, Arc::from(name))
            })
            .clone()
    })
}

/// One execution of one node, as recorded by [`profile`].
///
/// # Examples
///
/// ```
/// use autograd_runtime::{profiler, Device, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2])?.requires_grad_(true)?;
/// let y = x.exp()?.sum()?;
/// let (_, prof) = profiler::profile(|| y.backward());
/// let exp = prof.events().iter().find(|e| e.name == "ExpBackward0").unwrap();
/// assert_eq!(exp.device, Device::Cpu);
/// assert_eq!(exp.input_shapes, [Some(vec![2])]); // the gradient it received
/// assert!(exp.self_duration <= exp.duration);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NodeEvent {
    /// The node's name, e.g. `MulBackward0`.
    pub name: String,
    /// The node's sequence number.
    pub sequence_nr: u64,
    /// The id of the backward pass it ran in ([`current_graph_task_id`](crate::current_graph_task_id)).
    pub graph_task_id: u64,
    /// The name of the thread that ran it (`thread-<n>` for an unnamed thread).
    pub thread: Arc<str>,
    /// A process-wide number of that thread (the `tid` of the Chrome trace).
    pub thread_nr: u64,
    /// The device whose queue ran it.
    pub device: Device,
    /// When it started, from the start of [`profile`].
    pub start: Duration,
    /// How long its `apply` ran: the node's own work, without its hooks and the engine's checks
    /// of the gradients it returned.
    pub duration: Duration,
    /// `duration` minus that of the profiled nodes of reentrant passes run inline inside it.
    pub self_duration: Duration,
    /// The shapes of the gradients it received, `None` for an undefined one.
    pub input_shapes: Vec<Option<Vec<usize>>>,
}

/// What [`profile`] recorded: one [`NodeEvent`] per node executed, by start time.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{profiler, Tensor};
/// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let y = x.mul_scalar(3.0)?.mul_scalar(4.0)?;
/// let (_, prof) = profiler::profile(|| y.backward());
/// assert_eq!(prof.events().len(), 3); // two MulBackward0, one AccumulateGrad
/// assert!(prof.wall_time() >= prof.events()[0].duration);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Profile {
    events: Vec<NodeEvent>,
    wall_time: Duration,
}

impl Profile {
    /// The recorded node executions, by start time.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let y = x.exp()?;
    /// let (_, prof) = profiler::profile(|| y.backward());
    /// let names: Vec<&str> = prof.events().iter().map(|e| e.name.as_str()).collect();
    /// assert_eq!(names, ["ExpBackward0", "AccumulateGrad"]);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn events(&self) -> &[NodeEvent] {
        &self.events
    }

    /// How long the profiled closure ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::profiler;
    /// let (_, prof) = profiler::profile(|| std::thread::sleep(std::time::Duration::from_millis(1)));
    /// assert!(prof.wall_time().as_micros() >= 1000);
    /// assert!(prof.events().is_empty()); // no backward pass ran
    /// ```
    pub fn wall_time(&self) -> Duration {
        self.wall_time
    }

    /// One row per node name — calls, total and self time — sorted by total time, longest first
    /// (PyTorch's `prof.key_averages()`). Its `Display` is the table.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let y = x.mul_scalar(3.0)?.mul_scalar(4.0)?;
    /// let (_, prof) = profiler::profile(|| y.backward());
    /// let table = prof.key_averages();
    /// let mul = table.iter().find(|r| r.name == "MulBackward0").unwrap();
    /// assert_eq!(mul.calls, 2);
    /// assert!(table.to_string().contains("MulBackward0"));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn key_averages(&self) -> KeyAverages {
        self.group(false)
    }

    /// Like [`Profile::key_averages`], with one row per node name *and* input shapes (PyTorch's
    /// `key_averages(group_by_input_shape=True)`); the table gains an `Input Shapes` column.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, DType, Tensor};
    /// let x = Tensor::ones(&[3], DType::F32)?.requires_grad_(true)?;
    /// let y = x.exp()?.sum()?.exp()?; // ExpBackward0 on a [3] and on a [] gradient
    /// let (_, prof) = profiler::profile(|| y.backward());
    /// let rows = prof.key_averages_by_input_shape();
    /// assert_eq!(rows.iter().filter(|r| r.name == "ExpBackward0").count(), 2);
    /// assert!(rows.to_string().contains("[[3]]"));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn key_averages_by_input_shape(&self) -> KeyAverages {
        self.group(true)
    }

    fn group(&self, by_shape: bool) -> KeyAverages {
        type Key<'a> = (&'a str, Option<&'a [Option<Vec<usize>>]>);
        let mut index: HashMap<Key<'_>, usize> = HashMap::new();
        let mut rows: Vec<KeyAverage> = Vec::new();
        for e in &self.events {
            let key = (
                e.name.as_str(),
                by_shape.then_some(e.input_shapes.as_slice()),
            );
            let i = *index.entry(key).or_insert_with(|| {
                rows.push(KeyAverage {
                    name: e.name.clone(),
                    input_shapes: by_shape.then(|| e.input_shapes.clone()),
                    calls: 0,
                    total: Duration::ZERO,
                    self_time: Duration::ZERO,
                });
                rows.len() - 1
            });
            let row = &mut rows[i];
            row.calls += 1;
            row.total += e.duration;
            row.self_time += e.self_duration;
        }
        rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name)));
        KeyAverages { rows, by_shape }
    }

    /// The events as Chrome trace JSON, for `chrome://tracing` or <https://ui.perfetto.dev>: one
    /// complete (`"ph": "X"`) event per node execution, on a track per thread named after it,
    /// with the node's sequence number, graph task, device, input shapes and self time as
    /// arguments.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.backward());
    /// let json = prof.chrome_trace();
    /// assert!(json.starts_with("{\"traceEvents\":["));
    /// assert!(json.contains("\"name\":\"ExpBackward0\""));
    /// assert!(json.contains("\"ph\":\"X\""));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn chrome_trace(&self) -> String {
        let mut out = String::from("{\"traceEvents\":[");
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            out.push('\n');
        };
        let mut threads: Vec<(u64, &str)> = self
            .events
            .iter()
            .map(|e| (e.thread_nr, &*e.thread))
            .collect();
        threads.sort_unstable();
        threads.dedup();
        for (tid, name) in threads {
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_string(name)
            );
        }
        for e in &self.events {
            sep(&mut out);
            let shapes: Vec<String> = e
                .input_shapes
                .iter()
                .map(|s| {
                    s.as_ref()
                        .map_or_else(|| "null".to_string(), |s| format!("{s:?}"))
                })
                .collect();
            let _ = write!(
                out,
                "{{\"name\":{},\"cat\":\"autograd\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\
                 \"args\":{{\"sequence_nr\":{},\"graph_task_id\":{},\"device\":\"{}\",\"input_shapes\":[{}],\"self_us\":{:.3}}}}}",
                json_string(&e.name),
                e.thread_nr,
                micros(e.start),
                micros(e.duration),
                e.sequence_nr,
                e.graph_task_id,
                e.device,
                shapes.join(","),
                micros(e.self_duration),
            );
        }
        out.push_str("\n],\"displayTimeUnit\":\"ms\"}\n");
        out
    }

    /// Writes [`Profile::chrome_trace`] to `path` (PyTorch's `export_chrome_trace`).
    ///
    /// # Errors
    ///
    /// Any error creating or writing the file.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.backward());
    /// let path = std::env::temp_dir().join(format!("autograd-trace-{}.json", std::process::id()));
    /// prof.export_chrome_trace(&path)?;
    /// assert!(std::fs::read_to_string(&path)?.contains("ExpBackward0"));
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn export_chrome_trace(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.chrome_trace())
    }
}

/// The rows of [`Profile::key_averages`]; `Display` renders them as a table like PyTorch's
/// `key_averages().table()`, with a footer giving the total self time.
///
/// # Examples
///
/// ```
/// use autograd_runtime::{profiler, Tensor};
/// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let (_, prof) = profiler::profile(|| x.exp()?.backward());
/// let table = prof.key_averages().to_string();
/// let header = table.lines().nth(1).unwrap();
/// assert!(header.contains("Name") && header.contains("# of Calls"));
/// assert!(table.contains("Self time total:"));
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KeyAverages {
    rows: Vec<KeyAverage>,
    by_shape: bool,
}

impl KeyAverages {
    /// The rows, longest total time first.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.backward());
    /// let rows = prof.key_averages();
    /// assert!(rows.iter().zip(rows.iter().skip(1)).all(|(a, b)| a.total >= b.total));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn iter(&self) -> std::slice::Iter<'_, KeyAverage> {
        self.rows.iter()
    }

    /// The number of rows.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.backward());
    /// assert_eq!(prof.key_averages().len(), 2); // ExpBackward0, AccumulateGrad
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether nothing was recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let (_, prof) = autograd_runtime::profiler::profile(|| ());
    /// assert!(prof.key_averages().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table (the same text as `to_string()`; PyTorch's `.table()`).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.backward());
    /// assert!(prof.key_averages().table().contains("ExpBackward0"));
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn table(&self) -> String {
        self.to_string()
    }
}

impl<'a> IntoIterator for &'a KeyAverages {
    type Item = &'a KeyAverage;
    type IntoIter = std::slice::Iter<'a, KeyAverage>;
    fn into_iter(self) -> Self::IntoIter {
        self.rows.iter()
    }
}

/// One row of [`KeyAverages`]: every execution of nodes with one name (and input shapes, for
/// [`Profile::key_averages_by_input_shape`]).
///
/// # Examples
///
/// ```
/// use autograd_runtime::{profiler, Tensor};
/// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
/// let (_, prof) = profiler::profile(|| x.exp()?.backward());
/// let row = prof.key_averages().iter().find(|r| r.name == "ExpBackward0").unwrap().clone();
/// assert_eq!(row.calls, 1);
/// assert_eq!(row.average(), row.total);
/// # Ok::<(), autograd_runtime::Error>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct KeyAverage {
    /// The node name.
    pub name: String,
    /// The input shapes of the group ([`Profile::key_averages_by_input_shape`] only).
    pub input_shapes: Option<Vec<Option<Vec<usize>>>>,
    /// How many times such a node ran.
    pub calls: usize,
    /// Their summed duration.
    pub total: Duration,
    /// Their summed self time (without the nodes of reentrant passes run inline inside them).
    pub self_time: Duration,
}

impl KeyAverage {
    /// Total time per call.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::{profiler, Tensor};
    /// let x = Tensor::scalar(2.0f64).requires_grad_(true)?;
    /// let (_, prof) = profiler::profile(|| x.exp()?.exp()?.backward());
    /// let row = prof.key_averages().iter().find(|r| r.name == "ExpBackward0").unwrap().clone();
    /// assert_eq!(row.average(), row.total / 2);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn average(&self) -> Duration {
        u32::try_from(self.calls)
            .ok()
            .filter(|&n| n > 0)
            .map_or(Duration::ZERO, |n| self.total / n)
    }
}

impl fmt::Display for KeyAverages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let self_sum: Duration = self.rows.iter().map(|r| r.self_time).sum();
        let pct = |d: Duration| {
            if self_sum.is_zero() {
                0.0
            } else {
                100.0 * d.as_secs_f64() / self_sum.as_secs_f64()
            }
        };
        let shapes = |r: &KeyAverage| {
            r.input_shapes.as_ref().map_or_else(String::new, |s| {
                let parts: Vec<String> = s
                    .iter()
                    .map(|s| {
                        s.as_ref()
                            .map_or_else(|| "None".to_string(), |s| format!("{s:?}"))
                    })
                    .collect();
                format!("[{}]", parts.join(", "))
            })
        };
        let name_w = self
            .rows
            .iter()
            .map(|r| r.name.len())
            .chain([4])
            .max()
            .unwrap_or(4);
        let shape_w = if self.by_shape {
            self.rows
                .iter()
                .map(|r| shapes(r).len())
                .chain([12])
                .max()
                .unwrap_or(12)
        } else {
            0
        };
        const W: usize = 12;
        const COLUMNS: [&str; 6] = [
            "Self %",
            "Self",
            "Total %",
            "Total",
            "Time avg",
            "# of Calls",
        ];
        let mut rule = format!("{:-<name_w$}", "");
        for _ in COLUMNS {
            let _ = write!(rule, "  {:-<W$}", "");
        }
        if self.by_shape {
            let _ = write!(rule, "  {:-<shape_w$}", "");
        }
        writeln!(f, "{rule}")?;
        write!(f, "{:<name_w$}", "Name")?;
        for c in COLUMNS {
            write!(f, "  {c:>W$}")?;
        }
        if self.by_shape {
            write!(f, "  {:<shape_w$}", "Input Shapes")?;
        }
        writeln!(f)?;
        writeln!(f, "{rule}")?;
        for r in &self.rows {
            write!(
                f,
                "{:<name_w$}  {:>W$}  {:>W$}  {:>W$}  {:>W$}  {:>W$}  {:>W$}",
                r.name,
                format!("{:.2}%", pct(r.self_time)),
                human(r.self_time),
                format!("{:.2}%", pct(r.total)),
                human(r.total),
                human(r.average()),
                r.calls,
            )?;
            if self.by_shape {
                write!(f, "  {:<shape_w$}", shapes(r))?;
            }
            writeln!(f)?;
        }
        writeln!(f, "{rule}")?;
        writeln!(f, "Self time total: {}", human(self_sum))
    }
}

/// `12.345us`, `1.234ms` or `1.234s`, as PyTorch's tables print times.
fn human(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1e3 {
        format!("{us:.3}us")
    } else if us < 1e6 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{:.3}s", us / 1e6)
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
