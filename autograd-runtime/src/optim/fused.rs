//! The fused path's glue: which groups it takes, and the call of the CPU kernel
//! (`backend::cpu::optim`) or of the CUDA kernel (`backend::cuda::optim`, taken only when a group
//! asks with `fused: Some(true)`) through the tensor layer's locking adapters.

pub(crate) use crate::backend::cpu::optim::{
    AdagradCoeffs, AdamCoeffs, RmsPropCoeffs, SgdCoeffs, Update,
};
use crate::backend::cpu::optim::{Set, step};
use crate::tensor::kernels::{HostSlices, with_host_slices};
use crate::{DType, Device, Result, Tensor};

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

/// Whether the fused kernel can update `p` from `g` in a group whose first parameter is of
/// `dtype` on `device`: contiguous tensors of `dtype`, on the host (both) or both on `device`
/// when that is a CUDA device, the gradient in a storage of its own.
pub(crate) fn can_fuse(p: &Tensor, g: &Tensor, dtype: DType, device: Device) -> bool {
    let placed = if device.is_host() {
        p.device().is_host() && g.device().is_host()
    } else {
        matches!(device, Device::Cuda(_)) && p.device() == device && g.device() == device
    };
    placed
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

/// Runs the fused kernel over `sets` (one group, all on the host or all on one CUDA device):
/// every parameter and state tensor is locked for writing, every gradient for reading, and each
/// written tensor's version is bumped.
pub(crate) fn run(sets: &[FusedSet<'_>]) -> Result<()> {
    let mut writes: Vec<&Tensor> = Vec::new();
    let mut reads: Vec<&Tensor> = Vec::with_capacity(sets.len());
    for s in sets {
        writes.push(s.param);
        writes.extend(s.state.iter().copied());
        reads.push(&s.grad);
    }
    if let Some(Device::Cuda(_)) = sets.first().map(|s| s.param.device()) {
        return run_cuda(sets, &writes, &reads);
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

/// [`run`] on a CUDA device: one upload and one launch for the group.
#[cfg(feature = "cuda")]
fn run_cuda(sets: &[FusedSet<'_>], writes: &[&Tensor], reads: &[&Tensor]) -> Result<()> {
    use crate::backend::cuda::optim::{Set, step};
    crate::tensor::kernels::with_device_buffers(writes, reads, |w, r| {
        let mut w = w.into_iter();
        let mut cuda_sets = Vec::with_capacity(sets.len());
        for (s, grad) in sets.iter().zip(r) {
            let param = w.next().expect("invariant: one buffer per written tensor");
            let state = (0..s.state.len())
                .map(|_| w.next().expect("invariant: one buffer per written tensor"))
                .collect();
            cuda_sets.push(Set {
                param,
                grad,
                state,
                numel: s.param.numel(),
                update: s.update,
            });
        }
        step(cuda_sets)
    })
}

/// Without the `cuda` feature no tensor is on a CUDA device: the error of any CUDA op.
#[cfg(not(feature = "cuda"))]
fn run_cuda(sets: &[FusedSet<'_>], _writes: &[&Tensor], _reads: &[&Tensor]) -> Result<()> {
    let device = sets.first().map_or(Device::Cpu, |s| s.param.device());
    Err(crate::backend::no_cuda(device))
}
