//! The forward's plan: the body's values computed in one pass, from the tensor inputs.

use super::emitter::{Emitter, Source};
use super::plan::Plan;
use super::{Program, Var, reduction_used};

/// The forward's plan: body values `want` written out, each wanted reduction's operand written
/// in its place (reduced after the kernel). `None`: not fusable.
pub(super) fn build_forward(prog: &Program, want: &[bool]) -> Option<Plan> {
    let n = prog.vars.len();
    if reduction_used(prog) {
        return None;
    }
    // The kernel writes the wanted values, and the operand of each wanted reduction.
    let mut written = want.to_vec();
    let mut reductions = Vec::new();
    for (v, var) in prog.vars.iter().enumerate() {
        if let Var::Op { op, a, .. } = *var
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
            Var::Op { op, a, b, .. } if needed[v] => {
                needed[usize::from(a)] = true;
                if op.is_binary() {
                    needed[usize::from(b)] = true;
                }
            }
            // A wanted input would be a copy, a wanted dead value is not computed: neither is
            // a kernel's business.
            Var::Input(_) | Var::Dead if want[v] => return None,
            Var::Dead if needed[v] => return None,
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
            Var::Input(k) => e.load(Source::Input(k)),
            Var::Op { op, a, b, s } => {
                let ra = reg[usize::from(a)]?;
                let rb = if op.is_binary() {
                    reg[usize::from(b)]?
                } else {
                    0
                };
                e.forward_op(op, ra, rb, s)
            }
            Var::Dead => None,
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
    Some(Plan::new(e, out_regs, outputs, reductions))
}
