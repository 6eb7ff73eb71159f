//! Soak: 8 threads run mixed backward passes at once — random small graphs from a seeded
//! generator, some through reentrant checkpoints, some hopping across virtual devices, some with
//! an injected error or panic — and every pass is checked against gradients computed separately
//! by a small reverse-mode evaluator in this file. A watchdog fails the test, naming the stuck
//! pass, if any pass runs longer than [`PASS_LIMIT`]: a hang becomes a failure, never a stuck CI.
//! On a machine with a GPU, `cuda:0` takes the place of the first virtual device, so the same
//! passes (injected faults included) run their device hops on the GPU too, and the device memory
//! they held must be back where it started ([`autograd::cuda::memory_allocated`]).
//!
//! ```text
//! cargo test --test soak -- --nocapture                                       # CI size
//! AUTOGRAD_SOAK_PASSES=20000 cargo test --release --test soak -- --nocapture  # per thread
//! ```

mod common;
#[path = "common/counting_alloc.rs"]
mod counting_alloc;
#[path = "common/stress_nodes.rs"]
mod stress_nodes;

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use autograd::{BackwardOptions, Device, Error, GradOptions, Result, Tensor, empty_cache, grad};

use counting_alloc::{Live, peak_bytes, reset_peak, thread_count};
use stress_nodes::{
    INJECTED_PANIC, checkpoint, failing, panic_in_hook, panicking, quiet_injected_panics,
};

/// Threads running passes at once.
const THREADS: usize = 8;
/// Passes per thread unless `AUTOGRAD_SOAK_PASSES` says otherwise (CI size: well under 30 s in a
/// debug build on two cores).
const DEFAULT_PASSES: usize = 2000;
/// A pass that takes longer than this is a hang.
const PASS_LIMIT: Duration = Duration::from_secs(30);
/// The seed every pass's own seed derives from.
const BASE_SEED: u64 = 0x5eed_50a6_0f00;
/// Devices the passes spread over: [`device`]`(0..DEVICES)`.
const DEVICES: usize = 4;

/// Device `d` of the passes: `Virtual(d)`, except that `cuda:0` is device 0 when there is a GPU.
fn soak_device(d: usize) -> Device {
    static CUDA: std::sync::LazyLock<bool> = std::sync::LazyLock::new(autograd::cuda::is_available);
    if d == 0 && *CUDA {
        Device::Cuda(0)
    } else {
        Device::Virtual(d)
    }
}
/// Relative tolerance of a gradient against the reference.
const RTOL: f64 = 1e-9;

// ---------------------------------------------------------------------------------------------
// A deterministic generator of small programs

/// SplitMix64: small, fast and good enough to pick ops.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// One op of a program; operands index the program's values (leaves first, then op outputs).
#[derive(Clone, Copy, Debug)]
enum Op {
    MulScalar(usize, f64),
    Add(usize, usize),
    Mul(usize, usize),
    Tanh(usize),
    Matmul(usize, usize),
    /// `s * tanh(a)` under a checkpoint: its backward is a reentrant backward. With a hop, the
    /// segment moves to that virtual device and computes `tanh` under a second checkpoint there
    /// (two levels of reentrancy across device threads), then moves back.
    Checkpoint(usize, f64, Option<usize>),
}

/// What goes wrong in a pass, on purpose.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    /// A node before the loss returns an error.
    Error,
    /// The same, inside the nested pass of a checkpoint.
    ErrorInReentrant,
    /// A hook on the output panics.
    PanicInHook,
    /// A node before the loss panics.
    PanicInNode,
}

/// How the pass runs backward.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `loss.backward()`: gradients land in `.grad`.
    Backward,
    /// `backward(retain_graph)` then `backward()`: twice the gradients.
    RetainTwice,
    /// `grad(loss, leaves, allow_unused)`: returned, `.grad` untouched.
    Grad,
}

/// A random program over `m x m` f64 matrices (square, so every op applies to any operands).
#[derive(Debug)]
struct Program {
    m: usize,
    leaves: Vec<Vec<f64>>,
    /// Each op with the device it runs on.
    ops: Vec<(Op, Device)>,
    fault: Fault,
    /// The value the fault is attached to: one the loss depends on (often the last).
    fault_site: usize,
    mode: Mode,
}

impl Program {
    fn generate(seed: u64) -> Program {
        let mut rng = Rng(seed);
        let m = 1 + rng.below(4);
        let n_leaves = 1 + rng.below(3);
        let leaves = (0..n_leaves)
            .map(|_| (0..m * m).map(|_| rng.uniform(-1.0, 1.0)).collect())
            .collect();
        let on_devices = rng.chance(35);
        let reentrant = rng.chance(25);
        let n_ops = 2 + rng.below(11);
        let mut ops = Vec::with_capacity(n_ops);
        for i in 0..n_ops {
            let values = n_leaves + i;
            // Favour recent values so that programs are deep as well as wide.
            let pick = |rng: &mut Rng| {
                if rng.chance(60) {
                    values - 1
                } else {
                    rng.below(values)
                }
            };
            let a = pick(&mut rng);
            let b = pick(&mut rng);
            let op = match rng.below(if reentrant { 7 } else { 6 }) {
                0 => Op::MulScalar(a, rng.uniform(-1.5, 1.5)),
                1 => Op::Add(a, b),
                2 => Op::Mul(a, b),
                3 | 4 => Op::Tanh(a),
                5 => Op::Matmul(a, b),
                _ => Op::Checkpoint(
                    a,
                    rng.uniform(-1.5, 1.5),
                    rng.chance(50).then(|| rng.below(DEVICES)),
                ),
            };
            let device = if on_devices && rng.chance(70) {
                soak_device(rng.below(DEVICES))
            } else {
                Device::Cpu
            };
            ops.push((op, device));
        }
        let fault = match rng.below(100) {
            0..=4 => Fault::Error,
            5..=7 => Fault::ErrorInReentrant,
            8..=11 => Fault::PanicInHook,
            12..=13 => Fault::PanicInNode,
            _ => Fault::None,
        };
        let mode = match rng.below(10) {
            0 | 1 => Mode::RetainTwice,
            2 | 3 => Mode::Grad,
            _ => Mode::Backward,
        };
        let mut program = Program {
            m,
            leaves,
            ops,
            fault,
            fault_site: 0,
            mode,
        };
        let last = program.leaves.len() + program.ops.len() - 1;
        program.fault_site = if rng.chance(50) {
            last
        } else {
            // Any op output the loss depends on (so the faulty node surely runs).
            let reached = program.evaluate().1;
            let sites: Vec<usize> = (program.leaves.len()..=last)
                .filter(|&v| reached[v])
                .collect();
            sites[rng.below(sites.len())]
        };
        program
    }

    fn uses_devices(&self) -> bool {
        self.ops
            .iter()
            .any(|(op, d)| *d != Device::Cpu || matches!(op, Op::Checkpoint(_, _, Some(_))))
    }

    fn is_reentrant(&self) -> bool {
        self.fault == Fault::ErrorInReentrant
            || self
                .ops
                .iter()
                .any(|(op, _)| matches!(op, Op::Checkpoint(..)))
    }

    /// The expected gradient of `sum(last value)` w.r.t. each leaf, `None` for a leaf the loss
    /// does not depend on.
    fn reference(&self) -> Vec<Option<Vec<f64>>> {
        self.evaluate().0
    }

    /// The reference evaluator, a flat tape of plain `Vec<f64>` (no engine): the gradient of
    /// `sum(last value)` w.r.t. each leaf, and whether the loss depends on each value.
    fn evaluate(&self) -> (Vec<Option<Vec<f64>>>, Vec<bool>) {
        let m = self.m;
        let matmul = |a: &[f64], b: &[f64], ta: bool, tb: bool| -> Vec<f64> {
            let at = |i: usize, k: usize| if ta { a[k * m + i] } else { a[i * m + k] };
            let bt = |k: usize, j: usize| if tb { b[j * m + k] } else { b[k * m + j] };
            let mut out = vec![0.0; m * m];
            for i in 0..m {
                for j in 0..m {
                    out[i * m + j] = (0..m).map(|k| at(i, k) * bt(k, j)).sum();
                }
            }
            out
        };
        let mut vals: Vec<Vec<f64>> = self.leaves.clone();
        for (op, _) in &self.ops {
            let v = match *op {
                Op::MulScalar(a, s) => vals[a].iter().map(|x| x * s).collect(),
                Op::Add(a, b) => vals[a].iter().zip(&vals[b]).map(|(x, y)| x + y).collect(),
                Op::Mul(a, b) => vals[a].iter().zip(&vals[b]).map(|(x, y)| x * y).collect(),
                Op::Tanh(a) => vals[a].iter().map(|x| x.tanh()).collect(),
                Op::Matmul(a, b) => matmul(&vals[a], &vals[b], false, false),
                Op::Checkpoint(a, s, _) => vals[a].iter().map(|x| s * x.tanh()).collect(),
            };
            vals.push(v);
        }
        let n = vals.len();
        let mut grads = vec![vec![0.0; m * m]; n];
        let mut reached = vec![false; n];
        grads[n - 1] = vec![1.0; m * m];
        reached[n - 1] = true;
        let n_leaves = self.leaves.len();
        for (i, (op, _)) in self.ops.iter().enumerate().rev() {
            let out = n_leaves + i;
            if !reached[out] {
                continue;
            }
            let g = grads[out].clone();
            let mut add = |target: usize, contribution: Vec<f64>| {
                reached[target] = true;
                for (t, c) in grads[target].iter_mut().zip(contribution) {
                    *t += c;
                }
            };
            match *op {
                Op::MulScalar(a, s) => add(a, g.iter().map(|g| g * s).collect()),
                Op::Add(a, b) => {
                    add(a, g.clone());
                    add(b, g);
                }
                Op::Mul(a, b) => {
                    add(a, g.iter().zip(&vals[b]).map(|(g, y)| g * y).collect());
                    add(b, g.iter().zip(&vals[a]).map(|(g, x)| g * x).collect());
                }
                Op::Tanh(a) => add(
                    a,
                    g.iter()
                        .zip(&vals[out])
                        .map(|(g, y)| g * (1.0 - y * y))
                        .collect(),
                ),
                Op::Matmul(a, b) => {
                    add(a, matmul(&g, &vals[b], false, true));
                    add(b, matmul(&vals[a], &g, true, false));
                }
                Op::Checkpoint(a, s, _) => add(
                    a,
                    g.iter()
                        .zip(&vals[a])
                        .map(|(g, x)| g * s * (1.0 - x.tanh().powi(2)))
                        .collect(),
                ),
            }
        }
        let leaf_grads = (0..n_leaves)
            .map(|i| reached[i].then(|| grads[i].clone()))
            .collect();
        (leaf_grads, reached)
    }

    /// Builds the program on the engine: its leaves and its loss, with `fault` injected at
    /// `fault_site` (tagged with `tag`).
    fn build(&self, fault: Fault, tag: &str) -> Result<(Vec<Tensor>, Tensor)> {
        let m = self.m;
        let leaves: Vec<Tensor> = self
            .leaves
            .iter()
            .map(|v| Tensor::from_vec(v.clone(), &[m, m])?.requires_grad_(true))
            .collect::<Result<_>>()?;
        let mut vals = leaves.clone();
        for &(op, device) in &self.ops {
            let on = |i: usize| -> Result<Tensor> {
                let t: &Tensor = &vals[i];
                if t.device() == device {
                    Ok(t.clone())
                } else {
                    t.to(device)
                }
            };
            let v = match op {
                Op::MulScalar(a, s) => on(a)?.mul_scalar(s)?,
                Op::Add(a, b) => on(a)?.add(&on(b)?)?,
                Op::Mul(a, b) => on(a)?.mul(&on(b)?)?,
                Op::Tanh(a) => on(a)?.tanh()?,
                Op::Matmul(a, b) => on(a)?.matmul(&on(b)?)?,
                Op::Checkpoint(a, s, None) => {
                    checkpoint(&on(a)?, Arc::new(move |t: &Tensor| t.tanh()?.mul_scalar(s)))?
                }
                Op::Checkpoint(a, s, Some(hop)) => checkpoint(
                    &on(a)?,
                    Arc::new(move |t: &Tensor| {
                        let there = t.to(soak_device(hop))?;
                        checkpoint(&there, Arc::new(|u: &Tensor| u.tanh()))?
                            .mul_scalar(s)?
                            .to(t.device())
                    }),
                )?,
            };
            let v = if vals.len() == self.fault_site {
                inject(&v, fault, tag)?
            } else {
                v
            };
            vals.push(v);
        }
        let out = vals.pop().expect("a program has at least one op");
        Ok((leaves, out.sum()?))
    }

    fn describe(&self) -> String {
        format!(
            "{} ops on {m}x{m} matrices from {} leaves, mode {:?}, fault {:?} at value {}{}{}: {:?}",
            self.ops.len(),
            self.leaves.len(),
            self.mode,
            self.fault,
            self.fault_site,
            if self.uses_devices() {
                ", virtual devices"
            } else {
                ""
            },
            if self.is_reentrant() {
                ", reentrant"
            } else {
                ""
            },
            self.ops,
            m = self.m,
        )
    }
}

/// `t` with `fault` attached: through a node that fails or panics, through a checkpoint whose
/// nested pass fails, or with a hook that panics.
fn inject(t: &Tensor, fault: Fault, tag: &str) -> Result<Tensor> {
    let message = format!("injected error {tag}");
    match fault {
        Fault::None => Ok(t.clone()),
        Fault::Error => failing(t, message),
        Fault::ErrorInReentrant => {
            checkpoint(t, Arc::new(move |t: &Tensor| failing(t, message.clone())))
        }
        Fault::PanicInHook => {
            panic_in_hook(t, tag.to_owned())?;
            Ok(t.clone())
        }
        Fault::PanicInNode => panicking(t, tag.to_owned()),
    }
}

// ---------------------------------------------------------------------------------------------
// Running and checking one pass

/// What one thread saw.
#[derive(Default, Debug)]
struct Tally {
    passes: usize,
    reentrant: usize,
    on_devices: usize,
    gradients_checked: usize,
    errors_injected: usize,
    errors_seen: usize,
    panics_injected: usize,
    panics_seen: usize,
    max_pass: Duration,
    /// Passes with a wrong gradient or a wrong outcome.
    wrong: usize,
    /// The first few of them, described.
    wrong_examples: Vec<String>,
}

/// Runs `program` without a fault and compares the leaves' gradients with the reference.
fn run_clean(program: &Program, tally: &mut Tally) -> Result<Vec<String>> {
    let (leaves, loss) = program.build(Fault::None, "")?;
    let (got, scale): (Vec<Option<Tensor>>, f64) = match program.mode {
        Mode::Backward => {
            loss.backward()?;
            (leaves.iter().map(Tensor::grad).collect(), 1.0)
        }
        Mode::RetainTwice => {
            loss.backward_with(BackwardOptions::new().retain_graph(true))?;
            loss.backward()?;
            (leaves.iter().map(Tensor::grad).collect(), 2.0)
        }
        Mode::Grad => {
            let g = grad(&[loss], &leaves, GradOptions::new().allow_unused(true))?;
            if let Some(i) = leaves.iter().position(|l| l.grad().is_some()) {
                return Ok(vec![format!("grad() wrote leaf {i}'s .grad")]);
            }
            (g, 1.0)
        }
    };
    let mut wrong = Vec::new();
    for (i, (got, expected)) in got.iter().zip(program.reference()).enumerate() {
        match (got, expected) {
            (None, None) => {}
            (Some(g), Some(e)) => {
                tally.gradients_checked += 1;
                let g = g.to_vec::<f64>()?;
                let tol = RTOL * (1.0 + e.iter().fold(0.0f64, |a, x| a.max(x.abs())) * scale);
                if g.len() != e.len() || g.iter().zip(&e).any(|(g, e)| (g - e * scale).abs() > tol)
                {
                    wrong.push(format!("leaf {i}: got {g:?}, expected {scale} x {e:?}"));
                }
            }
            (g, e) => wrong.push(format!(
                "leaf {i}: got {}, expected {}",
                if g.is_some() { "a gradient" } else { "none" },
                if e.is_some() { "a gradient" } else { "none" }
            )),
        }
    }
    Ok(wrong)
}

/// Runs `program` with its fault and checks that the pass returned exactly that fault and left
/// no gradient behind.
fn run_faulty(program: &Program, tag: &str, tally: &mut Tally) -> Result<Vec<String>> {
    let (leaves, loss) = program.build(program.fault, tag)?;
    let result = match program.mode {
        Mode::Backward => loss.backward(),
        Mode::RetainTwice => loss.backward_with(BackwardOptions::new().retain_graph(true)),
        Mode::Grad => grad(&[loss], &leaves, GradOptions::new().allow_unused(true)).map(|_| ()),
    };
    let mut wrong = Vec::new();
    match (program.fault, result) {
        (Fault::Error | Fault::ErrorInReentrant, Err(e)) => {
            tally.errors_injected += 1;
            if e.to_string() == format!("injected error {tag}") {
                tally.errors_seen += 1;
            } else {
                wrong.push(format!("expected the injected error, got {e:?}"));
            }
        }
        (Fault::PanicInHook | Fault::PanicInNode, Err(Error::Panic { message, .. })) => {
            tally.panics_injected += 1;
            if message == format!("{INJECTED_PANIC} {tag}") {
                tally.panics_seen += 1;
            } else {
                wrong.push(format!("expected the injected panic, got {message:?}"));
            }
        }
        (fault, result) => {
            match fault {
                Fault::PanicInHook | Fault::PanicInNode => tally.panics_injected += 1,
                _ => tally.errors_injected += 1,
            }
            wrong.push(format!("injected {fault:?}, the pass returned {result:?}"));
        }
    }
    // A fault at the output sits before every leaf's node: no gradient may have landed. (At a
    // value inside the graph, other branches may have reached their leaves first.)
    let at_output = program.fault_site == program.leaves.len() + program.ops.len() - 1;
    if let Some(i) = leaves.iter().position(|l| at_output && l.grad().is_some()) {
        wrong.push(format!("the failed pass left a gradient in leaf {i}"));
    }
    Ok(wrong)
}

/// One pass: the program of `seed`; a faulty one is run again cleanly, so every pass also checks
/// that the engine is still usable after its fault.
fn run_pass(seed: u64, tag: &str, tally: &mut Tally) {
    let program = Program::generate(seed);
    let start = Instant::now();
    let mut wrong = Vec::new();
    if program.fault != Fault::None {
        match run_faulty(&program, tag, tally) {
            Ok(w) => wrong.extend(w),
            Err(e) => wrong.push(format!("building the faulty pass failed: {e}")),
        }
    }
    match run_clean(&program, tally) {
        Ok(w) => wrong.extend(w),
        Err(e) => wrong.push(format!("the clean pass failed: {e}")),
    }
    let elapsed = start.elapsed();
    tally.passes += 1;
    tally.reentrant += usize::from(program.is_reentrant());
    tally.on_devices += usize::from(program.uses_devices());
    tally.max_pass = tally.max_pass.max(elapsed);
    if !wrong.is_empty() {
        tally.wrong += 1;
        if tally.wrong_examples.len() < 5 {
            tally.wrong_examples.push(format!(
                "pass {tag} (seed {seed:#x}, {}): {}",
                program.describe(),
                wrong.join("; ")
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Threads and the watchdog

enum Event {
    Started {
        thread: usize,
        pass: usize,
        seed: u64,
        at: Instant,
    },
    Finished {
        thread: usize,
    },
    Done {
        thread: usize,
        tally: Box<Tally>,
    },
    Crashed {
        thread: usize,
        message: String,
    },
}

fn pass_seed(thread: usize, pass: usize) -> u64 {
    let mut rng = Rng(BASE_SEED ^ ((thread as u64) << 48) ^ pass as u64);
    rng.next()
}

fn worker(thread: usize, passes: usize, events: mpsc::Sender<Event>) {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut tally = Tally::default();
        for pass in 0..passes {
            let seed = pass_seed(thread, pass);
            let _ = events.send(Event::Started {
                thread,
                pass,
                seed,
                at: Instant::now(),
            });
            run_pass(seed, &format!("{thread}.{pass}"), &mut tally);
            let _ = events.send(Event::Finished { thread });
        }
        tally
    }));
    let _ = events.send(match run {
        Ok(tally) => Event::Done {
            thread,
            tally: Box::new(tally),
        },
        Err(payload) => Event::Crashed {
            thread,
            message: payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default(),
        },
    });
}

/// Waits for every worker, failing (with the stuck pass's description) if a pass outlives
/// [`PASS_LIMIT`]. Returns the tallies.
fn watch(events: mpsc::Receiver<Event>, handles: Vec<JoinHandle<()>>) -> Vec<Tally> {
    let mut running: Vec<Option<(usize, u64, Instant)>> = vec![None; handles.len()];
    let mut tallies = Vec::new();
    let mut crashed = Vec::new();
    let mut finished = 0;
    let mut last_event = Instant::now();
    while finished < handles.len() {
        // Sleep until the next event or the oldest running pass's deadline.
        let deadline = running
            .iter()
            .flatten()
            .map(|(_, _, at)| *at + PASS_LIMIT)
            .min();
        let timeout = deadline.map_or(PASS_LIMIT, |d| d.saturating_duration_since(Instant::now()));
        let event = events.recv_timeout(timeout);
        if event.is_ok() {
            last_event = Instant::now();
        }
        match event {
            Ok(Event::Started {
                thread,
                pass,
                seed,
                at,
            }) => running[thread] = Some((pass, seed, at)),
            Ok(Event::Finished { thread }) => running[thread] = None,
            Ok(Event::Done { thread, tally }) => {
                running[thread] = None;
                tallies.push(*tally);
                finished += 1;
            }
            Ok(Event::Crashed { thread, message }) => {
                running[thread] = None;
                crashed.push(format!("thread {thread}: {message}"));
                finished += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                for (thread, r) in running.iter().enumerate() {
                    if let Some((pass, seed, at)) = r
                        && at.elapsed() >= PASS_LIMIT
                    {
                        // The stuck threads are left behind: the test fails and the process
                        // exits with them, instead of hanging on a join.
                        panic!(
                            "watchdog: pass {thread}.{pass} has run for {:.1} s (limit {} \
                                 s): seed {seed:#x}, {}",
                            at.elapsed().as_secs_f64(),
                            PASS_LIMIT.as_secs(),
                            Program::generate(*seed).describe()
                        );
                    }
                }
                // A worker stuck outside a pass would starve the loop above of deadlines.
                assert!(
                    last_event.elapsed() < PASS_LIMIT,
                    "watchdog: no worker has reported for {:.1} s",
                    last_event.elapsed().as_secs_f64()
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("watchdog: every worker hung up before reporting")
            }
        }
    }
    for h in handles {
        h.join().expect("a worker reported, so it returns");
    }
    assert!(crashed.is_empty(), "workers crashed: {crashed:?}");
    tallies
}

fn passes_per_thread() -> usize {
    match std::env::var("AUTOGRAD_SOAK_PASSES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("AUTOGRAD_SOAK_PASSES={v:?} is not a number")),
        Err(_) => DEFAULT_PASSES,
    }
}

#[test]
fn soak() {
    quiet_injected_panics();
    let passes = passes_per_thread();
    // Warm-up on this thread: starts every device thread and the pools, so the thread count
    // and live allocations below are taken with the engine fully started.
    let mut warm = Tally::default();
    for pass in 0..64 {
        run_pass(pass_seed(usize::MAX >> 16, pass), "warm-up", &mut warm);
    }
    for d in 0..DEVICES {
        let x = Tensor::scalar(1.0f64).requires_grad_(true).unwrap();
        x.to(soak_device(d)).unwrap().backward().unwrap();
    }
    assert_eq!(warm.wrong, 0, "warm-up: {:#?}", warm.wrong_examples);
    empty_cache();
    let threads_before = thread_count();
    let live_before = Live::now();
    let on_gpu = soak_device(0) == Device::Cuda(0);
    let gpu_bytes_before = on_gpu.then(|| autograd::cuda::memory_allocated(0).unwrap());
    reset_peak();

    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let handles = (0..THREADS)
        .map(|t| {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("soak-{t}"))
                .spawn(move || worker(t, passes, tx))
                .expect("spawn a soak thread")
        })
        .collect();
    drop(tx);
    let tallies = watch(rx, handles);
    let elapsed = start.elapsed();

    empty_cache();
    let live_after = Live::now();
    let threads_after = thread_count();
    let gpu_bytes_after = on_gpu.then(|| autograd::cuda::memory_allocated(0).unwrap());
    let sum = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    let wrong = sum(|t| t.wrong);
    let examples: Vec<&String> = tallies.iter().flat_map(|t| &t.wrong_examples).collect();
    let max_pass = tallies.iter().map(|t| t.max_pass).max().unwrap_or_default();
    println!(
        "soak: {THREADS} threads x {passes} passes = {} passes in {:.1} s ({} reentrant, {} on \
         devices {}, {} gradients checked against the reference)",
        sum(|t| t.passes),
        elapsed.as_secs_f64(),
        sum(|t| t.reentrant),
        sum(|t| t.on_devices),
        (0..DEVICES)
            .map(|d| soak_device(d).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        sum(|t| t.gradients_checked),
    );
    println!(
        "soak: errors injected {}, seen {}; panics injected {}, seen {}; wrong {}; hangs 0; \
         max pass {:.1} ms (limit {} s)",
        sum(|t| t.errors_injected),
        sum(|t| t.errors_seen),
        sum(|t| t.panics_injected),
        sum(|t| t.panics_seen),
        wrong,
        max_pass.as_secs_f64() * 1e3,
        PASS_LIMIT.as_secs(),
    );
    println!(
        "soak: live before {live_before}, after {live_after}; peak {} bytes above before; \
         threads {} -> {}",
        peak_bytes().saturating_sub(live_before.bytes.max(0) as usize),
        threads_before.map_or("unknown".to_owned(), |n| n.to_string()),
        threads_after.map_or("unknown".to_owned(), |n| n.to_string()),
    );
    assert_eq!(
        wrong, 0,
        "passes with wrong results, for example: {examples:#?}"
    );
    assert_eq!(sum(|t| t.passes), THREADS * passes);
    assert_eq!(sum(|t| t.errors_seen), sum(|t| t.errors_injected));
    assert_eq!(sum(|t| t.panics_seen), sum(|t| t.panics_injected));
    if passes >= 100 {
        assert!(sum(|t| t.errors_injected) > 0 && sum(|t| t.panics_injected) > 0);
    }
    assert_eq!(
        threads_after, threads_before,
        "the soak left threads behind"
    );
    if on_gpu {
        println!(
            "soak: cuda:0 memory allocated before {gpu_bytes_before:?}, after {gpu_bytes_after:?} bytes"
        );
    }
    assert_eq!(
        gpu_bytes_after, gpu_bytes_before,
        "device memory held by tensors changed over the soak"
    );
    // Bounded state only (per-thread spare tensors on the device threads): nothing that grows
    // with the number of passes.
    assert!(
        live_after.allocs - live_before.allocs <= 1024
            && live_after.bytes - live_before.bytes <= 1 << 20,
        "live memory grew from {live_before} to {live_after}"
    );
}
