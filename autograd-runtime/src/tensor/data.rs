//! Reading a tensor's elements (`to_vec`, `to_array`, `item`), wrapping an ndarray result as a
//! tensor, and the dtype and device check of two operands.

use ndarray::ArrayD;

use super::Tensor;
use super::kernels;
use crate::backend::Buffer;
use crate::layout::view;
use crate::{DataElement, Device, Error, Result};

pub(crate) use super::kernels::ElementMap;

impl Tensor {
    /// Wraps a kernel result (any layout) as a new contiguous CPU tensor without copying when it
    /// is already in standard layout.
    pub(crate) fn from_ndarray<T: DataElement>(a: ArrayD<T>) -> Tensor {
        Tensor::from_ndarray_on(a, Device::Cpu)
    }

    pub(crate) fn from_ndarray_on<T: DataElement>(a: ArrayD<T>, device: Device) -> Tensor {
        let a = if a.is_standard_layout() {
            a
        } else {
            a.as_standard_layout().into_owned()
        };
        let shape: crate::layout::Dims = a.shape().into();
        let (mut v, offset) = a.into_raw_vec_and_offset();
        if let Some(off) = offset.filter(|&o| o != 0) {
            v.drain(..off);
        }
        v.truncate(shape.iter().product());
        Tensor::from_buffer(Buffer::host(v.into()), &shape, device)
    }

    pub(crate) fn check_same_dtype_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op,
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        if self.device() != other.device() {
            return Err(Error::DeviceMismatch {
                lhs: self.device(),
                rhs: other.device(),
            });
        }
        Ok(())
    }

    /// The elements in C order, as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDType`] if `T` is not the tensor's element type (no silent conversion).
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?.transpose(0, 1)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![1.0, 3.0, 2.0, 4.0]);
    /// assert!(t.to_vec::<f64>().is_err());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to_vec<T: DataElement>(&self) -> Result<Vec<T>> {
        if !self.device().is_host() {
            return kernels::host(self)?.to_vec();
        }
        kernels::read_host(self, |data: &[T], l| {
            if l.is_contiguous() {
                return data[l.offset..l.offset + l.numel()].to_vec();
            }
            view(data, l).iter().copied().collect()
        })
    }

    /// The elements as an owned ndarray array.
    ///
    /// # Errors
    ///
    /// [`Error::WrongDType`] if `T` is not the tensor's element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])?;
    /// assert_eq!(t.to_array::<f64>()?, ndarray::arr2(&[[1.0, 2.0]]).into_dyn());
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn to_array<T: DataElement>(&self) -> Result<ArrayD<T>> {
        if !self.device().is_host() {
            return kernels::host(self)?.to_array();
        }
        kernels::read_host(self, |data: &[T], l| view(data, l).to_owned())
    }

    /// The single element of a one-element tensor.
    ///
    /// # Errors
    ///
    /// [`Error::NotAScalar`] if the tensor has more than one element, [`Error::WrongDType`] if
    /// `T` is not its element type.
    ///
    /// # Examples
    ///
    /// ```
    /// use autograd_runtime::Tensor;
    /// assert_eq!(Tensor::from_vec(vec![4.0f32], &[1, 1])?.item::<f32>()?, 4.0);
    /// # Ok::<(), autograd_runtime::Error>(())
    /// ```
    pub fn item<T: DataElement>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::NotAScalar {
                numel: self.numel(),
            });
        }
        if !self.device().is_host() {
            return kernels::host(self)?.item();
        }
        kernels::read_host(self, |data: &[T], l| data[l.offset])
    }

    /// Copies `src`'s values into this tensor's elements (same shape and dtype), without
    /// recording or bumping the version: for engine-owned buffers only (CopySlices).
    pub(crate) fn copy_from(&self, src: &Tensor) -> Result<()> {
        kernels::copy_into(self, src)
    }
}
