//! Device memory ([`DeviceBuffer`]) and the dtype map: code written once over the element type
//! ([`DeviceElement`]) and run at the [`DType`] a buffer has at run time, as candle's
//! `Map1`/`Map2` do for its CUDA storage.

use cudarc::cublas::result::CublasError;
use cudarc::cublas::result::{dgemm_strided_batched, sgemm_strided_batched};
use cudarc::cublas::sys::{cublasHandle_t, cublasOperation_t};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits};

use std::sync::atomic::Ordering;

use super::device::CudaDevice;
use super::launch::Arg;
use crate::{DType, Element, Result};

/// The elements of one storage in device memory.
#[derive(Debug)]
pub struct DeviceBuffer {
    pub(super) data: DeviceData,
    /// The device holding the memory (`cuda:<ordinal>`).
    pub(super) ordinal: usize,
    /// The number of elements (the allocation has at least one, as CUDA allocates no zero-size
    /// buffers).
    pub(super) len: usize,
}

/// A device allocation, tagged by element type.
#[derive(Debug)]
pub(super) enum DeviceData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

/// An element type the kernels are compiled for, tied to the [`DeviceData`] variant that holds
/// it (candle's `WithDType`).
pub(super) trait DeviceElement: Element + DeviceRepr + ValidAsZeroBits {
    /// A device slice of this type as a [`DeviceData`].
    fn into_data(s: CudaSlice<Self>) -> DeviceData;

    /// `v` as a kernel argument of this type.
    fn scalar_arg(v: f64) -> Arg;

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
    ($t:ty, $variant:ident, $arg:ident, $gemm:ident) => {
        impl DeviceElement for $t {
            fn into_data(s: CudaSlice<Self>) -> DeviceData {
                DeviceData::$variant(s)
            }

            fn scalar_arg(v: f64) -> Arg {
                Arg::$arg(<$t as Element>::from_f64(v))
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

device_element!(f32, F32, F32, sgemm_strided_batched);
device_element!(f64, F64, F64, dgemm_strided_batched);

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

/// [`DeviceBuffer::alloc`] for one element type.
struct Alloc<'a> {
    dev: &'a CudaDevice,
    cap: usize,
    zeroed: bool,
}

impl DTypeMap for Alloc<'_> {
    type Output = std::result::Result<DeviceData, cudarc::driver::DriverError>;

    fn f<T: DeviceElement>(self) -> Self::Output {
        if self.zeroed {
            return self.dev.stream.alloc_zeros::<T>(self.cap).map(T::into_data);
        }
        // SAFETY: the memory is uninitialised; every caller of `DeviceBuffer::alloc` launches a
        // kernel (or cuBLAS call) on this device's stream that writes all `n` elements before the
        // buffer is read, and reads are issued on the same stream, so they are ordered after
        // that write.
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
        match self.data {
            DeviceData::F32(_) => DType::F32,
            DeviceData::F64(_) => DType::F64,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// A buffer of `len` elements around `data`, freshly allocated on `dev`, counted in the
    /// device's [`memory_allocated`](crate::cuda::memory_allocated) until it drops.
    pub(super) fn counted(dev: &CudaDevice, data: DeviceData, len: usize) -> DeviceBuffer {
        let buf = DeviceBuffer {
            data,
            ordinal: dev.ordinal,
            len,
        };
        dev.allocated.fetch_add(buf.bytes(), Ordering::Relaxed);
        buf
    }

    /// The bytes of the allocation (at least one element's).
    fn bytes(&self) -> usize {
        self.len.max(1) * self.dtype().size_of()
    }

    /// Uninitialised memory for `n` elements: the caller writes all of them before anyone reads.
    pub(super) fn alloc(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let cap = n.max(1);
        let data = map_dtype(
            dtype,
            Alloc {
                dev,
                cap,
                zeroed: false,
            },
        )
        .map_err(|e| dev.error("allocate", e))?;
        Ok(DeviceBuffer::counted(dev, data, n))
    }

    /// Zeroed memory for `n` elements.
    pub(super) fn zeros(dev: &CudaDevice, dtype: DType, n: usize) -> Result<DeviceBuffer> {
        let cap = n.max(1);
        let data = map_dtype(
            dtype,
            Alloc {
                dev,
                cap,
                zeroed: true,
            },
        )
        .map_err(|e| dev.error("allocate", e))?;
        Ok(DeviceBuffer::counted(dev, data, n))
    }

    /// The device address of element 0, for a kernel argument.
    pub(super) fn ptr(&self, stream: &CudaStream) -> u64 {
        // The `SyncOnDrop` guards only record events for cudarc's multi-stream tracking; with
        // one stream per device every use is ordered by the stream itself.
        self.data.map(Ptr(stream))
    }

    pub(super) fn ptr_mut(&mut self, stream: &CudaStream) -> u64 {
        match &mut self.data {
            DeviceData::F32(s) => s.device_ptr_mut(stream).0,
            DeviceData::F64(s) => s.device_ptr_mut(stream).0,
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // The device was set up when this buffer was allocated on it, so the lookup cannot fail.
        if let Ok(dev) = super::device::device(self.ordinal) {
            dev.allocated.fetch_sub(self.bytes(), Ordering::Relaxed);
        }
    }
}
