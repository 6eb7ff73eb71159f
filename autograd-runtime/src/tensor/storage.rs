//! Shared tensor storage: the element buffer, its device, and the version counter that every
//! view (and `detach()`) of the same data shares.

use crate::sync::{Arc, Ordering};

use crate::backend::Buffer;
use crate::sync::{RwLock, atomic::AtomicU64};
use crate::{Device, Element};

/// One allocation shared by a tensor, its views and its detached aliases.
#[derive(Debug)]
pub(crate) struct Storage {
    /// The elements. Read-locked by kernels that read, write-locked by in-place ops.
    pub(crate) data: RwLock<Buffer>,
    /// Where the data lives.
    pub(crate) device: Device,
    /// Bumped by every in-place op on any alias; compared by `SavedTensor::unpack`. Its top bit
    /// ([`INFERENCE`]) marks a storage allocated in inference mode, whose counter is never
    /// bumped: every tensor over it is an inference tensor (PyTorch marks the tensor; here the
    /// tensors over one storage are exactly it and its views and aliases, which PyTorch makes
    /// inference tensors too). A bit of this word rather than a field of its own: a field
    /// would take the struct past 64 bytes, and every new tensor would then copy it into its
    /// allocation with a call to `memcpy` (measured: +5% instructions per recorded op).
    version: AtomicU64,
}

/// The bit of [`Storage::version`]'s word that marks an inference storage.
const INFERENCE: u64 = 1 << 63;

/// The version word a new storage starts with: 0, with [`INFERENCE`] in inference mode.
#[inline]
fn initial_version() -> u64 {
    if crate::grad_mode::state().inference() {
        INFERENCE
    } else {
        0
    }
}

impl Storage {
    /// Whether `storage` could serve a new small tensor: nothing else references it and its
    /// buffer is inline.
    #[inline]
    pub(crate) fn is_spare(storage: &mut Arc<Storage>) -> bool {
        Arc::get_mut(storage).is_some_and(|s| s.data.get_mut().is_inline())
    }

    /// Refills a spare storage ([`Storage::is_spare`]) for a new tensor: `data`, `device`,
    /// version 0.
    #[inline]
    pub(crate) fn refill(storage: &mut Arc<Storage>, data: Buffer, device: Device) {
        let s = Arc::get_mut(storage).expect("invariant: spare storages are unique");
        *s.data.get_mut() = data;
        s.device = device;
        *s.version.get_mut() = initial_version();
    }

    /// [`Storage::refill`] with host elements `values` (at most two): written over the buffer's
    /// own when it holds as many elements of their type, with no `Buffer` built or dropped.
    #[inline(always)] // into `spare::small`, the one caller: a call per scalar op otherwise
    pub(crate) fn refill_with<T: Element>(
        storage: &mut Arc<Storage>,
        values: &[T],
        device: Device,
    ) {
        let s = Arc::get_mut(storage).expect("invariant: spare storages are unique");
        let data = s.data.get_mut();
        match (data.as_mut_slice::<T>(), values) {
            // Element by element: `copy_from_slice` calls `memcpy` for its unknown length.
            (Some([a]), [x]) => *a = *x,
            (Some([a, b]), [x, y]) => (*a, *b) = (*x, *y),
            _ => *data = Buffer::host(values.iter().copied().collect()),
        }
        s.device = device;
        *s.version.get_mut() = initial_version();
    }

    pub(crate) fn new(data: Buffer, device: Device) -> Storage {
        Storage {
            data: RwLock::new(data),
            device,
            version: AtomicU64::new(initial_version()),
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
        self.version.load(Ordering::Relaxed) & !INFERENCE
    }

    /// Whether this storage was allocated in inference mode. Relaxed: the bit is written only
    /// before the storage is shared (made or refilled) and never changes afterwards.
    #[inline]
    pub(crate) fn is_inference(&self) -> bool {
        self.version.load(Ordering::Relaxed) & INFERENCE != 0
    }

    /// Records one in-place modification (none for an inference storage, which has no version
    /// counter). Relaxed: see [`Storage::version`].
    #[inline]
    pub(crate) fn bump_version(&self) {
        if !self.is_inference() {
            self.version.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Refuses to modify an inference storage outside inference mode (PyTorch's check where it
    /// bumps the version counter; here before anything is written).
    ///
    /// # Errors
    ///
    /// [`Error::InferenceTensorInplace`](crate::Error::InferenceTensorInplace).
    #[inline]
    pub(crate) fn check_writable(&self) -> crate::Result<()> {
        if self.is_inference() && !crate::is_inference_mode_enabled() {
            return Err(crate::Error::InferenceTensorInplace);
        }
        Ok(())
    }
}

impl Drop for Storage {
    /// Hands a large host buffer to the CPU backend's buffer cache for the next kernel output
    /// of its size (small and inline buffers are simply freed).
    fn drop(&mut self) {
        self.data.get_mut().recycle();
    }
}

#[cfg(test)]
mod tests {
    use crate::Tensor;

    #[test]
    fn a_recycled_storage_starts_over_at_version_zero_with_its_new_values() -> crate::Result<()> {
        for round in 0..100 {
            let a = Tensor::scalar(1.0f64);
            a.add_(&Tensor::scalar(1.0f64))?;
            assert_eq!(a.version(), 1);
            drop(a); // its storage becomes a spare of this thread
            let b = Tensor::scalar(f64::from(round));
            assert_eq!((b.version(), b.item::<f64>()?), (0, f64::from(round)));
        }
        Ok(())
    }

    #[test]
    fn a_reused_tensor_allocation_carries_no_autograd_state_over() -> crate::Result<()> {
        for round in 0..100 {
            let a = Tensor::scalar(1.0f64).requires_grad_(true)?;
            a.set_grad(Some(Tensor::scalar(3.0f64)))?;
            let y = a.mul_scalar(2.0)?; // has a grad_fn
            y.retain_grad()?;
            drop((a, y)); // their allocations become spares of this thread
            for b in [
                Tensor::scalar(f64::from(round)),
                Tensor::scalar(0.5f64).exp()?,
            ] {
                assert!(!b.requires_grad() && b.is_leaf());
                assert!(b.grad().is_none() && b.grad_fn().is_none());
                assert_eq!(b.version(), 0);
            }
        }
        Ok(())
    }

    #[test]
    fn a_scalar_result_in_a_reused_allocation_has_contiguous_strides() -> crate::Result<()> {
        let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2, 1])?;
        {
            // A tensor of the same shape that is not a view but has other strides: the detached
            // alias of a transposed [1, 2] tensor (shape [2, 1], strides [1, 2]), left as the only
            // user of its storage, retires as a spare.
            let base = Tensor::from_vec(vec![5.0f64, 6.0], &[1, 2])?;
            let alias = base.transpose(0, 1)?.detach();
            assert_eq!((alias.shape(), alias.strides()), (&[2, 1][..], &[1, 2][..]));
            drop(base);
            drop(alias);
        }
        let y = x.mul_scalar(2.0)?; // built in that spare
        assert_eq!((y.shape(), y.strides()), (&[2, 1][..], &[1, 1][..]));
        assert_eq!(y.to_vec::<f64>()?, vec![2.0, 4.0]);
        Ok(())
    }

    #[test]
    fn a_storage_another_tensor_still_uses_is_not_recycled() -> crate::Result<()> {
        let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
        let alias = a.detach(); // shares the storage
        drop(a);
        let fresh: Vec<Tensor> = (0..64)
            .map(|i| Tensor::scalar(i as f32).mul_scalar(3.0))
            .collect::<crate::Result<_>>()?;
        assert_eq!(alias.to_vec::<f32>()?, vec![1.0, 2.0]);
        assert!(fresh.iter().all(|t| !t.shares_storage(&alias)));
        Ok(())
    }
}
