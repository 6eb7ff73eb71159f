//! The fused step's glue (PyTorch's `fused=True`): which groups it takes, and the call through
//! the tensor layer's door ([`Kernels::fused_step`]), which locks every tensor of the group and
//! runs the backend's one-pass step on the host or one launch on a device.

pub(crate) use crate::backend::{AdagradCoeffs, AdamCoeffs, RmsPropCoeffs, SgdCoeffs, Update};
pub(crate) use crate::tensor::kernels::StepTensors;
use crate::tensor::kernels::{self, Kernels};
use crate::{DType, Device, Result, Tensor};

/// Whether the fused step can update `p` from `g` in a group whose first parameter is of
/// `dtype` on `device`: contiguous tensors of `dtype`, on the host (both) or both on `device`,
/// the gradient in a storage of its own.
pub(crate) fn can_fuse(p: &Tensor, g: &Tensor, dtype: DType, device: Device) -> bool {
    // The fused kernels are written for f32 and f64: half parameters step op by op.
    matches!(dtype, DType::F32 | DType::F64)
        && placed(p, device)
        && placed(g, device)
        && p.dtype() == dtype
        && g.dtype() == dtype
        && p.is_contiguous()
        && g.is_contiguous()
        && !p.shares_storage(g)
}

/// Whether `t` can take part in a fused step of a group on `device`: host memory (the CPU and
/// the virtual devices) steps together, a device's memory on its own.
fn placed(t: &Tensor, device: Device) -> bool {
    if device.is_host() {
        t.device().is_host()
    } else {
        t.device() == device
    }
}

/// Whether no two of `params` share a storage (tied or aliased parameters go op by op: one
/// pass cannot write one buffer through two handles).
pub(crate) fn distinct_storages<'a>(mut params: impl Iterator<Item = &'a Tensor>) -> bool {
    let mut seen = std::collections::HashSet::new();
    params.all(|p| seen.insert(crate::sync::Arc::as_ptr(&p.0.storage)))
}

/// Runs the fused step over `sets` (one group, all on the host or all on one device): every
/// parameter and state tensor is locked for writing, every gradient for reading, and each
/// written tensor's version is bumped.
pub(crate) fn run(sets: &[StepTensors<'_>]) -> Result<()> {
    let Some(first) = sets.first() else {
        return Ok(());
    };
    let door: Kernels = kernels::of_tensor(first.param)?;
    door.fused_step(sets)
}
