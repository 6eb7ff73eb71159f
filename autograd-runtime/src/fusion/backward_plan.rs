//! The backward's plan: reverse mode over the program, in registers. Each live op's gradient
//! rule (`gradients.rs`, the formula its derivative rule computes) is applied in reverse order,
//! and contributions are summed in the order the derived backward sums them.

use super::emitter::{Emitter, Source};
use super::gradients::{self, Step};
use super::plan::Plan;
use super::{Program, Var, reduction_used};
use crate::backend::BinaryOp;

/// The backward's plan: the gradients of the tensor inputs `needs` names, from the incoming
/// gradients of the results `seeded` names and the body values `avail` names (what the forward
/// kept as themselves; the others are recomputed where a formula reads them). `None`: not
/// fusable (a value a formula reads can be neither loaded nor recomputed).
pub(super) fn build_backward(
    prog: &Program,
    avail: &[bool],
    seeded: &[bool],
    needs: &[bool],
) -> Option<Plan> {
    if reduction_used(prog) {
        return None;
    }
    let wanted = leads_to_needed(prog, needs);
    let mut b = Backward {
        prog,
        avail,
        e: Emitter::default(),
        value: vec![None; prog.vars.len()],
    };
    // The adjoint of each body value: the register of its gradient so far.
    let mut adj: Vec<Option<u16>> = vec![None; prog.vars.len()];
    for (j, &o) in prog.outputs.iter().enumerate() {
        if seeded.get(j).copied().unwrap_or(false) {
            let g = b.e.load(Source::Grad(u16::try_from(j).ok()?))?;
            b.accumulate(&mut adj, o, g)?;
        }
    }
    for v in (0..prog.vars.len()).rev() {
        let Var::Op { op, a, b: rhs, s } = prog.vars[v] else {
            continue;
        };
        let Some(g) = adj[v] else { continue };
        if !wanted[v] {
            continue;
        }
        let step = Step {
            op,
            v: u16::try_from(v).ok()?,
            a,
            b: rhs,
            s,
            g,
        };
        let operands: &[u16] = if op.is_binary() { &[a, rhs] } else { &[a] };
        for (i, &t) in operands.iter().enumerate() {
            if wanted[usize::from(t)] {
                let c = gradients::contribution(&mut b, &step, i)?;
                b.accumulate(&mut adj, t, c)?;
            }
        }
    }
    let mut outputs = Vec::new();
    let mut out_regs = Vec::new();
    for (var, grad) in prog.vars.iter().zip(&adj) {
        if let (&Var::Input(k), &Some(r)) = (var, grad)
            && needs.get(usize::from(k)).copied().unwrap_or(false)
        {
            outputs.push(k);
            out_regs.push(r);
        }
    }
    Some(Plan::new(b.e, out_regs, outputs, Vec::new()))
}

/// Per body value: whether it leads to a tensor input whose gradient `needs` names (only those
/// values' gradients are computed).
fn leads_to_needed(prog: &Program, needs: &[bool]) -> Vec<bool> {
    let mut wanted = vec![false; prog.vars.len()];
    for v in 0..prog.vars.len() {
        wanted[v] = match prog.vars[v] {
            Var::Input(k) => needs.get(usize::from(k)).copied().unwrap_or(false),
            Var::Op { op, a, b, .. } => {
                wanted[usize::from(a)] || (op.is_binary() && wanted[usize::from(b)])
            }
            Var::Dead => false,
        };
    }
    wanted
}

/// The backward being emitted, with the body's values: loaded where the forward kept them,
/// else recomputed.
pub(super) struct Backward<'a> {
    prog: &'a Program,
    avail: &'a [bool],
    pub(super) e: Emitter,
    /// Per body value: the register holding it, once loaded or recomputed.
    value: Vec<Option<u16>>,
}

impl Backward<'_> {
    /// The register holding body value `v`: its kept value, or its op run again on its
    /// operands' values. `None` if it can be neither (an input the forward did not keep).
    pub(super) fn val(&mut self, v: u16) -> Option<u16> {
        let vi = usize::from(v);
        if let Some(r) = self.value[vi] {
            return Some(r);
        }
        let r = if self.avail[vi] {
            self.e.load(Source::Value(v))?
        } else {
            match self.prog.vars[vi] {
                // Recomputed from its operands: the depth is bounded by the body's length.
                Var::Op { op, a, b, s } => {
                    let ra = self.val(a)?;
                    let rb = if op.is_binary() { self.val(b)? } else { 0 };
                    self.e.forward_op(op, ra, rb, s)?
                }
                Var::Input(_) | Var::Dead => return None,
            }
        };
        self.value[vi] = Some(r);
        Some(r)
    }

    /// Adds contribution `c` to value `t`'s adjoint (the first one is the adjoint).
    fn accumulate(&mut self, adj: &mut [Option<u16>], t: u16, c: u16) -> Option<()> {
        let t = usize::from(t);
        adj[t] = Some(match adj[t] {
            Some(acc) => self.e.bin(BinaryOp::Add, acc, c)?,
            None => c,
        });
        Some(())
    }
}
