//! A derived function as one kernel each way. When every op of a `#[differentiable(derive)]`
//! body is element-wise, the macro also describes the body as a [`FusedProgram`]; the derived
//! forward then asks [`fused_forward`] for its result and the values its backward keeps, and
//! the derived backward asks [`fused_backward`] for the inputs' gradients, before running the
//! body op by op. Each builds a straight-line [`GeneratedKernel`] (cached per program and per
//! pattern of what is wanted) and runs it in one pass (one launch on a CUDA device). Anything
//! the kernels do not cover returns `Ok(None)`, and the caller runs the ops one by one as
//! before: tensors of different shapes (broadcasting), mixed dtypes or devices, a backward that
//! records a graph (`create_graph`), a gradient arriving at a kept value (double backward), or a
//! value the backward would need that the forward did not keep.
//!
//! The node is the same either way: the forward keeps the same values (as themselves, stand-ins
//! or empties, decided by the derivative rules' `reads`), so saving, version checks and double
//! backward do not depend on which path ran.
//!
//! Both devices run the kernels by default: a CUDA device as CUDA C++ compiled by NVRTC (one
//! launch each way), the CPU in cache-sized blocks with the element functions of its op-by-op
//! kernels, which gives the op-by-op path's bits (`backend/cpu/generated.rs`).
//! [`set_enabled`] and [`run_on_host`] turn the fused path off, everywhere or on the host, for
//! benchmarks and tests that compare the two.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::backend::generated::{GeneratedKernel, Inst, next_id};
use crate::backend::{BinaryOp, UnaryOp};
use crate::sync::{Arc, RwLock};
use crate::tensor::kernels;
use crate::{DType, Device, Result, Tensor};

/// An element-wise op a fused program can hold: the tensor methods and operators of a derived
/// body that map one element to one element.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elementwise {
    Add,
    Sub,
    Mul,
    Div,
    AddScalar,
    SubScalar,
    MulScalar,
    DivScalar,
    RsubScalar,
    RdivScalar,
    Neg,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    Sqrt,
    Abs,
    Pow,
    /// `x.sum()`, all elements: only as a result (its value is no other op's operand).
    Sum,
    /// `x.mean()`, all elements: only as a result.
    Mean,
}

impl Elementwise {
    /// Whether the op reduces every element to one (`sum`, `mean`).
    fn is_reduction(self) -> bool {
        matches!(self, Elementwise::Sum | Elementwise::Mean)
    }

    /// Whether the op takes two tensor operands.
    fn is_binary(self) -> bool {
        matches!(
            self,
            Elementwise::Add | Elementwise::Sub | Elementwise::Mul | Elementwise::Div
        )
    }

    /// The backend's name for a one-operand op with no scalar.
    fn unary(self) -> Option<UnaryOp> {
        Some(match self {
            Elementwise::Neg => UnaryOp::Neg,
            Elementwise::Exp => UnaryOp::Exp,
            Elementwise::Log => UnaryOp::Log,
            Elementwise::Sin => UnaryOp::Sin,
            Elementwise::Cos => UnaryOp::Cos,
            Elementwise::Tanh => UnaryOp::Tanh,
            Elementwise::Sigmoid => UnaryOp::Sigmoid,
            Elementwise::Relu => UnaryOp::Relu,
            Elementwise::Sqrt => UnaryOp::Sqrt,
            Elementwise::Abs => UnaryOp::Abs,
            _ => return None,
        })
    }
}

/// One value of a derived body, numbered as the body's values are (inputs first, then one per
/// op, in order).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedVar {
    /// Tensor input number `k`.
    Input(u16),
    /// `op(a)` or `op(a, b)`; `s` indexes the scalar arguments (one per op that takes one, in
    /// order). Unused operands are 0.
    Op {
        op: Elementwise,
        a: u16,
        b: u16,
        s: u16,
    },
    /// A value no result depends on: neither kernel computes it.
    Dead,
}

/// A derived body whose every live op is element-wise, as the macro writes it.
#[doc(hidden)]
#[derive(Debug)]
pub struct FusedProgram {
    pub vars: &'static [FusedVar],
    /// The values returned, in order.
    pub outputs: &'static [u16],
}

/// Whether host tensors take the fused path (on by default; see the module docs). Relaxed: a
/// switch that publishes no memory.
static ON_HOST: AtomicBool = AtomicBool::new(true);
/// Whether the fused path is taken at all (on by default). Relaxed, as `ON_HOST`.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Fused kernels run so far (forward and backward). Relaxed: a statistic.
static RUNS: AtomicU64 = AtomicU64::new(0);

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
    if !ENABLED.load(Ordering::Relaxed) {
        return false;
    }
    match t.device() {
        Device::Cpu | Device::Virtual(_) => ON_HOST.load(Ordering::Relaxed),
        _ => true,
    }
}

/// A scalar a kernel takes, from the program's scalar arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ScalarArg {
    Raw(u16),
    Neg(u16),
    Recip(u16),
    /// `s - 1` (`pow`'s gradient exponent).
    MinusOne(u16),
    /// `1 / n`, `n` the element count (`mean`'s gradient scale).
    InvCount,
}

impl ScalarArg {
    /// The value, computed in `f64` as the op-by-op path computes it before converting, for a
    /// kernel over `n` elements.
    fn value(self, scalars: &[f64], n: usize) -> f64 {
        match self {
            ScalarArg::Raw(k) => scalars[usize::from(k)],
            ScalarArg::Neg(k) => -scalars[usize::from(k)],
            ScalarArg::Recip(k) => 1.0 / scalars[usize::from(k)],
            ScalarArg::MinusOne(k) => scalars[usize::from(k)] - 1.0,
            ScalarArg::InvCount => 1.0 / n as f64,
        }
    }
}

/// Where a kernel input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Tensor input `k` of the forward.
    Input(u16),
    /// The incoming gradient of result `j`.
    Grad(u16),
    /// The kept value of body value `v`.
    Value(u16),
}

/// A kernel with what its arguments are.
#[derive(Debug)]
struct Plan {
    kernel: GeneratedKernel,
    sources: Vec<Source>,
    scalars: Vec<ScalarArg>,
    /// Per output of the kernel: the body value (forward) or tensor input (backward) it is.
    outputs: Vec<u16>,
    /// Forward: the wanted reductions, `(value, operand)`; the operand is an output of the
    /// kernel, reduced after it.
    reductions: Vec<(u16, u16)>,
}

/// `item`'s index in `list`, appended if it is not there yet.
fn index_of<T: PartialEq>(list: &mut Vec<T>, item: T) -> Option<u16> {
    let k = match list.iter().position(|x| *x == item) {
        Some(k) => k,
        None => {
            list.push(item);
            list.len() - 1
        }
    };
    u16::try_from(k).ok()
}

/// Builds straight-line code, one register per instruction.
#[derive(Default)]
struct Emitter {
    insts: Vec<Inst>,
    sources: Vec<Source>,
    scalars: Vec<ScalarArg>,
}

impl Emitter {
    fn push(&mut self, inst: Inst) -> Option<u16> {
        self.insts.push(inst);
        u16::try_from(self.insts.len() - 1).ok()
    }

    fn load(&mut self, source: Source) -> Option<u16> {
        let k = index_of(&mut self.sources, source)?;
        self.push(Inst::Load(k))
    }

    fn scalar(&mut self, arg: ScalarArg) -> Option<u16> {
        let k = index_of(&mut self.scalars, arg)?;
        self.push(Inst::Scalar(k))
    }

    fn bin(&mut self, op: BinaryOp, a: u16, b: u16) -> Option<u16> {
        self.push(Inst::Binary(op, a, b))
    }

    fn un(&mut self, op: UnaryOp, a: u16) -> Option<u16> {
        self.push(Inst::Unary(op, a))
    }

    /// The forward formula of `op` on registers `a` (and `b`), as the op-by-op kernels
    /// compute it.
    fn forward_op(&mut self, op: Elementwise, a: u16, b: u16, s: u16) -> Option<u16> {
        use Elementwise as E;
        match op {
            E::Add => self.bin(BinaryOp::Add, a, b),
            E::Sub => self.bin(BinaryOp::Sub, a, b),
            E::Mul => self.bin(BinaryOp::Mul, a, b),
            E::Div => self.bin(BinaryOp::Div, a, b),
            // `x - s` runs as `x + (-s)`, `x / s` as `x * (1 / s)` (`Tensor::sub_scalar`,
            // `Tensor::div_scalar`); `s - x` with the scalar on the left.
            E::AddScalar | E::SubScalar | E::MulScalar | E::DivScalar | E::RsubScalar => {
                let (arg, bin) = match op {
                    E::AddScalar => (ScalarArg::Raw(s), BinaryOp::Add),
                    E::SubScalar => (ScalarArg::Neg(s), BinaryOp::Add),
                    E::MulScalar => (ScalarArg::Raw(s), BinaryOp::Mul),
                    E::DivScalar => (ScalarArg::Recip(s), BinaryOp::Mul),
                    _ => (ScalarArg::Raw(s), BinaryOp::Sub),
                };
                let s = self.scalar(arg)?;
                if op == E::RsubScalar {
                    self.bin(bin, s, a)
                } else {
                    self.bin(bin, a, s)
                }
            }
            // `s / x` runs as `reciprocal(x) * s`.
            E::RdivScalar => {
                let one = self.push(Inst::Const(1))?;
                let r = self.bin(BinaryOp::Div, one, a)?;
                let s = self.scalar(ScalarArg::Raw(s))?;
                self.bin(BinaryOp::Mul, r, s)
            }
            E::Pow => {
                let e = self.scalar(ScalarArg::Raw(s))?;
                self.push(Inst::Pow(a, e))
            }
            // A reduced value is not an element's: the kernels never compute one.
            E::Sum | E::Mean => None,
            _ => self.un(op.unary()?, a),
        }
    }
}

/// Which plan of a program a call needs: its kind (forward or backward) and its flags (what is
/// wanted, kept, seeded, needed), one bit each. Inline up to 127 flags, so looking a plan up
/// allocates nothing; the flags' groups have fixed lengths per program, so the bits are
/// unambiguous.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Pattern(smallvec::SmallVec<[u64; 2]>);

impl Pattern {
    fn new(backward: bool, flags: impl IntoIterator<Item = bool>) -> Pattern {
        let mut words = smallvec::SmallVec::new();
        for (n, f) in std::iter::once(backward).chain(flags).enumerate() {
            if n % 64 == 0 {
                words.push(0);
            }
            words[n / 64] |= u64::from(f) << (n % 64);
        }
        Pattern(words)
    }
}

/// The kernels built so far, by program and pattern (`None`: the pattern cannot be fused, so
/// the caller runs the ops one by one). Read-locked per call; written once per new pattern.
type Plans = HashMap<(usize, Pattern), Option<Arc<Plan>>>;

fn plans() -> &'static RwLock<Plans> {
    static PLANS: OnceLock<RwLock<Plans>> = OnceLock::new();
    PLANS.get_or_init(|| RwLock::new(HashMap::new()))
}

/// The plan of `prog` for `pattern`, built by `build` on first use.
fn plan(
    prog: &'static FusedProgram,
    pattern: Pattern,
    build: impl FnOnce() -> Option<Plan>,
) -> Option<Arc<Plan>> {
    let key = (std::ptr::from_ref(prog) as usize, pattern);
    if let Some(p) = plans().read().get(&key) {
        return p.clone();
    }
    let built = build().map(|mut p| {
        p.kernel.id = next_id();
        Arc::new(p)
    });
    plans().write().entry(key).or_insert(built).clone()
}

/// The device, dtype and shape every tensor of a fused call shares, if the kernels can take
/// them: one device where the fused path is on ([`fuses_on`]), one dtype, and one shape
/// with at least one element: `like`'s where given (then a one-element tensor is taken as one
/// value repeated, the gradient of a reduced result), else the first tensor's.
fn common(tensors: &[&Tensor], like: Option<&Tensor>) -> Option<(Device, DType, Vec<usize>)> {
    let first = like.or_else(|| tensors.first().copied())?;
    let (device, dtype, shape) = (first.device(), first.dtype(), first.shape());
    if !fuses_on(first) || first.numel() == 0 {
        return None;
    }
    let fits = |t: &&Tensor| {
        t.device() == device
            && t.dtype() == dtype
            && (t.shape() == shape || (like.is_some() && t.numel() == 1))
    };
    tensors
        .iter()
        .all(fits)
        .then(|| (device, dtype, shape.to_vec()))
}

/// `t` as a kernel over `n` elements reads it: one value repeated (a one-element tensor, or
/// every stride 0, as the gradient `sum` hands back), dense from element 0, else a contiguous
/// copy.
fn readable(t: &Tensor, n: usize) -> Result<(Tensor, bool)> {
    let layout = t.layout();
    if t.numel() == 1 && n != 1 {
        let t = if layout.offset == 0 {
            t.clone()
        } else {
            compact(t)?
        };
        Ok((t, true))
    } else if layout.offset == 0 && layout.is_contiguous() {
        Ok((t.clone(), false))
    } else if layout.offset == 0 && t.strides().iter().all(|&s| s == 0) {
        Ok((t.clone(), true))
    } else {
        Ok((compact(t)?, false))
    }
}

/// A copy of `t`'s elements in a buffer of their own, in order from its start. Not
/// `Tensor::contiguous`, which keeps a view whose strides are contiguous as it is, at its offset
/// into its base's buffer: a generated kernel reads its inputs' buffers from their first
/// element (`x.select(0, 2)` on a CUDA device read element 0).
fn compact(t: &Tensor) -> Result<Tensor> {
    kernels::of_tensor(t)?.contiguous(t)
}

/// Runs `plan` on its sources, returning its outputs.
fn run(plan: &Plan, sources: &[&Tensor], scalars: &[f64], shape: &[usize]) -> Result<Vec<Tensor>> {
    let n = shape.iter().product();
    let values: Vec<f64> = plan.scalars.iter().map(|s| s.value(scalars, n)).collect();
    run_kernel(&plan.kernel, sources, &values, shape)
}

/// Runs `kernel` on `sources` (of `shape`, one device and dtype) with its scalars' values.
pub(crate) fn run_kernel(
    kernel: &GeneratedKernel,
    sources: &[&Tensor],
    values: &[f64],
    shape: &[usize],
) -> Result<Vec<Tensor>> {
    let n = shape.iter().product();
    let (tensors, repeated): (Vec<Tensor>, Vec<bool>) = sources
        .iter()
        .map(|t| readable(t, n))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let outs = kernels::of_tensor(refs[0])?.generated(kernel, &refs, &repeated, values, shape)?;
    RUNS.fetch_add(1, Ordering::Relaxed);
    Ok(outs)
}

/// The derived forward as one kernel: body values `want` (the results, and the values the
/// backward keeps as themselves) computed from `inputs` (indexed by tensor input number) and
/// the body's scalar arguments. `Ok(None)`: not fusable here, run the ops one by one.
#[doc(hidden)]
pub fn fused_forward(
    prog: &'static FusedProgram,
    inputs: &[&Tensor],
    scalars: &[f64],
    want: &[bool],
) -> Result<Option<Vec<Option<Tensor>>>> {
    if want.len() != prog.vars.len() || inputs.is_empty() {
        return Ok(None);
    }
    let Some((_, _, shape)) = common(inputs, None) else {
        return Ok(None);
    };
    let pattern = Pattern::new(false, want.iter().copied());
    let Some(plan) = plan(prog, pattern, || build_forward(prog, want)) else {
        return Ok(None);
    };
    let sources: Vec<&Tensor> = plan
        .sources
        .iter()
        .map(|s| match *s {
            Source::Input(k) => inputs.get(usize::from(k)).copied(),
            Source::Grad(_) | Source::Value(_) => None,
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    if sources.len() != plan.sources.len() || sources.is_empty() {
        return Ok(None);
    }
    let outs = run(&plan, &sources, scalars, &shape)?;
    let mut values: Vec<Option<Tensor>> = vec![None; prog.vars.len()];
    for (t, &v) in outs.into_iter().zip(&plan.outputs) {
        values[usize::from(v)] = Some(t);
    }
    // Reduced results: the op-by-op kernels, on the kernel's output (unrecorded, as the
    // forward runs); an operand only the reduction wanted is dropped.
    let _no_grad = crate::no_grad();
    for &(r, a) in &plan.reductions {
        let (r, a) = (usize::from(r), usize::from(a));
        let Some(operand) = values[a].as_ref() else {
            return Ok(None);
        };
        values[r] = Some(match prog.vars[r] {
            FusedVar::Op {
                op: Elementwise::Mean,
                ..
            } => operand.mean()?,
            _ => operand.sum()?,
        });
    }
    for &(_, a) in &plan.reductions {
        if !want[usize::from(a)] {
            values[usize::from(a)] = None;
        }
    }
    Ok(Some(values))
}

/// Whether a reduction's value is an operand of another op (the kernels compute every other
/// value at the inputs' shape, so a reduced value may only be a result).
fn reduction_used(prog: &FusedProgram) -> bool {
    let reduced = |v: u16| matches!(prog.vars.get(usize::from(v)), Some(FusedVar::Op { op, .. }) if op.is_reduction());
    prog.vars.iter().any(|var| match *var {
        FusedVar::Op { op, a, b, .. } => reduced(a) || (op.is_binary() && reduced(b)),
        _ => false,
    })
}

fn build_forward(prog: &FusedProgram, want: &[bool]) -> Option<Plan> {
    let n = prog.vars.len();
    if reduction_used(prog) {
        return None;
    }
    // The kernel writes the wanted values, and the operand of each wanted reduction.
    let mut written = want.to_vec();
    let mut reductions = Vec::new();
    for (v, var) in prog.vars.iter().enumerate() {
        if let FusedVar::Op { op, a, .. } = *var
            && op.is_reduction()
            && want[v]
        {
            written[v] = false;
            written[usize::from(a)] = true;
            reductions.push((u16::try_from(v).ok()?, a));
        }
    }
    let want = &written[..];
    // What the written values are computed from.
    let mut needed = want.to_vec();
    for v in (0..n).rev() {
        match prog.vars[v] {
            FusedVar::Op { op, a, b, .. } if needed[v] => {
                needed[usize::from(a)] = true;
                if op.is_binary() {
                    needed[usize::from(b)] = true;
                }
            }
            // A wanted input would be a copy, a wanted dead value is not computed: neither is
            // a kernel's business.
            FusedVar::Input(_) | FusedVar::Dead if want[v] => return None,
            FusedVar::Dead if needed[v] => return None,
            _ => {}
        }
    }
    let mut e = Emitter::default();
    let mut reg: Vec<Option<u16>> = vec![None; n];
    for v in 0..n {
        if !needed[v] {
            continue;
        }
        reg[v] = match prog.vars[v] {
            FusedVar::Input(k) => e.load(Source::Input(k)),
            FusedVar::Op { op, a, b, s } => {
                let ra = reg[usize::from(a)]?;
                let rb = if op.is_binary() {
                    reg[usize::from(b)]?
                } else {
                    0
                };
                e.forward_op(op, ra, rb, s)
            }
            FusedVar::Dead => None,
        };
        reg[v]?;
    }
    let outputs: Vec<u16> = (0..n)
        .filter(|&v| want[v])
        .map(|v| u16::try_from(v).ok())
        .collect::<Option<_>>()?;
    let out_regs = outputs
        .iter()
        .map(|&v| reg[usize::from(v)])
        .collect::<Option<_>>()?;
    Some(Plan {
        kernel: GeneratedKernel {
            id: 0,
            n_inputs: e.sources.len(),
            n_scalars: e.scalars.len(),
            insts: e.insts,
            outputs: out_regs,
        },
        sources: e.sources,
        scalars: e.scalars,
        outputs,
        reductions,
    })
}

/// The derived backward as one kernel: the gradients of the tensor inputs that `needs` names,
/// from the incoming gradients of the results (`grads`, one per result) and the values the
/// forward kept as themselves (`values`, one per body value; `None` where it kept a stand-in
/// or nothing). Values the kernel needs and the forward did not keep are recomputed from ones
/// it did. `like`, for a body with a reduced result, is a tensor of the shape before the
/// reduction (what the forward kept of the reduction's operand). Runs only when the backward
/// is not recorded (no `create_graph`). `Ok(None)`: not fusable here, apply the rules one by
/// one.
#[doc(hidden)]
pub fn fused_backward(
    prog: &'static FusedProgram,
    scalars: &[f64],
    values: &[Option<&Tensor>],
    grads: &[Option<&Tensor>],
    needs: &[bool],
    like: Option<&Tensor>,
) -> Result<Option<Vec<Option<Tensor>>>> {
    if crate::grad_mode::is_grad_enabled()
        || values.len() != prog.vars.len()
        || grads.len() != prog.outputs.len()
    {
        return Ok(None);
    }
    let pattern = Pattern::new(
        true,
        (values.iter().map(Option::is_some))
            .chain(grads.iter().map(Option::is_some))
            .chain(needs.iter().copied()),
    );
    let build = || {
        let avail: Vec<bool> = values.iter().map(Option::is_some).collect();
        let seeded: Vec<bool> = grads.iter().map(Option::is_some).collect();
        build_backward(prog, &avail, &seeded, needs)
    };
    let Some(plan) = plan(prog, pattern, build) else {
        return Ok(None);
    };
    let mut out: Vec<Option<Tensor>> = vec![None; needs.len()];
    if plan.kernel.outputs.is_empty() {
        // No gradient reaches a needed input (no result has one): nothing to run.
        return Ok(Some(out));
    }
    let sources: Option<Vec<&Tensor>> = plan
        .sources
        .iter()
        .map(|s| match *s {
            Source::Grad(j) => grads.get(usize::from(j)).copied().flatten(),
            Source::Value(v) => values.get(usize::from(v)).copied().flatten(),
            Source::Input(_) => None,
        })
        .collect();
    let Some(sources) = sources.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let Some((_, _, shape)) = common(&sources, like) else {
        return Ok(None);
    };
    let outs = run(&plan, &sources, scalars, &shape)?;
    for (t, &k) in outs.into_iter().zip(&plan.outputs) {
        out[usize::from(k)] = Some(t);
    }
    Ok(Some(out))
}

/// Reverse mode over the program, in registers: each live op's gradient formula (the one its
/// derivative rule computes) applied in reverse order, contributions summed in the order the
/// derived backward sums them.
fn build_backward(
    prog: &FusedProgram,
    avail: &[bool],
    seeded: &[bool],
    needs: &[bool],
) -> Option<Plan> {
    use Elementwise as E;
    let n = prog.vars.len();
    if reduction_used(prog) {
        return None;
    }
    // Which values lead to an input whose gradient is needed.
    let mut bneeds = vec![false; n];
    for v in 0..n {
        bneeds[v] = match prog.vars[v] {
            FusedVar::Input(k) => needs.get(usize::from(k)).copied().unwrap_or(false),
            FusedVar::Op { op, a, b, .. } => {
                bneeds[usize::from(a)] || (op.is_binary() && bneeds[usize::from(b)])
            }
            FusedVar::Dead => false,
        };
    }
    let mut b = Backward {
        prog,
        avail,
        e: Emitter::default(),
        value: vec![None; n],
    };
    let mut adj: Vec<Option<u16>> = vec![None; n];
    for (j, &o) in prog.outputs.iter().enumerate() {
        if seeded.get(j).copied().unwrap_or(false) {
            let g = b.e.load(Source::Grad(u16::try_from(j).ok()?))?;
            let o = usize::from(o);
            adj[o] = Some(match adj[o] {
                Some(acc) => b.e.bin(BinaryOp::Add, acc, g)?,
                None => g,
            });
        }
    }
    for v in (0..n).rev() {
        let FusedVar::Op { op, a, b: rhs, s } = prog.vars[v] else {
            continue;
        };
        let Some(g) = adj[v] else { continue };
        if !bneeds[v] {
            continue;
        }
        let operands: &[u16] = if op.is_binary() { &[a, rhs] } else { &[a] };
        for (i, &t) in operands.iter().enumerate() {
            if !bneeds[usize::from(t)] {
                continue;
            }
            let c = match (op, i) {
                (E::Add | E::AddScalar | E::SubScalar, _) | (E::Sub, 0) => g,
                (E::Sub, _) | (E::Neg | E::RsubScalar, _) => b.e.un(UnaryOp::Neg, g)?,
                (E::Mul, 0) => {
                    let y = b.val(rhs)?;
                    b.e.bin(BinaryOp::Mul, g, y)?
                }
                (E::Mul, _) => {
                    let x = b.val(a)?;
                    b.e.bin(BinaryOp::Mul, g, x)?
                }
                (E::Div, 0) => {
                    let y = b.val(rhs)?;
                    b.e.bin(BinaryOp::Div, g, y)?
                }
                (E::Div, _) => {
                    // -(g * x / (y * y))
                    let (x, y) = (b.val(a)?, b.val(rhs)?);
                    let gx = b.e.bin(BinaryOp::Mul, g, x)?;
                    let yy = b.e.bin(BinaryOp::Mul, y, y)?;
                    let q = b.e.bin(BinaryOp::Div, gx, yy)?;
                    b.e.un(UnaryOp::Neg, q)?
                }
                (E::MulScalar, _) => {
                    let s = b.e.scalar(ScalarArg::Raw(s))?;
                    b.e.bin(BinaryOp::Mul, g, s)?
                }
                (E::DivScalar, _) => {
                    let s = b.e.scalar(ScalarArg::Recip(s))?;
                    b.e.bin(BinaryOp::Mul, g, s)?
                }
                (E::RdivScalar, _) => {
                    // g * (-s) / (x * x)
                    let x = b.val(a)?;
                    let s = b.e.scalar(ScalarArg::Neg(s))?;
                    let gs = b.e.bin(BinaryOp::Mul, g, s)?;
                    let xx = b.e.bin(BinaryOp::Mul, x, x)?;
                    b.e.bin(BinaryOp::Div, gs, xx)?
                }
                (E::Exp, _) => {
                    let y = b.val(v_u16(v)?)?;
                    b.e.bin(BinaryOp::Mul, g, y)?
                }
                (E::Log, _) => {
                    let x = b.val(a)?;
                    b.e.bin(BinaryOp::Div, g, x)?
                }
                (E::Sin, _) => {
                    let x = b.val(a)?;
                    let c = b.e.un(UnaryOp::Cos, x)?;
                    b.e.bin(BinaryOp::Mul, g, c)?
                }
                (E::Cos, _) => {
                    let x = b.val(a)?;
                    let s = b.e.un(UnaryOp::Sin, x)?;
                    let ns = b.e.un(UnaryOp::Neg, s)?;
                    b.e.bin(BinaryOp::Mul, g, ns)?
                }
                (E::Tanh, _) => {
                    // g * (1 - y²)
                    let y = b.val(v_u16(v)?)?;
                    let one = b.e.push(Inst::Const(1))?;
                    let yy = b.e.bin(BinaryOp::Mul, y, y)?;
                    let d = b.e.bin(BinaryOp::Sub, one, yy)?;
                    b.e.bin(BinaryOp::Mul, g, d)?
                }
                (E::Sigmoid, _) => {
                    // g * (y * (1 - y))
                    let y = b.val(v_u16(v)?)?;
                    let one = b.e.push(Inst::Const(1))?;
                    let d = b.e.bin(BinaryOp::Sub, one, y)?;
                    let yd = b.e.bin(BinaryOp::Mul, y, d)?;
                    b.e.bin(BinaryOp::Mul, g, yd)?
                }
                (E::Relu, _) => {
                    let y = b.val(v_u16(v)?)?;
                    b.e.push(Inst::ReluGrad(g, y))?
                }
                (E::Sqrt, _) => {
                    // g / (2y)
                    let y = b.val(v_u16(v)?)?;
                    let yy = b.e.bin(BinaryOp::Add, y, y)?;
                    b.e.bin(BinaryOp::Div, g, yy)?
                }
                (E::Abs, _) => {
                    let x = b.val(a)?;
                    let sg = b.e.un(UnaryOp::Sign, x)?;
                    b.e.bin(BinaryOp::Mul, g, sg)?
                }
                (E::Pow, _) => {
                    let x = b.val(a)?;
                    let e = b.e.scalar(ScalarArg::Raw(s))?;
                    let e1 = b.e.scalar(ScalarArg::MinusOne(s))?;
                    b.e.push(Inst::PowGrad(g, x, e, e1))?
                }
                // The reduced result's gradient, repeated over every element (scaled by 1/n
                // first, as `mean`'s backward does).
                (E::Sum, _) => g,
                (E::Mean, _) => {
                    let k = b.e.scalar(ScalarArg::InvCount)?;
                    b.e.bin(BinaryOp::Mul, g, k)?
                }
            };
            let t = usize::from(t);
            adj[t] = Some(match adj[t] {
                Some(acc) => b.e.bin(BinaryOp::Add, acc, c)?,
                None => c,
            });
        }
    }
    let mut outputs = Vec::new();
    let mut out_regs = Vec::new();
    for (var, grad) in prog.vars.iter().zip(&adj) {
        if let (&FusedVar::Input(k), &Some(r)) = (var, grad)
            && needs.get(usize::from(k)).copied().unwrap_or(false)
        {
            outputs.push(k);
            out_regs.push(r);
        }
    }
    let e = b.e;
    Some(Plan {
        kernel: GeneratedKernel {
            id: 0,
            n_inputs: e.sources.len(),
            n_scalars: e.scalars.len(),
            insts: e.insts,
            outputs: out_regs,
        },
        sources: e.sources,
        scalars: e.scalars,
        outputs,
        reductions: Vec::new(),
    })
}

fn v_u16(v: usize) -> Option<u16> {
    u16::try_from(v).ok()
}

/// The backward's values: loaded where the forward kept them, else recomputed.
struct Backward<'a> {
    prog: &'a FusedProgram,
    avail: &'a [bool],
    e: Emitter,
    value: Vec<Option<u16>>,
}

impl Backward<'_> {
    /// The register holding body value `v`: its kept value, or its op run again on its
    /// operands' values. `None` if it can be neither (an input the forward did not keep).
    fn val(&mut self, v: u16) -> Option<u16> {
        let vi = usize::from(v);
        if let Some(r) = self.value[vi] {
            return Some(r);
        }
        let r = if self.avail[vi] {
            self.e.load(Source::Value(v))?
        } else {
            match self.prog.vars[vi] {
                // Recomputed from its operands: the depth is bounded by the body's length.
                FusedVar::Op { op, a, b, s } => {
                    let ra = self.val(a)?;
                    let rb = if op.is_binary() { self.val(b)? } else { 0 };
                    self.e.forward_op(op, ra, rb, s)?
                }
                FusedVar::Input(_) | FusedVar::Dead => return None,
            }
        };
        self.value[vi] = Some(r);
        Some(r)
    }
}

/// Body value `v` of a fused forward's results (it was wanted, so it is there).
#[doc(hidden)]
pub fn take_value(values: &mut [Option<Tensor>], v: usize) -> Result<Tensor> {
    values.get_mut(v).and_then(Option::take).ok_or_else(|| {
        crate::Error::shape(
            "fused forward",
            format!("internal error: value {v} was not computed"),
        )
    })
}

/// What a fused forward keeps of intermediate `v` for a backward that reads `read` of it: the
/// value it computed, or (a stand-in or nothing) what [`keep_ref`](super::keep_ref) keeps of
/// `like`, a tensor of the same shape, dtype and device.
#[doc(hidden)]
pub fn keep_value(
    values: &mut [Option<Tensor>],
    v: usize,
    read: super::Read,
    like: &Tensor,
) -> Result<Tensor> {
    match read {
        super::Read::Value => take_value(values, v),
        read => super::keep_ref(like, read),
    }
}

/// A kernel for the backends' tests, with what its inputs are and its scalars' values.
#[cfg(test)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) kernel: GeneratedKernel,
    /// Per kernel input: 0 and 1 the program's inputs `x` and `y`, 2 the incoming gradient,
    /// 3 and 4 the forward's values `op(x[, y])` and the result.
    pub(crate) inputs: Vec<usize>,
    /// Per kernel input: whether it is one value repeated (element 0 read for every element).
    pub(crate) repeated: Vec<bool>,
    pub(crate) scalars: Vec<f64>,
}

/// Kernels for the backends' tests: for every [`Elementwise`] op, `op(x[, y]) * y` as a
/// forward (the op's value and the result out), a backward loading every value, and a
/// backward loading only the inputs (the op's value recomputed), in that order.
#[cfg(test)]
pub(crate) fn sample_kernels() -> Vec<Sample> {
    let mut out = Vec::new();
    let ops = [
        (Elementwise::Add, 0.0),
        (Elementwise::Sub, 0.0),
        (Elementwise::Mul, 0.0),
        (Elementwise::Div, 0.0),
        (Elementwise::AddScalar, 0.7),
        (Elementwise::SubScalar, 0.7),
        (Elementwise::MulScalar, -1.3),
        (Elementwise::DivScalar, 3.0),
        (Elementwise::RsubScalar, 0.25),
        (Elementwise::RdivScalar, 2.5),
        (Elementwise::Neg, 0.0),
        (Elementwise::Exp, 0.0),
        (Elementwise::Log, 0.0),
        (Elementwise::Sin, 0.0),
        (Elementwise::Cos, 0.0),
        (Elementwise::Tanh, 0.0),
        (Elementwise::Sigmoid, 0.0),
        (Elementwise::Relu, 0.0),
        (Elementwise::Sqrt, 0.0),
        (Elementwise::Abs, 0.0),
        (Elementwise::Pow, 2.0),
        (Elementwise::Pow, 3.0),
        (Elementwise::Pow, -1.5),
    ];
    for (op, s) in ops {
        let vars: &'static [FusedVar] = Box::leak(Box::new([
            FusedVar::Input(0),
            FusedVar::Input(1),
            FusedVar::Op {
                op,
                a: 0,
                b: 1,
                s: 0,
            },
            FusedVar::Op {
                op: Elementwise::Mul,
                a: 2,
                b: 1,
                s: 0,
            },
        ]));
        let prog = FusedProgram {
            vars,
            outputs: &[3],
        };
        let sample = |what: &str, plan: Plan| Sample {
            name: format!("{op:?}({s}) {what}"),
            inputs: plan
                .sources
                .iter()
                .map(|src| match *src {
                    Source::Input(k) => usize::from(k),
                    Source::Grad(_) => 2,
                    Source::Value(v) => [0, 1, 3, 4][usize::from(v)],
                })
                .collect(),
            repeated: vec![false; plan.sources.len()],
            scalars: plan.scalars.iter().map(|a| a.value(&[s], 6)).collect(),
            kernel: plan.kernel,
        };
        let fwd = build_forward(&prog, &[false, false, true, true]).expect("forward");
        out.push(sample("forward", fwd));
        let all = build_backward(&prog, &[true; 4], &[true], &[true, true]).expect("backward");
        out.push(sample("backward", all));
        let inputs = build_backward(&prog, &[true, true, false, false], &[true], &[true, true])
            .expect("backward from the inputs");
        out.push(sample("backward, recomputing", inputs));
    }
    use crate::backend::MapOp;
    for map in [
        MapOp::Clamp { lo: -0.5, hi: 1.0 },
        MapOp::ClampInterior { lo: -0.5, hi: 1.0 },
        MapOp::Erf,
    ] {
        let (kernel, scalars) = crate::backend::generated::map_kernel(map);
        out.push(Sample {
            name: format!("{map:?} map"),
            kernel: kernel.clone(),
            inputs: vec![0],
            repeated: vec![false],
            scalars: scalars[..kernel.n_scalars].to_vec(),
        });
    }
    // The backward of a loss: `sum` or `mean` of `x * y`, its gradient one repeated value.
    for op in [Elementwise::Sum, Elementwise::Mean] {
        let vars: &'static [FusedVar] = Box::leak(Box::new([
            FusedVar::Input(0),
            FusedVar::Input(1),
            FusedVar::Op {
                op: Elementwise::Mul,
                a: 0,
                b: 1,
                s: 0,
            },
            FusedVar::Op {
                op,
                a: 2,
                b: 0,
                s: 0,
            },
        ]));
        let prog = FusedProgram {
            vars,
            outputs: &[3],
        };
        let plan = build_backward(&prog, &[true, true, false, false], &[true], &[true, true])
            .expect("a loss's backward");
        out.push(Sample {
            name: format!("{op:?} map backward"),
            inputs: plan
                .sources
                .iter()
                .map(|src| match *src {
                    Source::Value(v) => usize::from(v),
                    _ => 2,
                })
                .collect(),
            repeated: plan
                .sources
                .iter()
                .map(|src| matches!(src, Source::Grad(_)))
                .collect(),
            scalars: plan.scalars.iter().map(|a| a.value(&[], 6)).collect(),
            kernel: plan.kernel,
        });
    }
    out
}

/// The samples' data: `x`, `y` and the incoming gradient.
#[cfg(test)]
pub(crate) const SAMPLE_DATA: [[f64; 6]; 3] = [
    [0.3, 1.7, -0.6, 2.2, 0.05, -1.1],
    [1.2, -0.4, 0.9, 0.5, -2.0, 0.7],
    [1.0, -0.5, 2.0, 0.25, 1.5, -1.0],
];

/// Runs every sample on the CPU, in f64: per sample, its outputs.
#[cfg(test)]
pub(crate) fn run_samples_on_the_cpu(samples: &[Sample]) -> Result<Vec<Vec<Vec<f64>>>> {
    let data: Vec<Tensor> = SAMPLE_DATA
        .iter()
        .map(|d| Tensor::from_vec(d.to_vec(), &[6]))
        .collect::<Result<_>>()?;
    let cpu = kernels::of_tensor(&data[0])?;
    let mut values: Vec<Tensor> = Vec::new();
    let mut results = Vec::new();
    for sample in samples {
        if sample.name.ends_with("forward") {
            values.clear();
        }
        let all: Vec<&Tensor> = data.iter().chain(&values).collect();
        let inputs: Vec<&Tensor> = sample.inputs.iter().map(|&i| all[i]).collect();
        let outs = cpu.generated(
            &sample.kernel,
            &inputs,
            &sample.repeated,
            &sample.scalars,
            &[6],
        )?;
        if sample.name.ends_with("forward") {
            values = outs.clone();
        }
        results.push(
            outs.iter()
                .map(Tensor::to_vec::<f64>)
                .collect::<Result<_>>()?,
        );
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x * y + tanh(x)`.
    static PROG: FusedProgram = FusedProgram {
        vars: &[
            FusedVar::Input(0),
            FusedVar::Input(1),
            FusedVar::Op {
                op: Elementwise::Mul,
                a: 0,
                b: 1,
                s: 0,
            },
            FusedVar::Op {
                op: Elementwise::Tanh,
                a: 0,
                b: 0,
                s: 0,
            },
            FusedVar::Op {
                op: Elementwise::Add,
                a: 2,
                b: 3,
                s: 0,
            },
        ],
        outputs: &[4],
    };

    fn tanhs(p: &Plan) -> usize {
        let tanh = |i: &&Inst| matches!(i, Inst::Unary(UnaryOp::Tanh, _));
        p.kernel.insts.iter().filter(tanh).count()
    }

    #[test]
    fn a_backward_recomputes_what_was_not_kept_and_declines_what_it_cannot() {
        let plan = |avail: &[bool], needs: &[bool]| build_backward(&PROG, avail, &[true], needs);
        // Everything the formulas read kept: y (for x's gradient), x (for y's), tanh(x).
        let kept = plan(&[true, true, false, true, false], &[true, true]).expect("kept");
        assert_eq!(tanhs(&kept), 0, "tanh(x) is loaded");
        // tanh(x) not kept: recomputed from x.
        let again = plan(&[true, true, false, false, false], &[true, true]).expect("recomputed");
        assert_eq!(tanhs(&again), 1, "tanh(x) is recomputed");
        // Only y's gradient: the incoming gradient times x.
        let y_only = plan(&[true, false, false, false, false], &[false, true]).expect("y only");
        assert_eq!(y_only.outputs, [1]);
        assert_eq!(y_only.sources, [Source::Grad(0), Source::Value(0)]);
        // x's gradient needs y, which was not kept and cannot be recomputed: declined.
        assert!(plan(&[true, false, false, true, false], &[true, false]).is_none());
        // No gradient arriving: no output.
        let none = build_backward(&PROG, &[true; 5], &[false], &[true, true]).expect("none");
        assert!(none.kernel.outputs.is_empty());
    }

    #[test]
    fn a_forward_declines_an_input_or_dead_value_as_a_result() {
        assert!(build_forward(&PROG, &[true, false, false, false, true]).is_none());
        let fwd = build_forward(&PROG, &[false, false, false, true, true]).expect("forward");
        assert_eq!(fwd.outputs, [3, 4]);
        assert_eq!(fwd.sources, [Source::Input(0), Source::Input(1)]);
    }

    #[test]
    fn the_recomputing_backward_gives_the_bits_of_the_one_that_loads() -> Result<()> {
        let samples = sample_kernels();
        let results = run_samples_on_the_cpu(&samples)?;
        let ops = samples.iter().filter(|s| !s.name.contains(" map")).count();
        for (s, r) in samples[..ops].chunks(3).zip(results.chunks(3)) {
            assert_eq!(r[1].len(), 2, "{}: two gradients", s[1].name);
            for (a, b) in r[1].iter().zip(&r[2]) {
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{}: {a:?} vs {b:?}", s[2].name);
            }
        }
        Ok(())
    }

    /// The forward's and backward's values against the formulas written out in `f64`.
    #[test]
    fn the_kernels_compute_each_ops_value_and_gradients() -> Result<()> {
        let samples = sample_kernels();
        let results = run_samples_on_the_cpu(&samples)?;
        let ops = samples.iter().filter(|s| !s.name.contains(" map")).count();
        let samples = &samples[..ops];
        let [x, y, g] = SAMPLE_DATA;
        let close =
            |a: f64, b: f64| (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * (1.0 + b.abs());
        for (s, r) in samples.chunks(3).zip(results.chunks(3)) {
            let name = &s[0].name;
            for i in 0..6 {
                let (xi, yi, gi) = (x[i], y[i], g[i]);
                let sc: f64 = name[name.find('(').unwrap_or(0) + 1..name.find(')').unwrap_or(0)]
                    .parse()
                    .expect("the sample's scalar");
                // (value, d value / dx, d value / dy)
                let (v, dx, dy) = reference(name, xi, yi, sc);
                assert!(
                    close(r[0][0][i], v),
                    "{name} value at {i}: {} vs {v}",
                    r[0][0][i]
                );
                assert!(close(r[0][1][i], v * yi), "{name} result at {i}");
                // result = v * y: d/dx = g y dv/dx, d/dy = g (v + y dv/dy).
                assert!(
                    close(r[1][0][i], gi * yi * dx),
                    "{name} dx at {i}: {} vs {}",
                    r[1][0][i],
                    gi * yi * dx
                );
                assert!(
                    close(r[1][1][i], gi * (v + yi * dy)),
                    "{name} dy at {i}: {} vs {}",
                    r[1][1][i],
                    gi * (v + yi * dy)
                );
            }
        }
        Ok(())
    }

    /// An op's value and partial derivatives at `(x, y)`, from its sample's name.
    fn reference(name: &str, x: f64, y: f64, s: f64) -> (f64, f64, f64) {
        let op = name.split('(').next().unwrap_or_default();
        match op {
            "Add" => (x + y, 1.0, 1.0),
            "Sub" => (x - y, 1.0, -1.0),
            "Mul" => (x * y, y, x),
            "Div" => (x / y, 1.0 / y, -x / (y * y)),
            "AddScalar" => (x + s, 1.0, 0.0),
            "SubScalar" => (x - s, 1.0, 0.0),
            "MulScalar" => (x * s, s, 0.0),
            "DivScalar" => (x / s, 1.0 / s, 0.0),
            "RsubScalar" => (s - x, -1.0, 0.0),
            "RdivScalar" => (s / x, -s / (x * x), 0.0),
            "Neg" => (-x, -1.0, 0.0),
            "Exp" => (x.exp(), x.exp(), 0.0),
            "Log" => (x.ln(), 1.0 / x, 0.0),
            "Sin" => (x.sin(), x.cos(), 0.0),
            "Cos" => (x.cos(), -x.sin(), 0.0),
            "Tanh" => (x.tanh(), 1.0 - x.tanh().powi(2), 0.0),
            "Sigmoid" => {
                let v = 1.0 / (1.0 + (-x).exp());
                (v, v * (1.0 - v), 0.0)
            }
            "Relu" => (x.max(0.0), if x > 0.0 { 1.0 } else { 0.0 }, 0.0),
            "Sqrt" => (x.sqrt(), 0.5 / x.sqrt(), 0.0),
            "Abs" => (x.abs(), x.signum(), 0.0),
            "Pow" => (x.powf(s), s * x.powf(s - 1.0), 0.0),
            other => panic!("no reference for {other}"),
        }
    }
}
