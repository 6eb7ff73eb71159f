//! Shared tensor storage: the element buffer, its device, and the version counter that every
//! view (and `detach()`) of the same data shares.

use crate::sync::Ordering;

use crate::backend::cpu::buffer_cache;
use crate::sync::{atomic::AtomicU64, RwLock};
pub(crate) use crate::tensor::dtype::Buffer;
use crate::Device;

/// One allocation shared by a tensor, its views and its detached aliases.
#[derive(Debug)]
pub(crate) struct Storage {
    /// The elements. Read-locked by kernels that read, write-locked by in-place ops.
    pub(crate) data: RwLock<Buffer>,
    /// Where the data lives.
    pub(crate) device: Device,
    /// Bumped by every in-place op on any alias; compared by `SavedTensor::unpack`.
    version: AtomicU64,
}

impl Storage {
    pub(crate) fn new(data: Buffer, device: Device) -> Storage {
        Storage {
            data: RwLock::new(data),
            device,
            version: AtomicU64::new(0),
        }
    }

    /// The current version.
    ///
    /// Relaxed: the counter is a plain statistic of this storage. Every in-place op bumps it while
    /// holding the data's write lock, and a reader that must observe a bump (a saved tensor being
    /// unpacked on another thread) is ordered after that op by whatever handed it the tensor
    /// (the engine's ready queue mutex, a channel or a join), which is a happens-before edge.
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Records one in-place modification. Relaxed: see [`Storage::version`].
    #[inline]
    pub(crate) fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Storage {
    /// Hands a large host buffer to the CPU backend's buffer cache for the next kernel output
    /// of its size (small and inline buffers are simply freed).
    fn drop(&mut self) {
        let large = |cap: usize, elem: usize| cap * elem >= buffer_cache::MIN_BYTES;
        match self.data.get_mut() {
            Buffer::F32(v) if v.spilled() && large(v.capacity(), 4) => {
                buffer_cache::give(std::mem::take(v).into_vec());
            }
            Buffer::F64(v) if v.spilled() && large(v.capacity(), 8) => {
                buffer_cache::give(std::mem::take(v).into_vec());
            }
            _ => {}
        }
    }
}
