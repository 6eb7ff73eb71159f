//! The fused path's glue: which groups it takes, and the call of the CPU kernel
//! (`backend::cpu::optim`) through the tensor layer's one locking adapter.

pub(crate) use crate::backend::cpu::optim::{
    AdagradCoeffs, AdamCoeffs, RmsPropCoeffs, SgdCoeffs, Update,
};
use crate::backend::cpu::optim::{Set, step};
use crate::tensor::kernels::{HostSlices, with_host_slices};
use crate::{DType, Result, Tensor};

/// One parameter's part of a fused step.
#[derive(Debug)]
pub(crate) struct FusedSet<'a> {
    /// The parameter, updated in place.
    pub(crate) param: &'a Tensor,
    /// Its gradient.
    pub(crate) grad: Tensor,
    /// Its state tensors, in the order `update` names.
    pub(crate) state: Vec<&'a Tensor>,
    /// This step's coefficients.
    pub(crate) update: Update,
}

/// Whether the fused kernel can update `p` from `g`: contiguous host tensors of `dtype`, the
/// gradient in a storage of its own.
pub(crate) fn can_fuse(p: &Tensor, g: &Tensor, dtype: DType) -> bool {
    p.device().is_host()
        && g.device().is_host()
        && p.dtype() == dtype
        && g.dtype() == dtype
        && p.is_contiguous()
        && g.is_contiguous()
        && !p.shares_storage(g)
}

/// Whether no two of `params` share a storage (tied or aliased parameters go op by op: one
/// pass cannot write one buffer through two handles).
pub(crate) fn distinct_storages<'a>(mut params: impl Iterator<Item = &'a Tensor>) -> bool {
    let mut seen = std::collections::HashSet::new();
    params.all(|p| seen.insert(crate::sync::Arc::as_ptr(&p.0.storage)))
}

/// Runs the fused kernel over `sets` (one group): every parameter and state tensor is locked
/// for writing, every gradient for reading, and each written tensor's version is bumped.
pub(crate) fn run(sets: &[FusedSet<'_>]) -> Result<()> {
    let mut writes: Vec<&Tensor> = Vec::new();
    let mut reads: Vec<&Tensor> = Vec::with_capacity(sets.len());
    for s in sets {
        writes.push(s.param);
        writes.extend(s.state.iter().copied());
        reads.push(&s.grad);
    }
    with_host_slices(&writes, &reads, |slices| match slices {
        HostSlices::F32(w, r) => step(split(sets, w, r)),
        HostSlices::F64(w, r) => step(split(sets, w, r)),
    })
}

/// The locked slices regrouped by parameter.
fn split<'a, T>(sets: &[FusedSet<'_>], w: Vec<&'a mut [T]>, r: Vec<&'a [T]>) -> Vec<Set<'a, T>> {
    let mut w = w.into_iter();
    sets.iter()
        .zip(r)
        .map(|(s, grad)| {
            let param = w.next().expect("invariant: one slice per written tensor");
            let state = (0..s.state.len())
                .map(|_| w.next().expect("invariant: one slice per written tensor"))
                .collect();
            Set {
                param,
                grad,
                state,
                update: s.update,
            }
        })
        .collect()
}
