//! Plans: a generated kernel with what its arguments are, built once per program and pattern
//! of what a call wants (the cache).

use crate::sync::statics::OnceLock;
use std::collections::HashMap;

use super::Program;
use super::emitter::{Emitter, ScalarArg, Source};
use crate::backend::generated::{GeneratedKernel, next_id};
use crate::sync::{Arc, RwLock};

/// A kernel with what its arguments are.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) kernel: GeneratedKernel,
    pub(super) sources: Vec<Source>,
    pub(super) scalars: Vec<ScalarArg>,
    /// Per output of the kernel: the body value (forward) or tensor input (backward) it is.
    pub(super) outputs: Vec<u16>,
    /// Forward: the wanted reductions, `(value, operand)`; the operand is an output of the
    /// kernel, reduced after it.
    pub(super) reductions: Vec<(u16, u16)>,
}

impl Plan {
    /// The plan of what `e` emitted, writing out registers `out_regs` (the kernel's id is set
    /// when the plan is cached).
    pub(super) fn new(
        e: Emitter,
        out_regs: Vec<u16>,
        outputs: Vec<u16>,
        reductions: Vec<(u16, u16)>,
    ) -> Plan {
        Plan {
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
        }
    }
}

/// Which plan of a program a call needs: its kind (forward or backward) and its flags (what is
/// wanted, kept, seeded, needed), one bit each. Inline up to 127 flags, so looking a plan up
/// allocates nothing; the flags' groups have fixed lengths per program, so the bits are
/// unambiguous.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Pattern(smallvec::SmallVec<[u64; 2]>);

impl Pattern {
    pub(super) fn new(backward: bool, flags: impl IntoIterator<Item = bool>) -> Pattern {
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
pub(super) fn plan(
    prog: &'static Program,
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
