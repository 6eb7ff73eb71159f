//! The runner: the two entry points the derived pair calls, [`forward`] and
//! [`backward`], which check that the kernels cover the call, find or build the plan and
//! run it on the tensors; and what the forward hands the node of the values it computed.

use crate::sync::Ordering;

use super::backward_plan::build_backward;
use super::emitter::Source;
use super::forward_plan::build_forward;
use super::plan::{Pattern, Plan, plan};
use super::switches::{RUNS, fuses_on};
use super::{Elementwise, Program, Var};
use crate::backend::generated::GeneratedKernel;
use crate::layout::{ElementwiseOrder, Layout, contiguous_strides, elementwise_order};
use crate::ops::{Read, keep_ref};
use crate::tensor::kernels;
use crate::{DType, Device, Result, Tensor};

/// The derived forward as one kernel: body values `want` (the results, and the values the
/// backward keeps as themselves) computed from `inputs` (indexed by tensor input number) and
/// the body's scalar arguments. `Ok(None)`: not fusable here, run the ops one by one.
#[doc(hidden)]
pub fn forward(
    prog: &'static Program,
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
            Var::Op {
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

/// The derived backward as one kernel: the gradients of the tensor inputs that `needs` names,
/// from the incoming gradients of the results (`grads`, one per result) and the values the
/// forward kept as themselves (`values`, one per body value; `None` where it kept a stand-in
/// or nothing). Values the kernel needs and the forward did not keep are recomputed from ones
/// it did. `like`, for a body with a reduced result, is a tensor of the shape before the
/// reduction (what the forward kept of the reduction's operand). Runs only when the backward
/// is not recorded (no `create_graph`). `Ok(None)`: not fusable here, apply the rules one by
/// one.
#[doc(hidden)]
pub fn backward(
    prog: &'static Program,
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

/// Whether a kernel over `n` elements reads `t` as one value repeated: a one-element tensor,
/// or every stride 0 from element 0 (the gradient `sum` hands back).
fn repeated(t: &Tensor, n: usize) -> bool {
    (t.numel() == 1 && n != 1) || (t.layout().offset == 0 && t.strides().iter().all(|&s| s == 0))
}

/// `t` as a kernel writing its outputs densely in `order` reads it: as it is when it is one
/// value repeated (from element 0), or dense from element 0 in that order (its strides are
/// the result's, dims of size 1 aside: a transposed or permuted input of a program whose
/// inputs share its layout is read in memory order, with no copy); else a copy in that order.
fn readable(t: &Tensor, repeated: bool, order: Option<&ElementwiseOrder>) -> Result<Tensor> {
    let l = t.layout();
    let in_order = match order {
        _ if repeated => t.numel() != 1 || l.offset == 0,
        None => l.offset == 0 && l.is_contiguous(),
        Some(o) => {
            l.offset == 0
                && (l.shape.iter().zip(&l.strides).zip(&o.strides))
                    .all(|((&n, s), w)| n == 1 || s == w)
        }
    };
    if in_order {
        return Ok(t.clone());
    }
    // A copy in a buffer of its own from its start. Not `Tensor::contiguous`, which keeps a
    // view whose strides are contiguous as it is, at its offset into its base's buffer: a
    // generated kernel reads its inputs' buffers from their first element.
    let k = kernels::of_tensor(t)?;
    match order {
        Some(o) if !repeated => k.contiguous_in(t, o),
        _ => k.contiguous(t),
    }
}

/// Runs `plan` on its sources, returning its outputs.
fn run(plan: &Plan, sources: &[&Tensor], scalars: &[f64], shape: &[usize]) -> Result<Vec<Tensor>> {
    let n = shape.iter().product();
    let values: Vec<f64> = plan.scalars.iter().map(|s| s.value(scalars, n)).collect();
    run_kernel(&plan.kernel, sources, &values, shape)
}

/// Runs `kernel` on `sources` (of `shape`, one device and dtype) with its scalars' values.
/// Sources that share one layout (those read as one value repeated aside) give the outputs the
/// layout PyTorch's `TensorIterator` gives an element-wise result over them
/// ([`elementwise_order`]) and the kernel runs over memory order: `f(&x.t())` reads `x` as it
/// lies, with no copy, and its result is transposed like `x.t()`. Mixed layouts: C order.
pub(crate) fn run_kernel(
    kernel: &GeneratedKernel,
    sources: &[&Tensor],
    values: &[f64],
    shape: &[usize],
) -> Result<Vec<Tensor>> {
    let n = shape.iter().product();
    let repeated: Vec<bool> = sources.iter().map(|t| repeated(t, n)).collect();
    let layouts: Vec<&Layout> = (sources.iter().zip(&repeated))
        .filter(|&(_, &r)| !r)
        .map(|(t, _)| t.layout())
        .collect();
    // One layout (strides equal but on dims of size 1): PyTorch's result for any body over
    // them; mixed ones run in C order, as PyTorch's result of the body may be in either.
    let same = |l: &&Layout| {
        let first = layouts[0];
        (l.shape.iter().zip(&l.strides).zip(&first.strides)).all(|((&n, a), b)| n == 1 || a == b)
    };
    let order = match layouts.iter().all(same) {
        true => elementwise_order(&layouts, shape),
        false => None,
    };
    let tensors: Vec<Tensor> = (sources.iter().zip(&repeated))
        .map(|(t, &r)| readable(t, r, order.as_ref()))
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let strides = order.map_or_else(|| contiguous_strides(shape), |o| o.strides);
    let outs = kernels::of_tensor(refs[0])?
        .generated(kernel, &refs, &repeated, values, shape, &strides)?;
    RUNS.fetch_add(1, Ordering::Relaxed);
    Ok(outs)
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
/// value it computed, or (a stand-in or nothing) what [`keep_ref`] keeps of
/// `like`, a tensor of the same shape, dtype and device.
#[doc(hidden)]
pub fn keep_value(
    values: &mut [Option<Tensor>],
    v: usize,
    read: Read,
    like: &Tensor,
) -> Result<Tensor> {
    match read {
        Read::Value => take_value(values, v),
        read => keep_ref(like, read),
    }
}
