//! The CUDA backend: [`Cuda`], the [`Backend`](super::Backend) over device memory, through
//! cudarc.
//!
//! * `device.rs`: probing the driver without panicking; per-device context, stream, cuBLAS
//!   handle and kernels, set up on first use. `libraries.rs`: when a library is missing, the
//!   names tried and where files of it were found instead.
//! * `kernels.cu` / `kernels.rs`: every element-wise, reduction and indexing kernel, compiled once
//!   by NVRTC. Kernels read tensors through their layouts, so views and broadcasts need no copy.
//! * `buffer.rs`: device memory ([`DeviceBuffer`]) and the dtype map that runs code written once
//!   over the element type at a buffer's run-time dtype (candle's `Map1`); `cache.rs`: freed
//!   blocks kept for reuse (PyTorch's caching allocator); `data.rs`: the raw allocation, tagged
//!   by element type, that both hold.
//! * `launch.rs`: kernel arguments and launches; `transfer.rs`: copies to and from the host;
//!   `index.rs`: the indexing kernels; `reduce.rs`: how sums are cut into blocks;
//!   `dispatch.rs`: the `Backend` impl.
//! * matmul runs on cuBLAS (`gemm_strided_batched`), with transposed operands passed as
//!   transpose flags and broadcast batches as batch stride 0.
//!
//! The modules form no circle: `data.rs`, `kernels.rs` and `libraries.rs` name no other module
//! here; the cache builds on the data, the device state on the cache, buffers on the device, and
//! launches on buffers; the op modules build on those and `dispatch.rs` on the op modules.
//!
//! Every op of a device is issued on that device's one stream: work on one device runs in issue
//! order whichever thread issues it, and a copy to the host waits for it. That is PyTorch's
//! default-stream behaviour, which is also what its engine's leaf-stream synchronisation reduces
//! to with one stream per device: when `backward()` returns, reading any gradient (which copies
//! it to the host) sees the finished value.

mod buffer;
mod cache;
mod data;
mod device;
mod dispatch;
mod generated;
mod index;
mod kernels;
mod launch;
mod libraries;
mod matmul;
pub(crate) mod optim;
mod reduce;
#[cfg(test)]
mod tests;
mod transfer;

pub(crate) use buffer::DeviceBuffer;
pub(crate) use device::{bind_worker, device, driver, empty_caches};
pub(crate) use dispatch::Cuda;
#[cfg(test)]
pub(crate) use kernels::compile_source;
pub(crate) use transfer::{full, upload};

/// Why a CUDA kernel never sees a dtype other than `f32` and `f64`: device buffers are only
/// made by an upload, a fill or a conversion, and each of them refuses the others.
const FLOATS_ONLY: &str =
    "CUDA buffers hold f32 or f64 (uploads, fills and conversions refuse other dtypes)";

/// The error for a dtype, or an op, the CUDA backend has no kernel for yet (integer, bool and
/// half tensors live on the host in this build).
fn refuse_dtype(op: &str, dtype: crate::DType) -> crate::Error {
    crate::Error::NotImplementedForDType {
        op: format!("{op} on CUDA (integer, bool and half tensors are host-only in this build)"),
        dtype,
    }
}
