//! A raw device allocation, tagged by element type: what a [`DeviceBuffer`] owns and what the
//! block cache keeps. A leaf of the CUDA backend (it names no other module of it), so that the
//! cache, the per-device state and the buffers build on it without a circle.
//!
//! [`DeviceBuffer`]: super::DeviceBuffer

use cudarc::driver::{CudaSlice, CudaStream, DriverError};

use crate::DType;
use crate::sync::StdArc;

/// A device allocation, tagged by element type.
#[derive(Debug)]
pub(super) enum DeviceData {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

impl DeviceData {
    pub(super) fn dtype(&self) -> DType {
        match self {
            DeviceData::F32(_) => DType::F32,
            DeviceData::F64(_) => DType::F64,
        }
    }

    /// The capacity of the allocation, in elements.
    pub(super) fn len(&self) -> usize {
        match self {
            DeviceData::F32(s) => s.len(),
            DeviceData::F64(s) => s.len(),
        }
    }

    /// The size of the allocation in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.len() * self.dtype().size_of()
    }

    /// Queues zeroing the whole allocation on `stream`.
    pub(super) fn memset_zeros(
        &mut self,
        stream: &StdArc<CudaStream>,
    ) -> std::result::Result<(), DriverError> {
        match self {
            DeviceData::F32(s) => stream.memset_zeros(s),
            DeviceData::F64(s) => stream.memset_zeros(s),
        }
    }
}
