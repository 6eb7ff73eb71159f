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
