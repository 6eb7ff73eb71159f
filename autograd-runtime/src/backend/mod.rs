//! Raw kernels with no autograd: `cpu` over ndarray (also used by the host-backed virtual device).

pub(crate) mod cpu;
pub(crate) mod gather;
mod matmul;
