//! Device memory ([`DeviceBuffer`]) and the dtype map: code written once over the element type
//! ([`DeviceElement`]) and run at the [`DType`] a buffer has at run time, as candle's
//! `Map1`/`Map2` do for its CUDA storage.

use cudarc::cublas::result::CublasError;
use cudarc::cublas::result::{dgemm_strided_batched, sgemm_strided_batched};
use cudarc::cublas::sys::{cublasHandle_t, cublasOperation_t};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};

use std::mem::ManuallyDrop;

use cudarc::driver::DriverError;
use cudarc::driver::sys::CUresult;

use super::cache::rounded_len;
use super::data::DeviceData;
use super::device::CudaDevice;
use crate::sync::Ordering;
use crate::{DType, Element, Result};

/// The elements of one storage in device memory.
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    /// Taken out only by `Drop`, which hands it to the device's [`BlockCache`].
    pub(super) data: ManuallyDrop<DeviceData>,
    /// The device holding the memory (`cuda:<ordinal>`).
    pub(super) ordinal: usize,
    /// The number of elements (the allocation has at least one, as CUDA allocates no zero-size
    /// buffers, and is rounded up: see [`rounded_len`]).
    pub(super) len: usize,
}

/// An element type the kernels are compiled for, tied to the [`DeviceData`] variant that holds
/// it (candle's `WithDType`).
pub(super) trait DeviceElement: Element + DeviceRepr + ValidAsZeroBits {
    /// A device slice of this type as a [`DeviceData`].
    fn into_data(s: CudaSlice<Self>) -> DeviceData;

    /// The slice inside `d` if it holds this type.
    fn slice_mut(d: &mut DeviceData) -> Option<&mut CudaSlice<Self>>;

    /// cuBLAS's strided batched `C = op(A)·op(B)` (alpha 1, beta 0) for this type, on device
    /// addresses.
    ///
    /// # Safety
    ///
    /// As cuBLAS's `?gemmStridedBatched`: `handle` is live and used by this thread only, and the
    /// addresses hold elements of this type covering every element the sizes, leading dimensions
    /// and strides reach.
    unsafe fn gemm(g: &GemmCall) -> std::result::Result<(), CublasError>;
}

/// The arguments of one `?gemmStridedBatched` call (column-major, cuBLAS's names).
pub(super) struct GemmCall {
    pub(super) handle: cublasHandle_t,
    pub(super) transa: cublasOperation_t,
    pub(super) transb: cublasOperation_t,
    pub(super) m: i32,
    pub(super) n: i32,
    pub(super) k: i32,
    pub(super) a: u64,
    pub(super) lda: i32,
    pub(super) stride_a: i64,
    pub(super) b: u64,
    pub(super) ldb: i32,
    pub(super) stride_b: i64,
    pub(super) c: u64,
    pub(super) ldc: i32,
    pub(super) stride_c: i64,
    pub(super) batch: i32,
}

/// Implements [`DeviceElement`] for `$t`, held by `DeviceData::$variant`, with cuBLAS routine
/// `$gemm`.
macro_rules! device_element {
    ($t:ty, $variant:ident, $gemm:ident) => {
        impl DeviceElement for $t {
            fn into_data(s: CudaSlice<Self>) -> DeviceData {
                DeviceData::$variant(s)
            }

            fn slice_mut(d: &mut DeviceData) -> Option<&mut CudaSlice<Self>> {
                match d {
                    DeviceData::$variant(s) => Some(s),
                    #[allow(unreachable_patterns, reason = "the other element types")]
                    _ => None,
                }
            }

            unsafe fn gemm(g: &GemmCall) -> std::result::Result<(), CublasError> {
                // SAFETY: the caller's contract is this routine's.
                unsafe {
                    $gemm(
                        g.handle,
                        g.transa,
                        g.transb,
                        g.m,
                        g.n,
                        g.k,
                        &1.0,
                        g.a as *const $t,
                        g.lda,
                        g.stride_a,
                        g.b as *const $t,
                        g.ldb,
                        g.stride_b,
                        &0.0,
                        g.c as *mut $t,
                        g.ldc,
                        g.stride_c,
                        g.batch,
                    )
                }
            }
        }
    };
}

device_element!(f32, F32, sgemm_strided_batched);
device_element!(f64, F64, dgemm_strided_batched);

/// Code generic over the element type, run at a [`DType`] known only at run time (candle's
/// `Map1`): [`map_dtype`] matches on the dtype once and calls the monomorphised [`DTypeMap::f`].
pub(super) trait DTypeMap {
    /// What the code returns.
    type Output;
    /// The code, for element type `T`.
    fn f<T: DeviceElement>(self) -> Self::Output;
}

/// Runs `m` for the element type of `dtype`.
pub(super) fn map_dtype<M: DTypeMap>(dtype: DType, m: M) -> M::Output {
    match dtype {
        DType::F32 => m.f::<f32>(),
        DType::F64 => m.f::<f64>(),
        _ => unreachable!("invariant: {}", super::FLOATS_ONLY),
    }
}

/// Code generic over the element type of an existing device slice (candle's `Map1` applied to a
/// storage slice): [`DeviceData::map`] matches on the variant once.
pub(super) trait SliceMap {
    /// What the code returns.
    type Output;
    /// The code, for a slice of `T`.
    fn f<T: DeviceElement>(self, s: &CudaSlice<T>) -> Self::Output;
}

impl DeviceData {
    /// Runs `m` on the slice, whichever its element type.
    pub(super) fn map<M: SliceMap>(&self, m: M) -> M::Output {
        match self {
            DeviceData::F32(s) => m.f(s),
            DeviceData::F64(s) => m.f(s),
        }
    }
}

/// A new allocation of `cap` elements from the driver, for one element type.
struct Alloc<'a> {
    dev: &'a CudaDevice,
    cap: usize,
}

impl DTypeMap for Alloc<'_> {
    type Output = std::result::Result<DeviceData, DriverError>;

    fn f<T: DeviceElement>(self) -> Self::Output {
        // SAFETY: the memory is uninitialised; every caller of `DeviceBuffer::alloc` launches a
        // kernel (or cuBLAS call, or copy) on this device's stream that writes all `n` elements
        // before the buffer is read, and reads are issued on the same stream, so they are
        // ordered after that write (`zeros` queues a memset first).
        unsafe { self.dev.stream.alloc::<T>(self.cap) }.map(T::into_data)
    }
}

/// The device address of a slice's element 0.
struct Ptr<'a>(&'a CudaStream);

impl SliceMap for Ptr<'_> {
    type Output = u64;

    fn f<T: DeviceElement>(self, s: &CudaSlice<T>) -> u64 {
        s.device_ptr(self.0).0
    }
}

impl DeviceBuffer {
    pub(crate) fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A buffer of `len` elements in `data` (a block of this device, of at least `len`
    /// elements), counted in the device's [`memory_allocated`](crate::cuda::memory_allocated)
    /// until it drops.
    fn counted(dev: &CudaDevice, data: DeviceData, len: usize) -> DeviceBuffer {
        dev.allocated.fetch_add(data.bytes(), Ordering::Relaxed);
        DeviceBuffer {
            data: ManuallyDrop::new(data),
            ordinal: dev.ordinal,
            len,
        }
    }

    /// Uninitialised memory for `n` elements: the caller writes all of them before anyone reads.
    /// A cached block of the rounded size is taken when there is one; otherwise the driver is
    /// asked, and if it is out of memory the cache is given back to it and it is asked again.
    pub(super) fn alloc(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let cap = rounded_len(n.max(1), dtype.size_of());
        if let Some(data) = dev.cache.take(dtype, cap) {
            return Ok(DeviceBuffer::counted(dev, data, n));
        }
        let fresh = || map_dtype(dtype, Alloc { dev, cap });
        let data = match fresh() {
            Err(e) if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                drop(dev.cache.drain());
                dev.stream
                    .synchronize()
                    .map_err(|e| dev.error("allocate", e))?;
                fresh()
            }
            other => other,
        }
        .map_err(|e| dev.error("allocate", e))?;
        Ok(DeviceBuffer::counted(dev, data, n))
    }

    /// Zeroed memory for `n` elements.
    pub(super) fn zeros(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let mut buf = DeviceBuffer::alloc(dev, dtype, n)?;
        buf.data
            .memset_zeros(&dev.stream)
            .map_err(|e| dev.error("allocate", e))?;
        Ok(buf)
    }

    /// A copy of host values `v` on `dev`.
    pub(super) fn from_host<T: DeviceElement>(dev: &CudaDevice, v: &[T]) -> Result<DeviceBuffer> {
        let mut buf = DeviceBuffer::alloc(dev, T::DTYPE, v.len())?;
        let slice = T::slice_mut(&mut buf.data)
            .expect("invariant: the buffer was allocated with T's dtype");
        dev.stream
            .memcpy_htod(v, slice)
            .map_err(|e| dev.error("to", e))?;
        Ok(buf)
    }

    /// The device address of element 0, for a kernel argument.
    pub(super) fn ptr(&self, stream: &CudaStream) -> u64 {
        // The `SyncOnDrop` guards only record events for cudarc's multi-stream tracking; with
        // one stream per device every use is ordered by the stream itself.
        self.data.map(Ptr(stream))
    }

    pub(super) fn ptr_mut(&mut self, stream: &CudaStream) -> u64 {
        match &mut *self.data {
            DeviceData::F32(s) => s.device_ptr_mut(stream).0,
            DeviceData::F64(s) => s.device_ptr_mut(stream).0,
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: `data` is not used again: this is the buffer's last use of it.
        let data = unsafe { ManuallyDrop::take(&mut self.data) };
        // The device was set up when this buffer was allocated on it, so the lookup cannot fail.
        match super::device::device(self.ordinal) {
            Ok(dev) => {
                dev.allocated.fetch_sub(data.bytes(), Ordering::Relaxed);
                dev.cache.give(data);
            }
            Err(_) => drop(data),
        }
    }
}
